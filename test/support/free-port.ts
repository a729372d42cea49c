import { createServer } from 'node:net';

/**
 * `count` distinct unused loopback ports: the kernel picks each by a listen on port 0, then we free them.
 * All listeners stay open until every port is known, so no port comes twice (asking one at a time can: a
 * port freed by close() may come straight back). Another process can grab a port between close() and our
 * server's bind; the server launchers retry with new ports when that happens.
 */
async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (server) =>
          new Promise<number>((resolve, reject) => {
            server.unref();
            server.once('error', reject);
            server.listen(0, '127.0.0.1', () => {
              const address = server.address();
              if (address === null || typeof address === 'string')
                reject(new Error('could not read the port the kernel assigned'));
              else resolve(address.port);
            });
          }),
      ),
    );
  } finally {
    await Promise.all(
      servers.map(
        (server) => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve())),
      ),
    );
  }
}

/** Ports the developer's own servers use; a test must never talk to them. */
export const RESERVED_PORTS: ReadonlySet<number> = new Set([6379, 2379, 2380]);

/** A free port that is not one of RESERVED_PORTS. */
export async function freeTestPort(): Promise<number> {
  const [port] = await freeTestPorts(1);
  return port;
}

/** `count` distinct free ports, none of them one of RESERVED_PORTS. */
export async function freeTestPorts(count: number): Promise<number[]> {
  for (;;) {
    const ports = await freePorts(count);
    if (!ports.some((port) => RESERVED_PORTS.has(port))) return ports;
  }
}
