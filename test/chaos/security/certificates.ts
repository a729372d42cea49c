import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificates {
  readonly dir: string;
  /** PEM files. */
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly ca: Buffer;
  /** Another CA, which did not sign the server's certificate. */
  readonly otherCa: Buffer;
  remove(): void;
}

/**
 * A throw-away CA and a server certificate for 127.0.0.1 (subjectAltName IP), made with the openssl CLI,
 * plus an unrelated CA for the "untrusted server" cases.
 */
export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'ndl-tls-'));
  const path = (name: string) => join(dir, name);
  const openssl = (...args: string[]) =>
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '1',
    '-subj',
    '/CN=ndl-test-ca',
  );
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'other.key',
    '-out',
    'other.crt',
    '-days',
    '1',
    '-subj',
    '/CN=ndl-other-ca',
  );
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
    '-subj',
    '/CN=127.0.0.1',
  );
  writeFileSync(path('san.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '1',
    '-extfile',
    'san.cnf',
  );
  return {
    dir,
    caFile: path('ca.crt'),
    certFile: path('server.crt'),
    keyFile: path('server.key'),
    ca: readFileSync(path('ca.crt')),
    otherCa: readFileSync(path('other.crt')),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
