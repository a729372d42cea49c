import { performance } from 'node:perf_hooks';
import type { LockHandle } from '../../../lib/lock-handle';
import { LockService } from '../../../lib/lock.service';
import { connectChaosBackend } from './backends';
import { trackValidity } from './held-lock-tools';
import { hrNow } from './hrtime';
import { RegisterClient } from './register';
import { leave, next, send } from './worker-ipc';
import type { ChaosWorkerConfig, HoldTask } from './worker-protocol';

/** The 'hold' task (see HoldTask): one acquisition, reported, then whatever the parent commands. */
export async function runHoldTask(config: ChaosWorkerConfig, task: HoldTask): Promise<void> {
  const connection = connectChaosBackend(config.backend, config.address);
  const locks = new LockService(connection.backend, {
    keyPrefix: config.keyPrefix,
    operationTimeout: config.operationTimeout,
  });
  const register = await RegisterClient.connect(config.registerPort);
  await send({ type: 'ready' });
  await next('go');
  const t0 = performance.now();
  let lock: LockHandle;
  try {
    lock = await locks.acquire(task.key, { ttl: task.ttl, waitTimeout: task.waitTimeout });
  } catch (error) {
    const failure = error as Error;
    await send({
      type: 'acquire-failed',
      name: failure.name,
      message: failure.message,
      at: hrNow().toString(),
      waitMs: performance.now() - t0,
    });
    await next('exit');
    return shutDown();
  }
  const acquiredAt = hrNow();
  const validity = trackValidity(lock);
  lock.signal.addEventListener(
    'abort',
    () => {
      const reason = (lock.signal.reason as Error | undefined)?.message ?? String(lock.signal.reason);
      void send({ type: 'lost', at: hrNow().toString(), validUntil: validity.current().toString(), reason }).catch(
        () => undefined,
      );
    },
    { once: true },
  );
  let value = 0;
  if (task.readOnGrant) {
    const read = await register.read(task.key, lock.fencingToken);
    value = read.ok ? (read.value ?? 0) : -1;
  }
  await send({
    type: 'held',
    token: lock.fencingToken.toString(),
    acquiredAt: acquiredAt.toString(),
    validUntil: validity.current().toString(),
    waitMs: performance.now() - t0,
    ...(task.readOnGrant && { read: value }),
  });

  for (;;) {
    const command = await next('write', 'release', 'exit');
    if (command.type === 'write') {
      const at = hrNow();
      const wrote = await register.write(task.key, lock.fencingToken, value + 1, config.id);
      await send({ type: 'wrote', ok: wrote.ok, at: at.toString(), validUntil: validity.current().toString() });
    } else if (command.type === 'release') {
      const at = hrNow();
      const error = await lock.release().then(
        () => undefined,
        (failure: Error) => `${failure.name}: ${failure.message}`,
      );
      await send({ type: 'released', at: at.toString(), ...(error && { error }) });
    } else {
      break;
    }
  }
  validity.stop();
  return shutDown();

  async function shutDown(): Promise<void> {
    await locks.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
    register.close();
    await send({ type: 'done' });
    leave();
  }
}
