/* eslint-disable @typescript-eslint/prefer-promise-reject-errors -- node-zookeeper-client's Exception inherits Error at runtime; its @types omit that */
import { Client, CreateMode, createClient } from 'node-zookeeper-client';
import type { AdapterSpec, LockAdapter } from './adapter';

const PARENT = '/bench-raw/uncontended';

/**
 * The limit on ZooKeeper: create an ephemeral sequential node under a path that exists, then delete it, on
 * node-zookeeper-client. What a lock needs at the least (two writes); no queue position, no fencing token, no
 * watch.
 */
export const rawZooKeeper: AdapterSpec = {
  name: 'limit: raw create + delete (node-zookeeper-client)',
  store: 'zookeeper',
  role: 'limit',
  waiting: 'does not wait (uncontended only)',
  waits: false,
  renews: false,
  async create(env) {
    const client = await connect(env.zookeeperConnectionString);
    return {
      name: this.name,
      acquire: (key: string) =>
        new Promise<string>((resolve, reject) =>
          client.create(`${PARENT}/${key}-`, Buffer.from('x'), CreateMode.EPHEMERAL_SEQUENTIAL, (error, path) =>
            error ? reject(error) : resolve(path),
          ),
        ),
      release: (path: string) =>
        new Promise<void>((resolve, reject) => client.remove(path, -1, (error) => (error ? reject(error) : resolve()))),
      async close() {
        client.close();
      },
    } satisfies LockAdapter<string>;
  },
};

function connect(connectionString: string): Promise<Client> {
  const client = createClient(connectionString, { sessionTimeout: 10_000 });
  return new Promise((resolve, reject) => {
    client.once('connected', () => client.mkdirp(PARENT, (error) => (error ? reject(error) : resolve(client))));
    client.connect();
  });
}
