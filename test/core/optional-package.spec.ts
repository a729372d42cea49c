import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LockError, MissingPackageError } from '../../lib';
import { loadOptionalPackage } from '../../lib/utils/optional-package';

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
