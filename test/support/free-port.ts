import { createServer } from 'node:net';

/**
 * Asks the kernel for an unused loopback port by listening on port 0, then frees it.
 * Another process can grab the port between close() and our server's bind; the server launchers
 * retry with a new port when that happens.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not read the port the kernel assigned'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

/** Ports the developer's own servers use; a test must never talk to them. */
export const RESERVED_PORTS: ReadonlySet<number> = new Set([6379, 2379, 2380]);

/** A free port that is not one of RESERVED_PORTS. */
export async function freeTestPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (!RESERVED_PORTS.has(port)) return port;
  }
}
