import { performance } from 'node:perf_hooks';
import type { LockHandle } from '../../../lib/lock-handle';
import { LockService } from '../../../lib/lock.service';
import { connectChaosBackend } from './backends';
import { abortedWithin, busyWait, trackValidity } from './held-lock-tools';
import { hrNow } from './hrtime';
import { RegisterClient } from './register';
import { leave, next, send, take } from './worker-ipc';
import type {
  ChaosWorkerConfig,
  FailedAcquire,
  IncrementSummary,
  IncrementTask,
  SectionRecord,
} from './worker-protocol';
import { zipfSampler } from './zipf';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The 'increments' task (see IncrementTask): read-modify-writes of the register under the lock, reporting each section. */
export async function runIncrementTask(config: ChaosWorkerConfig, task: IncrementTask): Promise<void> {
  const connection = connectChaosBackend(config.backend, config.address);
  const locks = new LockService(connection.backend, {
    keyPrefix: config.keyPrefix,
    operationTimeout: config.operationTimeout,
  });
  const register = await RegisterClient.connect(config.registerPort);
  const pick = task.keys.length === 1 ? () => task.keys[0] : zipfSampler(task.keys, task.zipf ?? 0);
  // A round trip, so "ready" means connected and every worker then starts contending together.
  await locks.isLocked(task.keys[0]);
  await send({ type: 'ready' });
  await next('go');

  const started = performance.now();
  const summary: IncrementSummary = { acknowledged: 0, attempts: 0, failures: {}, releaseFailures: 0 };
  let sections: SectionRecord[] = [];
  let failures: FailedAcquire[] = [];
  const flush = async () => {
    if (sections.length === 0 && failures.length === 0) return;
    const batch = { type: 'sections' as const, sections, failures };
    sections = [];
    failures = [];
    await send(batch);
  };
  const flusher = setInterval(() => void flush().catch(() => undefined), 200);
  let finishing = false;
  const finished = () => {
    if (take('finish')) finishing = true;
    return finishing || (task.durationMs !== undefined && performance.now() - started >= task.durationMs);
  };

  const contend = async (contender: number) => {
    let acknowledged = 0;
    while (!finished() && (task.target === 0 || acknowledged < task.target)) {
      const key = pick();
      summary.attempts += 1;
      const t0 = performance.now();
      let lock: LockHandle;
      try {
        lock = await locks.acquire(key, { ttl: task.ttl, waitTimeout: task.waitTimeout });
      } catch (error) {
        const failure = error as Error;
        summary.failures[failure.name] = (summary.failures[failure.name] ?? 0) + 1;
        failures.push({
          worker: config.id,
          contender,
          at: hrNow().toString(),
          name: failure.name,
          message: failure.message,
        });
        await sleep(task.retryDelayMs ?? 50);
        continue;
      }
      const acquiredAt = hrNow();
      const waitMs = performance.now() - t0;
      const validity = trackValidity(lock);
      let lostAt: bigint | undefined;
      lock.signal.addEventListener('abort', () => (lostAt = hrNow()), { once: true });
      const record: SectionRecord = {
        worker: config.id,
        contender,
        key,
        token: lock.fencingToken.toString(),
        acquiredAt: acquiredAt.toString(),
        validUntil: '',
        releasedAt: '',
        waitMs,
        read: 'error',
        write: 'skipped',
      };
      const read = await register.read(key, lock.fencingToken).catch(() => undefined);
      if (read) record.read = read.ok ? 'ok' : 'stale';
      if (read?.ok) {
        const fault = take('arm');
        if (fault) {
          record.fault = fault.fault.kind;
          record.faultStart = hrNow().toString();
          if (fault.fault.kind === 'stop') {
            await send({ type: 'stopping', at: record.faultStart });
            // A SIGSTOP between the read and the write: the worst moment for a holder to freeze.
            process.kill(process.pid, 'SIGSTOP');
          } else {
            busyWait(fault.fault.ms);
          }
          record.faultEnd = hrNow().toString();
        } else if (task.sectionMs > 0) {
          await sleep(task.sectionMs);
        }
        // A zombie does not check lock.signal before writing: only the register's fencing can stop it.
        record.writeAt = hrNow().toString();
        const wrote = await register
          .write(key, lock.fencingToken, (read.value ?? 0) + 1, config.id)
          .catch(() => undefined);
        record.write = wrote === undefined ? 'error' : wrote.ok ? 'ok' : 'stale';
        if (wrote?.ok) {
          acknowledged += 1;
          summary.acknowledged += 1;
        }
        // After a fault, give the watchdog its chance to notice, so the record says whether and when it did.
        if (fault) await abortedWithin(lock.signal, 5_000);
      }
      record.releasedAt = hrNow().toString();
      record.validUntil = validity.current().toString();
      if (lostAt !== undefined) record.lostAt = lostAt.toString();
      validity.stop();
      sections.push(record);
      await lock.release().catch(() => (summary.releaseFailures += 1));
    }
  };

  await Promise.all(Array.from({ length: task.contenders }, (_, contender) => contend(contender)));
  clearInterval(flusher);
  await flush();
  await locks.close();
  await connection.close();
  register.close();
  await send({ type: 'done', summary });
  leave();
}
