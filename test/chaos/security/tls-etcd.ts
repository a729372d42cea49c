import { get } from 'node:https';
import { etcdMemberArgs } from '../../support/etcd-server';
import { freeTestPorts } from '../../support/free-port';
import {
  findBinary,
  launchServer,
  removeServerDir,
  retireServer,
  retryOnPortTaken,
  serverDir,
} from '../../support/server-process';
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
  const binary = findBinary('etcd');
  return retryOnPortTaken(async () => {
    const [port, peerPort] = await freeTestPorts(2);
    const dir = serverDir('etcd-tls');
    const endpoint = `https://127.0.0.1:${port}`;
    try {
      const server = await launchServer({
        what: `etcd (TLS) on ${endpoint}`,
        binary,
        args: etcdMemberArgs({
          name: 'ndl-tls',
          port,
          peerPort,
          dir,
          initialCluster: `ndl-tls=http://127.0.0.1:${peerPort}`,
          heartbeatMs: 50,
          electionMs: 500,
          tls: certificates,
        }),
        probe: () => healthy(port, certificates.ca),
        dir,
      });
      const stop = async () => {
        await retireServer(server);
        removeServerDir(dir);
      };
      return { endpoint, stop };
    } catch (error) {
      removeServerDir(dir);
      throw error;
    }
  });
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
