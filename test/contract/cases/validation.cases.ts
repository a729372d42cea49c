import { InvalidLockKeyError } from '../../../lib/errors';
import { LockOptions } from '../../../lib/lock-options';
import { LockService } from '../../../lib/lock.service';
import { RecordingBackend } from '../../support/recording-backend';
import type { ContractContext } from '../contract-context';

const BAD_KEYS: [string, unknown][] = [
  ['empty', ''],
  ['1025 ASCII bytes', 'k'.repeat(1025)],
  ['1026 UTF-8 bytes in 513 characters', 'é'.repeat(513)],
  ['a lone surrogate', 'ab\uD800'],
  ['a number', 42],
  ['null', null],
];

const BAD_OPTIONS: [string, LockOptions, string[]][] = [
  ['ttl 0', { ttl: 0 }, ['ttl', '0']],
  ['ttl -1', { ttl: -1 }, ['ttl', '-1']],
  ['ttl NaN', { ttl: NaN }, ['ttl', 'NaN']],
  ['ttl Infinity', { ttl: Infinity }, ['ttl', 'Infinity']],
  // From configuration, as text: quoted and typed, so the message does not read as if 100 were refused.
  ['ttl "100" (a string)', { ttl: '100' } as unknown as LockOptions, ['ttl "100" (string)']],
  ['waitTimeout "5000" (a string)', { waitTimeout: '5000' } as unknown as LockOptions, ['waitTimeout "5000" (string)']],
  ['waitTimeout -1', { waitTimeout: -1 }, ['waitTimeout', '-1']],
  ['waitTimeout NaN', { waitTimeout: NaN }, ['waitTimeout', 'NaN']],
  ['renewInterval >= ttl', { ttl: 1_000, renewInterval: 1_000 }, ['renewInterval', '1000']],
  ['an unknown option', { ttl: 1_000, timeout: 500 } as LockOptions, ['timeout']],
  // Not read as "unset": a null from a config file would otherwise silently become the default.
  ['ttl null', { ttl: null } as unknown as LockOptions, ['ttl null']],
  ['waitTimeout null', { waitTimeout: null } as unknown as LockOptions, ['waitTimeout null']],
];

type Operation = (locks: LockService, key: string, options?: LockOptions) => Promise<unknown>;

const OPERATIONS: [string, Operation][] = [
  ['acquire', (locks, key, options) => locks.acquire(key, options)],
  ['tryAcquire', (locks, key, options) => locks.tryAcquire(key, options)],
  ['run', (locks, key, options) => locks.run(key, () => Promise.reject(new Error('fn must not run')), options)],
];

export function validationCases(ctx: ContractContext): void {
  const target = ctx.factory.hasServer ? 'a backend pointing at a dead port' : 'the backend';

  /** A service whose every backend call is counted; for server backends nothing even listens there. */
  async function guardedService(): Promise<{ locks: LockService; recording: RecordingBackend }> {
    const base = ctx.factory.unreachable ? await ctx.factory.unreachable() : ctx.connect();
    const recording = new RecordingBackend(base.backend);
    const locks = new LockService(recording, { keyPrefix: ctx.ns, operationTimeout: 1_000 });
    ctx.defer(() => base.close());
    ctx.defer(() => locks.close());
    return { locks, recording };
  }

  it(`rejects bad keys with InvalidLockKeyError naming the key, before any call to ${target}`, async () => {
    const { locks, recording } = await guardedService();
    for (const [label, key] of BAD_KEYS) {
      for (const [operation, call] of [
        ...OPERATIONS,
        ['isLocked', (service: LockService, k: string) => service.isLocked(k)] as const,
      ]) {
        const error = await call(locks, key as string, { ttl: 1_000 }).then(
          () => new Error(`${operation} accepted a key that is ${label}`),
          (rejection: unknown) => rejection,
        );
        expect({ label, operation, error }).toEqual({ label, operation, error: expect.any(InvalidLockKeyError) });
        expect((error as Error).message).toContain(describeKey(key));
      }
    }
    expect(recording.serverCalls).toBe(0);
  });

  it(`rejects bad options with a TypeError naming the option and value, before any call to ${target}`, async () => {
    const { locks, recording } = await guardedService();
    for (const [label, options, mentions] of BAD_OPTIONS) {
      for (const [operation, call] of OPERATIONS) {
        const error = await call(locks, 'valid-key', options).then(
          () => new Error(`${operation} accepted ${label}`),
          (rejection: unknown) => rejection,
        );
        expect({ label, operation, error }).toEqual({ label, operation, error: expect.any(TypeError) });
        for (const mention of mentions) expect((error as Error).message).toContain(mention);
      }
    }
    expect(recording.serverCalls).toBe(0);
  });

  it('rejects a bad keyPrefix or bad service defaults when the service is created', () => {
    const backend = new RecordingBackend(ctx.connect().backend);
    for (const keyPrefix of ['', 'has space', '{tag}', 'x'.repeat(129), 'has/slash', '/lead', 'trail/']) {
      expect(() => new LockService(backend, { keyPrefix })).toThrow(TypeError);
    }
    expect(() => new LockService(backend, { keyPrefix: ctx.ns, defaults: { ttl: 0 } })).toThrow(/ttl/);
    expect(() => new LockService(backend, { keyPrefix: ctx.ns, defaults: { wait: 1 } as LockOptions })).toThrow(/wait/);
    expect(() => new LockService(backend, { keyPrefix: ctx.ns, operationTimeout: 0 })).toThrow(/operationTimeout/);
    expect(backend.serverCalls).toBe(0);
  });

  it('accepts keys of exactly 1024 UTF-8 bytes and treats composed and decomposed spellings as one key', async () => {
    const locks = ctx.service();
    const other = ctx.service();
    for (const key of ['k'.repeat(1024), 'é'.repeat(512), `${'€'.repeat(341)}k`]) {
      expect(Buffer.byteLength(key)).toBe(1024);
      const lock = await locks.acquire(key, { ttl: 10_000 });
      expect(await other.isLocked(key)).toBe(true);
      expect(await other.tryAcquire(key, { ttl: 10_000 })).toBeNull();
      await lock.release();
      expect(await other.isLocked(key)).toBe(false);
    }
    const composed = await locks.acquire('caf\u00e9', { ttl: 10_000 });
    expect(await other.tryAcquire('cafe\u0301', { ttl: 10_000 })).toBeNull();
    await composed.release();
  });
}

/** How InvalidLockKeyError shows the key: JSON for strings (first characters), the type otherwise. */
function describeKey(key: unknown): string {
  if (typeof key !== 'string') return key === null ? 'null' : typeof key;
  return JSON.stringify(key.slice(0, 20)).slice(0, -1);
}
