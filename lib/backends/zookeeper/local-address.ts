import { networkInterfaces } from 'node:os';

/**
 * What Curator stores in lock nodes by default: this host's address as text (CuratorFrameworkFactory's
 * default data is InetAddress.getLocalHost().getHostAddress()). Curator never parses it; it tells an
 * operator browsing the tree which machine holds a lock. First non-internal IPv4, else loopback.
 */
export function localAddressData(): Buffer {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (address.family === 'IPv4' && !address.internal) return Buffer.from(address.address);
    }
  }
  return Buffer.from('127.0.0.1');
}
