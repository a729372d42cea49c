import type { LeaseClient } from 'etcd3';

/** gRPC call options (deadline, ...), named through etcd3 so we need no import of @grpc/grpc-js. */
export type CallOptions = NonNullable<Parameters<LeaseClient['leaseGrant']>[1]>;

/*
 * Lease calls on etcd3's raw LeaseClient. etcd3's `Lease` object runs its own keepalive loop and 'lost'
 * events we could not time or stop precisely; here every keepalive is one request we chose to send.
 */

export interface GrantedLease {
  readonly id: string;
  readonly ttlSeconds: number;
}

export async function grantLease(leases: LeaseClient, ttlSeconds: number, options?: CallOptions): Promise<GrantedLease> {
  const response = await leases.leaseGrant({ TTL: ttlSeconds }, options);
  return { id: response.ID, ttlSeconds: Number(response.TTL) };
}

/**
 * One keepalive on a short-lived stream. Resolves the lease's TTL in seconds after the renewal, or a
 * value <= 0 when the lease no longer exists (expired or revoked). The gRPC deadline ends a stream the
 * server never answers, so nothing is left open.
 */
export async function keepAliveOnce(leases: LeaseClient, leaseId: string, timeoutMs: number): Promise<number> {
  const stream = await leases.leaseKeepAlive({ deadline: Date.now() + Math.max(1, timeoutMs) });
  return new Promise<number>((resolve, reject) => {
    let settled = false;
    // Listeners stay attached after settling: a late 'error' (deadline, reset) must not go unhandled.
    stream.on('data', (response) => {
      if (settled) return;
      settled = true;
      stream.end();
      resolve(Number(response.TTL));
    });
    stream.on('error', (error) => {
      if (settled) return;
      settled = true;
      reject(error);
    });
    stream.on('end', () => {
      if (settled) return;
      settled = true;
      reject(new Error('the lease keepalive stream ended without an answer'));
    });
    stream.write({ ID: leaseId });
  });
}

/**
 * Keepalives for many leases on one stream (the watchdog's batch). Resolves each lease's TTL after renewal,
 * <= 0 for a lease that no longer exists. Rejects only when the stream fails before every answer arrived.
 */
export async function keepAliveMany(leases: LeaseClient, leaseIds: readonly string[], timeoutMs: number): Promise<Map<string, number>> {
  const stream = await leases.leaseKeepAlive({ deadline: Date.now() + Math.max(1, timeoutMs) });
  const answers = new Map<string, number>();
  const expected = new Set(leaseIds);
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (error?: unknown) => {
      if (settled) return;
      settled = true;
      stream.end();
      if (error) reject(error);
      else resolve(answers);
    };
    stream.on('data', (response) => {
      answers.set(String(response.ID), Number(response.TTL));
      if (answers.size >= expected.size) finish();
    });
    stream.on('error', (error) => finish(error));
    stream.on('end', () => finish(new Error('the lease keepalive stream ended before every lease was answered')));
    for (const id of expected) stream.write({ ID: id });
  });
}

/** Revokes the lease, deleting every key on it. Resolves false when the lease was already gone. */
export async function revokeLease(leases: LeaseClient, leaseId: string, options?: CallOptions): Promise<boolean> {
  try {
    await leases.leaseRevoke({ ID: leaseId }, options);
    return true;
  } catch (error) {
    if (isLeaseNotFound(error)) return false;
    throw error;
  }
}

/** etcd's answer for a lease that expired or was revoked. */
export function isLeaseNotFound(error: unknown): boolean {
  return (
    (error as Error | undefined)?.constructor?.name === 'EtcdLeaseInvalidError' ||
    /requested lease not found/.test(String((error as Error | undefined)?.message))
  );
}
