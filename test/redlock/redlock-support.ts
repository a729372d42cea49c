import Redis from 'ioredis';
import { RedlockBackend, type RedlockBackendOptions } from '../../lib/backends/redlock/redlock.backend';
import type { BackendUnderTest } from '../support/backends';

/**
 * A RedlockBackend over new clients, one per URL in `address` (comma-separated redis:// URLs): the form a forked
 * worker gets. The returned close() closes the backend, then the clients it made.
 */
export function connectRedlockBackend(address: string, tuning: Omit<RedlockBackendOptions, 'clients'> = {}): BackendUnderTest {
  const clients = address.split(',').map((url) => {
    const client = new Redis(url);
    // Tests stop instances on purpose: no "Unhandled error event" noise.
    client.on('error', () => undefined);
    return client;
  });
  let backend: RedlockBackend;
  try {
    backend = new RedlockBackend({ clients, ...tuning });
  } catch (error) {
    // Reconnecting clients would keep the Jest worker alive past its suite.
    for (const client of clients) client.disconnect();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    backend,
    close: () =>
      (closing ??= (async () => {
        try {
          await backend.close();
        } finally {
          await Promise.all(
            clients.map(async (client) => {
              if (client.status === 'ready') await client.quit().catch(() => undefined);
              client.disconnect();
            }),
          );
        }
      })()),
  };
}
