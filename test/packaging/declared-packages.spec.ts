import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * Every package the library loads at run time is one it declares. Strict package managers (pnpm, Yarn Plug'n'Play)
 * let a package see only its declared dependencies and peers: an undeclared one is not found there, or (in a
 * pnpm workspace) another version hoisted for some other app is, whose classes the app's copy does not recognise.
 * Packages loaded only when a feature needs them must be optional peers, so that an app without them installs
 * cleanly.
 */
const ROOT = resolve(__dirname, '../..');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};
/** etcd3's own dependency, resolved from etcd3's folder on purpose (the copy etcd3 uses). */
const RESOLVED_FROM_A_PEER = new Set(['cockatiel']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** `@scope/name/deep` -> `@scope/name`, `name/deep` -> `name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Packages imported by a value import (not `import type`), and packages loaded lazily by name. */
function packagesLoaded(): { imported: Set<string>; lazy: Set<string> } {
  const imported = new Set<string>();
  const lazy = new Set<string>();
  for (const file of sources(join(ROOT, 'lib'))) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?\sfrom\s+'([^'.][^']*)'/gms))
      imported.add(packageOf(match[1]));
    for (const match of text.matchAll(
      /(?:loadOptionalPackage(?:<[^(]*>)?|transportException|isPackageInstalled|require(?:\.resolve)?)\(\s*'([^'.][^']*)'/g,
    ))
      lazy.add(packageOf(match[1]));
  }
  for (const set of [imported, lazy])
    for (const name of [...set]) if (name.startsWith('node:') || RESOLVED_FROM_A_PEER.has(name)) set.delete(name);
  return { imported, lazy };
}

describe('packages the library loads at run time', () => {
  const { imported, lazy } = packagesLoaded();

  it('finds both kinds in the sources (a control for the checks below)', () => {
    expect([...imported]).toEqual(expect.arrayContaining(['@nestjs/common', '@nestjs/core', 'rxjs']));
    expect([...lazy]).toEqual(
      expect.arrayContaining(['ioredis', 'etcd3', '@nestjs/microservices', '@nestjs/websockets', '@nestjs/schedule']),
    );
  });

  it('imports only declared dependencies or required peers', () => {
    const undeclared = [...imported].filter(
      (name) =>
        !manifest.dependencies?.[name] &&
        !(manifest.peerDependencies?.[name] && !manifest.peerDependenciesMeta?.[name]?.optional),
    );
    expect(undeclared).toEqual([]);
  });

  it('loads lazily only optional peers, so strict package managers link the app’s copy', () => {
    const notOptionalPeers = [...lazy].filter(
      (name) => !manifest.peerDependencies?.[name] || !manifest.peerDependenciesMeta?.[name]?.optional,
    );
    expect(notOptionalPeers).toEqual([]);
  });
});
