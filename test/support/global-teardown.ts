import { SHARED_SERVERS, SharedServers } from './global-setup';
import { killAllServersSync } from './server-process';
import { removePidFile } from './shared-servers';

/** Stops the run's shared servers (also after failed tests) and removes the signal handlers setup installed. */
export default async function globalTeardown(): Promise<void> {
  const shared = (globalThis as typeof globalThis & { [SHARED_SERVERS]?: SharedServers })[SHARED_SERVERS];
  if (shared) {
    await Promise.allSettled([shared.redis?.stop(), shared.etcd?.stop()]);
    process.removeListener('SIGINT', shared.onSignal);
    process.removeListener('SIGTERM', shared.onSignal);
  }
  // Anything a failed stop left behind.
  killAllServersSync();
  removePidFile(process.pid);
}
