import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');

/**
 * A backend the app builds from an address and never uses: one replaced in a test with
 * `overrideProvider(LockBackend)`, or a module imported by a script that exits early. Found from outside: its
 * client connected in the constructor, so nothing closed it and the process (a Jest run) never exited.
 */
describe('a backend built from an address and never used', () => {
  it.each([
    ['RedisLockBackend (ioredis)', `new RedisLockBackend({ url: 'redis://127.0.0.1:1' })`],
    ['RedisLockBackend (node-redis)', `new RedisLockBackend({ url: 'redis://127.0.0.1:1', clientPackage: 'redis' })`],
    ['ZooKeeperLockBackend', `new ZooKeeperLockBackend({ connectionString: '127.0.0.1:1' })`],
    ['EtcdLockBackend', `new EtcdLockBackend({ hosts: 'http://127.0.0.1:1' })`],
  ])(
    '%s opens nothing: the process exits by itself',
    (_, construct) => {
      const script = `
      const { EtcdLockBackend, RedisLockBackend, ZooKeeperLockBackend } = require(${JSON.stringify(join(ROOT, 'lib'))});
      globalThis.backend = ${construct};
      console.log('built');
    `;
      const run = spawnSync(process.execPath, ['--require', join(ROOT, 'test/support/ts-register.js'), '-e', script], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(run.stdout.trim()).toBe('built');
      expect(run.signal).toBeNull(); // not killed by the timeout: it exited
      expect(run.status).toBe(0);
    },
    40_000,
  );
});
