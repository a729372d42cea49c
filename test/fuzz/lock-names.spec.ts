import fc from 'fast-check';
import { InvalidLockKeyError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { MAX_KEY_BYTES } from '../../lib/utils/validate';
import { BACKEND_FACTORIES, BackendUnderTest, uniqueNamespace } from '../support/backends';
import { RecordingBackend } from '../support/recording-backend';

/**
 * Property-based tests over lock names: every name is either accepted and isolated (holding it blocks exactly
 * the names equal to it after NFC normalisation, nothing else), or rejected before any server call with an
 * InvalidLockKeyError. Run against real servers, with bounded runs so the suite stays fast.
 */

/** Pieces that break naive key building: separators, wildcards, hash tags, escapes, control and odd Unicode. */
const TRICKY = [
  '\u0000',
  '\r',
  '\n',
  '\r\n',
  '\t',
  '\u007f',
  '\u0085',
  '\u2028',
  '*',
  '?',
  '[',
  ']',
  '{',
  '}',
  '{}',
  '/',
  '//',
  ':',
  '%',
  '%2F',
  '%7B',
  '%25',
  '\\',
  '"',
  "'",
  ' ',
  '.',
  '..',
  '\u00e9',
  'e\u0301',
  '\u212b',
  '\u00c5',
  'A\u030a',
  '\ufb01',
  '😀',
  '\ud83d',
  '\ude00',
  '\ud800x',
  'x\udfff',
  'user',
  'user/1',
  '1',
  'a',
  '-',
];

const piece = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...TRICKY) },
  { weight: 1, arbitrary: fc.string({ maxLength: 4, unit: 'grapheme' }) },
);

/** Names around the length cap (in UTF-8 bytes): exactly at it, and one byte over, in 1-, 2- and 3-byte characters. */
const AT_CAP = ['k'.repeat(MAX_KEY_BYTES), 'é'.repeat(MAX_KEY_BYTES / 2), `${'€'.repeat(341)}k`];
const OVER_CAP = [
  'k'.repeat(MAX_KEY_BYTES + 1),
  'é'.repeat(MAX_KEY_BYTES / 2 + 1),
  `${'€'.repeat(341)}kk`,
  `${'e\u0301'.repeat(342)}k`,
];

const lockName = fc.oneof(
  { weight: 8, arbitrary: fc.array(piece, { maxLength: 6 }).map((parts) => parts.join('')) },
  { weight: 1, arbitrary: fc.constantFrom('', ...AT_CAP, ...OVER_CAP) },
);

/** How a second name is derived from a first, to hit prefixes, separators and hash tags on purpose. */
const DERIVATIONS: [string, (name: string, extra: string) => string][] = [
  ['name/extra', (name, extra) => `${name}/${extra}`],
  ['name/', (name) => `${name}/`],
  ['name + extra', (name, extra) => `${name}${extra || '0'}`],
  ['name:extra', (name, extra) => `${name}:${extra}`],
  ['{name}', (name) => `{${name}}`],
  ['name*', (name) => `${name}*`],
  ['prefix of name', (name) => name.slice(0, -1)],
  ['NFD of name', (name) => name.normalize('NFD')],
  ['NFKC of name', (name) => name.normalize('NFKC')],
  ['unrelated', (_name, extra) => extra],
];

/** The rule, restated independently of lib/utils/validate.ts. */
function acceptable(name: string): boolean {
  return name.length > 0 && name.isWellFormed() && Buffer.byteLength(name.normalize('NFC'), 'utf8') <= MAX_KEY_BYTES;
}

const sameLock = (a: string, b: string) => a.normalize('NFC') === b.normalize('NFC');

const RUNS: Record<'memory' | 'redis' | 'etcd', number> = { memory: 200, redis: 60, etcd: 40 };
const TTL = 10_000;

describe.each(['memory', 'redis', 'etcd'] as const)('lock names on %s (property-based)', (kind) => {
  const factory = BACKEND_FACTORIES[kind];
  const connections: BackendUnderTest[] = [];
  const services: LockService[] = [];
  let ns: string;

  beforeEach(() => {
    ns = uniqueNamespace(`fuzz-${kind}`);
  });

  afterEach(async () => {
    await Promise.allSettled(services.splice(0).map((locks) => locks.close()));
    await Promise.allSettled(connections.splice(0).map((connection) => connection.close()));
  });

  /** Two services that see the same locks (for memory, two views of one store), each counting server calls. */
  async function pair(): Promise<[LockService, LockService, RecordingBackend]> {
    const world = factory.world();
    connections.push({ backend: undefined as never, close: () => world.close() });
    const a = new RecordingBackend(world.connect().backend);
    const b = new RecordingBackend(world.connect().backend);
    const made: [LockService, LockService] = [
      new LockService(a, { keyPrefix: ns }),
      new LockService(b, { keyPrefix: ns }),
    ];
    services.push(...made);
    return [...made, a];
  }

  it('accepts a name and locks exactly its NFC form, or rejects it before any server call', async () => {
    const [owner, other, recording] = await pair();
    await fc.assert(
      fc.asyncProperty(lockName, async (name) => {
        if (!acceptable(name)) {
          const calls = recording.serverCalls;
          for (const attempt of [
            () => owner.tryAcquire(name, { ttl: TTL }),
            () => owner.acquire(name, { ttl: TTL, waitTimeout: 0 }),
            () => owner.isLocked(name),
          ]) {
            const error = await attempt().then(
              () => undefined,
              (rejection: unknown) => rejection,
            );
            expect(error).toBeInstanceOf(InvalidLockKeyError);
            expect((error as Error).message).toMatch(/^Invalid lock key .+: .{20,}/s);
          }
          expect(recording.serverCalls).toBe(calls);
          return;
        }
        const lock = await owner.tryAcquire(name, { ttl: TTL });
        expect(lock).not.toBeNull();
        try {
          expect(await other.isLocked(name)).toBe(true);
          expect(await other.tryAcquire(name, { ttl: TTL })).toBeNull();
          expect(await other.tryAcquire(name.normalize('NFD'), { ttl: TTL })).toBeNull();
        } finally {
          await lock!.release();
        }
        expect(await other.isLocked(name)).toBe(false);
      }),
      { numRuns: RUNS[kind] },
    );
  }, 120_000);

  it('isolates neighbours: holding one name never blocks a different one (prefixes, separators, braces, wildcards), both ways', async () => {
    const [owner, other] = await pair();
    const derivation = fc.constantFrom(...DERIVATIONS);
    await fc.assert(
      fc.asyncProperty(lockName, derivation, lockName, fc.boolean(), async (base, [, derive], extra, reverse) => {
        const derived = derive(base, extra);
        const [first, second] = reverse ? [derived, base] : [base, derived];
        fc.pre(acceptable(first) && acceptable(second));
        const held = await owner.tryAcquire(first, { ttl: TTL });
        expect(held).not.toBeNull();
        try {
          const contender = await other.tryAcquire(second, { ttl: TTL });
          try {
            if (sameLock(first, second)) expect(contender).toBeNull();
            else expect({ first, second, blocked: contender === null }).toEqual({ first, second, blocked: false });
          } finally {
            await contender?.release();
          }
        } finally {
          await held!.release();
        }
      }),
      { numRuns: RUNS[kind] },
    );
  }, 120_000);
});
