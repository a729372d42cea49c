import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as errors from '../../lib/errors';
import { backendErrorOf } from '../../lib/errors/lock-backend.error';
import { messageOf } from '../../lib/backends/redis/redis-commands';

const ERRORS_DIR = join(__dirname, '../../lib/errors');
const LIB_DIR = join(__dirname, '../../lib');

describe('error classes', () => {
  it('live in lib/errors, one per file, each re-exported from its index and extending LockError with its own name', () => {
    const files = readdirSync(ERRORS_DIR).filter((file) => file.endsWith('.error.ts'));
    const sources = files.map((file) => readFileSync(join(ERRORS_DIR, file), 'utf8'));
    const classes = sources.map((source) => /export class (\w+)/.exec(source)?.[1]);
    expect(classes).not.toContain(undefined);
    sources.forEach((source, index) =>
      expect(source).toMatch(new RegExp(`readonly name(: string)? = '${classes[index]}'`)),
    );
    for (const name of classes as string[]) {
      const ErrorClass = (errors as Record<string, unknown>)[name] as abstract new (...args: never[]) => Error;
      expect(ErrorClass).toBeDefined();
      expect(ErrorClass.prototype).toBeInstanceOf(errors.LockError);
    }
    expect(classes.length).toBeGreaterThanOrEqual(11);
  });

  it("LockBackendError reads as one sentence whether or not a driver's message ends with a period", () => {
    const message = (detail: string) =>
      new errors.LockBackendError('redis', '127.0.0.1:6380', 'acquire', detail).message;
    const expected =
      'redis backend at 127.0.0.1:6380 failed during acquire: Reached the max retries per request limit. ' +
      'Check that the server is running and reachable from this process.';
    expect(message('Reached the max retries per request limit.')).toBe(expected);
    expect(message('Reached the max retries per request limit')).toBe(expected);
  });

  it('LockBackendError points at credentials and permissions, not reachability, when the server refused access', () => {
    const message = (detail: string) =>
      new errors.LockBackendError('redis', '127.0.0.1:6380', 'acquire', detail).message;
    for (const detail of [
      'WRONGPASS invalid username-password pair or user is disabled.',
      "NOPERM this user has no permissions to run the 'evalsha' command",
      'NOAUTH Authentication required.',
      "ERR The user executing the script can't publish to the channel mentioned in the command script: locks:{k}:released",
      'GRPCInvalidArgumentError: 3 INVALID_ARGUMENT: etcdserver: user name is empty',
      'GRPCUnauthenticatedError: etcdserver: invalid auth token',
      'ERR Protocol error: unauthenticated multibulk length',
    ]) {
      expect(message(detail)).toMatch(/check the user, its password and its permissions \(ACL\)\.$/);
      expect(message(detail)).not.toContain('running and reachable');
    }
    expect(message('connect ECONNREFUSED 127.0.0.1:6380')).toMatch(/running and reachable from this process\.$/);
  });

  it('LockBackendError never carries a password a driver put into its message, nor into its cause', () => {
    const grpc = new Error(
      '14 UNAVAILABLE: Name resolution failed for target dns:locker:hunter2@127.0.0.1:2379 (redis://app:s3cret@10.0.0.1:6379)',
    );
    const error = new errors.LockBackendError('etcd', 'http://127.0.0.1:2379', 'acquire', grpc.message, {
      cause: grpc,
    });
    for (const text of [error.message, (error.cause as Error).message, (error.cause as Error).stack ?? '']) {
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain('s3cret');
    }
    expect(error.message).toContain('dns:***@127.0.0.1:2379');
    expect(error.message).toContain('redis://***@10.0.0.1:6379');
  });

  it('LockBackendError points at the client set-up when the client, not the server, refused the command', () => {
    const message = (detail: string) =>
      new errors.LockBackendError('redis', '127.0.0.1:6380', 'acquire', detail).message;
    const cases: [string, RegExp][] = [
      ['The client is closed (connection end)', /call `await client\.connect\(\)` before passing it/],
      ["Stream isn't writeable and enableOfflineQueue options is false", /offline queue is disabled/],
      ['Connection in subscriber mode, only subscriber commands may be used', /not in subscriber mode/],
      ['the backend is closed (close() was called)', /use it between its creation and close\(\)/],
      [
        'the node-redis cluster client is not connected (call connect() before use) or was closed (connection end)',
        /call `await client\.connect\(\)` before passing it/,
      ],
      [
        'Tried to call a KV method on etcd3, but the client was already closed',
        /close a client you passed in only after the LockService/,
      ],
      [
        'Exception: NO_NODE[-101]: a parent of the lock path is missing; with a chroot in the connection string (host:2181/app), create that node first',
        /Create the missing node/,
      ],
      [
        "ERR Can't execute 'evalsha': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
        /not in subscriber mode/,
      ],
    ];
    for (const [detail, advice] of cases) {
      expect(message(detail)).toMatch(advice);
      expect(message(detail)).not.toContain('running and reachable');
    }
    // ioredis once its connection ended: closed by the app, or given up on the server.
    expect(message('Connection is closed. (connection end)')).toMatch(
      /if the app closed the client, close it only after the LockService; otherwise check that the server is running/,
    );
    // A client that keeps reconnecting may be refused its login: the hint names both.
    expect(message('127.0.0.1:6380 (connection reconnecting)')).toMatch(
      /running and reachable from this process, and that the client’s credentials are right\.$/,
    );
  });

  it("a backend's own words on its connection join the core's LockBackendError; a backend that fails to say changes nothing", () => {
    const backend = { kind: 'redis', address: '127.0.0.1:6380' };
    const down = { ...backend, describeConnection: () => 'connection reconnecting' };
    const up = { ...backend, describeConnection: () => undefined };
    const broken = {
      ...backend,
      describeConnection: (): string => {
        throw new Error('no status');
      },
    };
    expect(backendErrorOf(down, 'release', 'no reply within 5000 ms').message).toContain(
      'failed during release: no reply within 5000 ms (connection reconnecting). Check',
    );
    for (const quiet of [backend, up, broken]) {
      expect(backendErrorOf(quiet, 'release', 'no reply within 5000 ms').message).toContain(
        'failed during release: no reply within 5000 ms. Check',
      );
    }
  });

  it('no error class is declared outside lib/errors', () => {
    const outside = walk(LIB_DIR)
      .filter((file) => !file.startsWith(ERRORS_DIR) && file.endsWith('.ts'))
      .flatMap((file) =>
        [...readFileSync(file, 'utf8').matchAll(/export class (\w+) extends (\w*Error)\b/g)].map((match) => match[1]),
      );
    expect(outside).toEqual([]);
  });
});

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

describe("a Redis client's error in a LockBackendError's detail", () => {
  it('is its message, or for an error without one (node-redis TimeoutError) what it means', () => {
    expect(messageOf(new Error('READONLY You can not write against a read only replica.'))).toMatch(/^READONLY/);
    class TimeoutError extends Error {
      override name = 'TimeoutError';
    }
    // Found from outside: "failed during tryAcquire:  (connection reconnecting)", with nothing after the colon.
    expect(messageOf(new TimeoutError())).toBe("no reply within the client's command timeout (TimeoutError)");
    class OtherError extends Error {
      override name = 'ConnectionTimeoutError';
    }
    expect(messageOf(new OtherError())).toBe('ConnectionTimeoutError');
    expect(messageOf('plain')).toBe('plain');
  });
});
