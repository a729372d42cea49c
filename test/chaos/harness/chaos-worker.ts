/**
 * A lock client in its own OS process, forked by workers.ts (with ts-register.js, outside Jest), so the parent
 * can SIGSTOP, SIGKILL and SIGCONT it. Reads its ChaosWorkerConfig from the environment and reports over IPC.
 */
import { performance } from 'node:perf_hooks';
import type { LockHandle } from '../../../lib/lock-handle';
import { LockService } from '../../../lib/lock.service';
import { connectChaosBackend } from './backends';
import { RegisterClient } from './register';
import { hrNow, hrValidUntil } from './hrtime';
import {
  CHAOS_WORKER_CONFIG_ENV,
  ChaosParentMessage,
  ChaosWorkerConfig,
  ChaosWorkerMessage,
  FailedAcquire,
  HoldTask,
  IncrementSummary,
  IncrementTask,
  LeakTask,
  SectionRecord,
} from './worker-protocol';
import { zipfSampler } from './zipf';
import { runLeakCycles } from './leak-cycles';

function send(message: ChaosWorkerMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) return reject(new Error('chaos-worker must be started with child_process.fork'));
    process.send(message, (error: Error | null) => (error ? reject(error) : resolve()));
  });
}

const inbox: ChaosParentMessage[] = [];
const inboxListeners = new Set<() => void>();
process.on('message', (message: ChaosParentMessage) => {
  inbox.push(message);
  for (const listener of [...inboxListeners]) listener();
});

/** The next parent message of one of `types` (earlier ones stay queued for their own readers). */
function next<T extends ChaosParentMessage['type']>(...types: T[]): Promise<Extract<ChaosParentMessage, { type: T }>> {
  return new Promise((resolve) => {
    const check = () => {
      const index = inbox.findIndex((message) => (types as string[]).includes(message.type));
      if (index < 0) return;
      inboxListeners.delete(check);
      resolve(inbox.splice(index, 1)[0] as Extract<ChaosParentMessage, { type: T }>);
    };
    inboxListeners.add(check);
    check();
  });
}

function takeMessage(type: ChaosParentMessage['type']): ChaosParentMessage | undefined {
  const index = inbox.findIndex((message) => message.type === type);
  return index < 0 ? undefined : inbox.splice(index, 1)[0];
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves when `signal` aborts, or after `ms`. */
function abortedWithin(signal: AbortSignal, ms: number): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Keeps the end of validity the library promises for `lock` (it moves with each renewal). */
function trackValidity(lock: LockHandle): { current(): bigint; stop(): void } {
  let validUntil = hrValidUntil(lock.expiresAt);
  const subscription = lock.renewals$.subscribe({
    next: (renewal) => {
      if (renewal.type === 'renewed') validUntil = hrValidUntil(renewal.expiresAt);
    },
    error: () => undefined,
  });
  return { current: () => validUntil, stop: () => subscription.unsubscribe() };
}

function busyWait(ms: number): void {
  const end = hrNow() + BigInt(Math.round(ms * 1e6));
  while (hrNow() < end) {
    // The event loop is blocked on purpose: no timer, no renewal, no I/O callback runs meanwhile.
  }
}

async function increments(config: ChaosWorkerConfig, task: IncrementTask): Promise<void> {
  const connection = connectChaosBackend(config.backend, config.address);
  const locks = new LockService(connection.backend, { keyPrefix: config.keyPrefix, operationTimeout: config.operationTimeout });
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
    if (takeMessage('finish')) finishing = true;
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
        failures.push({ worker: config.id, contender, at: hrNow().toString(), name: failure.name, message: failure.message });
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
        const fault = takeMessage('arm') as Extract<ChaosParentMessage, { type: 'arm' }> | undefined;
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
        const wrote = await register.write(key, lock.fencingToken, (read.value ?? 0) + 1, config.id).catch(() => undefined);
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

async function hold(config: ChaosWorkerConfig, task: HoldTask): Promise<void> {
  const connection = connectChaosBackend(config.backend, config.address);
  const locks = new LockService(connection.backend, { keyPrefix: config.keyPrefix, operationTimeout: config.operationTimeout });
  const register = await RegisterClient.connect(config.registerPort);
  await send({ type: 'ready' });
  await next('go');
  const t0 = performance.now();
  let lock: LockHandle;
  try {
    lock = await locks.acquire(task.key, { ttl: task.ttl, waitTimeout: task.waitTimeout });
  } catch (error) {
    const failure = error as Error;
    await send({ type: 'acquire-failed', name: failure.name, message: failure.message, at: hrNow().toString(), waitMs: performance.now() - t0 });
    await next('exit');
    return shutDown();
  }
  const acquiredAt = hrNow();
  const validity = trackValidity(lock);
  lock.signal.addEventListener(
    'abort',
    () => {
      const reason = (lock.signal.reason as Error | undefined)?.message ?? String(lock.signal.reason);
      void send({ type: 'lost', at: hrNow().toString(), validUntil: validity.current().toString(), reason }).catch(() => undefined);
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

async function leak(config: ChaosWorkerConfig, task: LeakTask): Promise<void> {
  await send({ type: 'ready' });
  await next('go');
  // Our own keep-alive timer must not count as something the library left open.
  clearInterval(keepAlive);
  const report = await runLeakCycles(config, task);
  await send({ type: 'done', leak: report });
  leave();
}

/**
 * The library's timers are unref'd and a child's IPC channel only holds the process open while it has
 * 'message' listeners; this keeps the worker alive while it works.
 */
const keepAlive = setInterval(() => undefined, 1_000);
let leaving = false;

// The parent died (even by SIGKILL): do not linger as an orphan.
process.on('disconnect', () => {
  if (!leaving) process.exit(2);
});

function leave(): void {
  leaving = true;
  clearInterval(keepAlive);
  process.removeAllListeners('message');
  process.disconnect();
}

async function main(): Promise<void> {
  const raw = process.env[CHAOS_WORKER_CONFIG_ENV];
  if (!raw) throw new Error(`${CHAOS_WORKER_CONFIG_ENV} is not set`);
  const config = JSON.parse(raw) as ChaosWorkerConfig;
  switch (config.task.type) {
    case 'increments':
      return increments(config, config.task);
    case 'hold':
      return hold(config, config.task);
    case 'leak':
      return leak(config, config.task);
  }
}

main().catch(async (error: unknown) => {
  const failure = error instanceof Error ? error : new Error(String(error));
  await send({ type: 'error', name: failure.name, message: failure.message, stack: failure.stack }).catch(() => undefined);
  process.exit(1);
});
