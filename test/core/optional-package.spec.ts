import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LockError, MissingPackageError } from '../../lib';
import { loadOptionalPackage } from '../../lib/utils/optional-package';
import { installCommand } from '../../lib/utils/install-command';

describe('loadOptionalPackage', () => {
  it('returns the package when it is installed', () => {
    expect(loadOptionalPackage<typeof import('rxjs')>('rxjs', 'Test').Observable).toBeDefined();
  });

  it('throws MissingPackageError naming the package, what needs it and the install command', () => {
    let thrown: unknown;
    try {
      loadOptionalPackage('@example/not-installed', 'The Redis backend');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(MissingPackageError);
    expect(thrown).toBeInstanceOf(LockError);
    const error = thrown as MissingPackageError;
    expect(error.name).toBe('MissingPackageError');
    expect(error.packageName).toBe('@example/not-installed');
    expect(error.message).toBe(
      'The Redis backend needs the "@example/not-installed" package, which is not installed. Run: npm install @example/not-installed',
    );
    expect((error.cause as NodeJS.ErrnoException).code).toBe('MODULE_NOT_FOUND');
  });

  it("reads Yarn Plug'n'Play's error for a peer the app does not provide as the package being absent", () => {
    // Yarn PnP's require throws this shape (code MODULE_NOT_FOUND, pnpCode, data.dependencyName) with a message
    // of its own; the package below throws it as PnP would for the peer itself, then for a dependency of its own.
    const dir = mkdtempSync(join(tmpdir(), 'ndl-pnp-'));
    try {
      const pnpError = (dependencyName: string) =>
        `throw Object.defineProperties(new Error('nest-distributed-lock tried to access ${dependencyName} (a peer dependency) but it isn\\'t provided by your application'), ` +
        `{ code: { value: 'MODULE_NOT_FOUND' }, pnpCode: { value: 'MISSING_PEER_DEPENDENCY' }, data: { value: { dependencyName: ${JSON.stringify(dependencyName)} } } });`;
      const peer = join(dir, 'node_modules', 'a-peer');
      mkdirSync(peer, { recursive: true });
      writeFileSync(join(peer, 'index.js'), pnpError(peer));
      expect(() => loadOptionalPackage(peer, 'Lock metrics')).toThrow(MissingPackageError);
      const other = join(dir, 'node_modules', 'needs-another');
      mkdirSync(other, { recursive: true });
      writeFileSync(join(other, 'index.js'), pnpError('another-package'));
      expect(() => loadOptionalPackage(other, 'Test')).toThrow(/tried to access another-package/);
      expect(() => loadOptionalPackage(other, 'Test')).not.toThrow(MissingPackageError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rethrows as is when the package is there but cannot load (installing it again would not help)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ndl-broken-'));
    try {
      const pkg = join(dir, 'node_modules', 'broken-package');
      mkdirSync(pkg, { recursive: true });
      writeFileSync(join(pkg, 'index.js'), "require('a-dependency-that-is-missing');");
      expect(() => loadOptionalPackage(pkg, 'Test')).toThrow(/Cannot find module 'a-dependency-that-is-missing'/);
      expect(() => loadOptionalPackage(pkg, 'Test')).not.toThrow(MissingPackageError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the install command a MissingPackageError gives', () => {
  const app = (lockFile: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'ndl-pm-'));
    writeFileSync(join(dir, lockFile), '');
    const nested = join(dir, 'apps', 'api');
    mkdirSync(nested, { recursive: true });
    return { dir, nested };
  };

  it.each([
    ['pnpm/9.12.0 npm/? node/v20.19.0 linux x64', 'pnpm add ioredis'],
    ['yarn/4.5.0 npm/? node/v20.19.0 linux x64', 'yarn add ioredis'],
    ['bun/1.2.0 npm/? node/v20.19.0 linux x64', 'bun add ioredis'],
    ['npm/11.0.0 node/v20.19.0 linux x64 workspaces/false', 'npm install ioredis'],
  ])('is the one of the package manager running the app (%s)', (agent, command) => {
    const { dir } = app('package-lock.json');
    try {
      expect(installCommand('ioredis', { npm_config_user_agent: agent }, dir)).toBe(command);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['pnpm-lock.yaml', 'pnpm add etcd3'],
    ['yarn.lock', 'yarn add etcd3'],
    ['bun.lock', 'bun add etcd3'],
    ['package-lock.json', 'npm install etcd3'],
  ])(
    'is found from the nearest lock file above the working directory (%s) when no script runs the app',
    (lockFile, command) => {
      const { dir, nested } = app(lockFile);
      try {
        expect(installCommand('etcd3', {}, nested)).toBe(command);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
