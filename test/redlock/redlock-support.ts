import Redis from 'ioredis';
import { RedlockBackend, type RedlockBackendOptions } from '../../lib/backends/redlock/redlock.backend';
import {
  closeNodeRedisClient,
  closeRedisClient,
  createNodeRedisClient,
  own,
  type BackendUnderTest,
  type NodeRedisClient,
} from '../support/backends';

/** Which client package the instances' clients come from. */
export type RedlockClientKind = 'ioredis' | 'node-redis';

/**
 * A RedlockBackend over new clients, one per URL in `address` (comma-separated redis:// URLs): the form a forked
 * worker gets. The returned close() closes the backend, then the clients it made.
 */
export function connectRedlockBackend(
  address: string,
  tuning: Omit<RedlockBackendOptions, 'clients'> = {},
  clientKind: RedlockClientKind = 'ioredis',
): BackendUnderTest {
  if (clientKind === 'node-redis') return connectNodeRedisRedlock(address, tuning);
  const clients = address.split(',').map((url) => {
    // disconnect() ends the socket and waits disconnectTimeout (ioredis' default: 2 s, on a ref'd timer) for it
    // to close; to a killed or black-holed instance it never does, which kept the Jest worker alive.
    const client = new Redis(url, { disconnectTimeout: 200 });
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
  return own(backend, () => Promise.all(clients.map(closeRedisClient)).then(() => undefined));
}

/** The same over node-redis clients (RESP2), which connect in the background: commands wait for them. */
function connectNodeRedisRedlock(address: string, tuning: Omit<RedlockBackendOptions, 'clients'>): BackendUnderTest {
  const clients: NodeRedisClient[] = address.split(',').map((url) => createNodeRedisClient(url, 2));
  let backend: RedlockBackend;
  try {
    backend = new RedlockBackend({ clients, ...tuning });
  } catch (error) {
    for (const client of clients) void closeNodeRedisClient(client);
    throw error;
  }
  return own(backend, () => Promise.all(clients.map(closeNodeRedisClient)).then(() => undefined));
}
