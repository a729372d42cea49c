import { Logger } from '@nestjs/common';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { runInLockScope } from '../../lib/context/lock-context';
import { LockTimeoutError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { attachLockLogger } from '../../lib/observability/lock-logger';
import { FlakyBackend } from './support/flaky-backend';
import { RecordingLogger } from './support/recording-logger';

describe('attachLockLogger', () => {
  it('logs grants, renewals, timeouts and releases at debug/verbose, in the DistributedLock context', async () => {
    const logger = new RecordingLogger();
    const locks = new LockService(new MemoryLockBackend(), { keyPrefix: 'logs', instanceId: 'api-1' });
    attachLockLogger(locks, logger);
    const tokens: string[] = [];
    await runInLockScope(async () => {
      const lock = await locks.acquire('file:42', { ttl: 1_500 });
      tokens.push(lock.token);
      await firstValueFrom(lock.renewals$);
      await expect(locks.acquire('file:42', { waitTimeout: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
      await lock.release();
    }, 'req-7');

    // On a slow machine a renewal may land while the wait runs: either may be logged first.
    const linesOf = (prefix: string) => logger.lines.filter((line) => line.message.startsWith(prefix));
    const [acquired, renewed, timeout, released] = ['Acquired', 'Renewed', 'Gave up', 'Released'].map(linesOf);
    expect(logger.lines[0]).toBe(acquired[0]);
    expect(logger.lines[1]).toBe(renewed[0]);
    expect(logger.lines.at(-1)).toBe(released[0]);
    expect([acquired.length, timeout.length, released.length]).toEqual([1, 1, 1]);
    expect(renewed.length + 3).toBe(logger.lines.length);
    expect([acquired[0].level, renewed[0].level, timeout[0].level, released[0].level]).toEqual([
      'debug',
      'verbose',
      'debug',
      'debug',
    ]);
    for (const line of logger.lines) {
      expect(line.context).toBe('DistributedLock');
      expect(line.message).toContain('"file:42"');
      expect(line.message).toMatch(/holder [^,]+\/\d+\/api-1/);
      expect(line.message).toContain('request req-7');
      // The owner token lets anyone release the lock: it never reaches a log line.
      expect(line.message).not.toContain(tokens[0]);
    }
    expect(acquired[0].message).toMatch(
      /^Acquired "file:42" after waiting \d+ ms \(family file, mode exclusive, fencing token 1,/,
    );
    expect(renewed[0].message).toMatch(/^Renewed "file:42" \(#1\), valid until \d{4}-\d\d-\d\dT/);
    expect(timeout[0].message).toMatch(/^Gave up waiting for "file:42" after \d+ ms/);
    expect(released[0].message).toMatch(/^Released "file:42" after holding it \d+ ms \(.*fencing token 1,/);
    await locks.close();
  });

  it('warns when a lock is at risk and logs an error when it is lost, without credentials from the driver', async () => {
    const logger = new RecordingLogger();
    const backend = new FlakyBackend();
    const locks = new LockService(backend);
    attachLockLogger(locks, logger);
    // A ttl long enough that the first failed renewal (at ttl / 3) still leaves validity on a loaded machine: with
    // 300 ms, a stall past the ttl skipped "at risk" and went straight to "lost" (seen once in CI).
    const lock = await locks.acquire('report:1', { ttl: 3_000 });
    backend.extendError = new Error('connect ETIMEDOUT redis://app:s3cret@10.0.0.7:6380');
    await expect(lastValueFrom(lock.renewals$)).rejects.toThrow(/lost/);

    const warnings = logger.lines.filter((line) => line.level === 'warn');
    const errors = logger.lines.filter((line) => line.level === 'error');
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings[0].message).toMatch(
      /^Lock "report:1" is at risk: a renewal failed \(.*ETIMEDOUT redis:\/\/\*\*\*@10\.0\.0\.7:6380.*\), \d+ ms of validity left/,
    );
    expect(errors).toHaveLength(1);
    expect(errors[0].message).toMatch(
      /^Lost lock "report:1" after holding it \d+ ms: .*Work guarded by it is no longer exclusive/,
    );
    expect(errors[0].context).toBe('DistributedLock');
    const levels = logger.lines.map((line) => line.level);
    expect(levels.indexOf('warn')).toBeLessThan(levels.indexOf('error'));
    expect(JSON.stringify(logger.lines)).not.toContain('s3cret');
    expect(JSON.stringify(logger.lines)).not.toContain(lock.token);
    await locks.close();
  });

  it("goes through Nest's Logger by default, so the app's logger and log levels apply", async () => {
    const appLogger = new RecordingLogger();
    Logger.overrideLogger(appLogger);
    try {
      const locks = new LockService(new MemoryLockBackend());
      attachLockLogger(locks);
      await (await locks.acquire('file:1')).release();
      expect(appLogger.lines.map((line) => [line.level, line.context])).toEqual([
        ['debug', 'DistributedLock'],
        ['debug', 'DistributedLock'],
      ]);
      await locks.close();
    } finally {
      Logger.overrideLogger(false);
    }
  });

  it('stops when detached', async () => {
    const logger = new RecordingLogger();
    const locks = new LockService(new MemoryLockBackend());
    const detach = attachLockLogger(locks, logger);
    detach();
    await (await locks.acquire('file:1')).release();
    expect(logger.lines).toHaveLength(0);
    await locks.close();
  });
});
