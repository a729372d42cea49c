import { redisLockKeys } from '../../lib/backends/redis/redis-keys';
import Redis from 'ioredis';
import { describeLockContract } from './lock-contract';
import { worldOf, type BackendFactory } from '../support/backends';
import { freeTestPorts } from '../support/free-port';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { connectRedlockBackend, type RedlockClientKind } from '../redlock/redlock-support';

/**
 * The shared contract suite against RedlockBackend over three real redis-server processes. Forked workers reach
 * them through connectBackend('redlock', 'redis://a,redis://b,redis://c'), which test/support/backends.ts must map
 * to connectRedlockBackend.
 */
let servers: TestRedisServer[] = [];

beforeAll(async () => {
  servers = await Promise.all([startRedis(), startRedis(), startRedis()]);
}, 60_000);

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
});

const address = () => servers.map((server) => server.url).join(',');

/** One factory per client package of the instances' clients: ioredis, node-redis. */
const redlockFactory = (clientKind: RedlockClientKind): BackendFactory => ({
  name: clientKind === 'ioredis' ? 'redlock' : 'redlock-node',
  backendKind: 'redlock',
  crossProcess: true,
  // Waiters race when woken, as on a single Redis.
  fair: false,
  lockDelay: true,
  hasServer: true,
  minTtl: 1_500,
  address,
  create: async () => connectRedlockBackend(address(), {}, clientKind),
  world: () => worldOf(() => connectRedlockBackend(address(), {}, clientKind)),
  unreachable: async () => {
    const ports = await freeTestPorts(3);
    const [port] = ports;
    return {
      port,
      ...connectRedlockBackend(
        ports.map((each) => `redis://127.0.0.1:${each}`).join(','),
        { requestTimeout: 500 },
        clientKind,
      ),
    };
  },
  vanishings: [
    {
      name: 'DEL of the lock key on every instance with raw clients',
      run: async (lock) => {
        await Promise.all(
          servers.map(async (server) => {
            const client = new Redis(server.url);
            try {
              await client.del(redisLockKeys(lock.namespace, lock.key).lock);
            } finally {
              await client.quit();
            }
          }),
        );
      },
    },
  ],
});

describeLockContract(redlockFactory('ioredis'));
describeLockContract(redlockFactory('node-redis'));
