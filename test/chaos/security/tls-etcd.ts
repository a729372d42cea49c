import { mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeTestPorts } from '../../support/free-port';
import { findBinary, spawnServer, stopServer, waitUntilReady } from '../../support/server-process';
import type { TestCertificates } from './certificates';

export interface TlsEtcd {
  /** https://127.0.0.1:<port> */
  readonly endpoint: string;
  stop(): Promise<void>;
}

/**
 * A single-member etcd serving its clients over TLS only (test/support's startEtcd speaks plain HTTP, and
 * its readiness probe too), with a temp data dir. Peers stay on plain HTTP on loopback.
 */
export async function startTlsEtcd(certificates: TestCertificates): Promise<TlsEtcd> {
  const [port, peerPort] = await freeTestPorts(2);
  const dir = mkdtempSync(join(tmpdir(), 'ndl-etcd-tls-'));
  const endpoint = `https://127.0.0.1:${port}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const server = spawnServer(findBinary('etcd'), [
    '--name',
    'ndl-tls',
    '--data-dir',
    dir,
    '--listen-client-urls',
    endpoint,
    '--advertise-client-urls',
    endpoint,
    '--listen-peer-urls',
    peer,
    '--initial-advertise-peer-urls',
    peer,
    '--initial-cluster',
    `ndl-tls=${peer}`,
    '--initial-cluster-state',
    'new',
    '--cert-file',
    certificates.certFile,
    '--key-file',
    certificates.keyFile,
    '--heartbeat-interval',
    '50',
    '--election-timeout',
    '500',
    '--logger',
    'zap',
    '--log-level',
    'error',
  ]);
  server.ownTempDir(dir);
  const stop = async () => {
    await stopServer(server);
    server.forget();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitUntilReady(server, `etcd (TLS) on ${endpoint}`, () => healthy(port, certificates.ca));
  } catch (error) {
    await stop();
    throw error;
  }
  return { endpoint, stop };
}

function healthy(port: number, ca: Buffer): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const request = get({ host: '127.0.0.1', port, path: '/health', ca, timeout: 1_000, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve(response.statusCode === 200 && body.includes('"health":"true"')));
    });
    request.once('timeout', () => request.destroy(new Error('health check timed out')));
    request.once('error', reject);
  });
}
