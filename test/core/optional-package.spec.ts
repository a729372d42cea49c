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
