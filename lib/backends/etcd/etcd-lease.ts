import type { LeaseClient } from 'etcd3';

/*
 * Lease calls on etcd3's raw LeaseClient. etcd3's `Lease` object runs its own keepalive loop and 'lost'
 * events we could not time or stop precisely; here every keepalive is one request we chose to send.
 */

export interface GrantedLease {
  readonly id: string;
  readonly ttlSeconds: number;
}

export async function grantLease(leases: LeaseClient, ttlSeconds: number): Promise<GrantedLease> {
  const response = await leases.leaseGrant({ TTL: ttlSeconds });
  return { id: response.ID, ttlSeconds: Number(response.TTL) };
}

/**
 * Leases renewed on one keepalive stream. etcd answers a stream's keepalives one after the other, and the
 * leader makes each wait until it has applied every committed write (etcd fef4a79, etcd#6978), so under a
 * write load (acquires: lease grant + put, each fsynced) a stream of N keepalives takes about N apply
 * rounds. A batch is therefore spread over parallel streams of at most this many leases each: measured with
 * 10,000 locks of ttl 3 s (bench scenario 4), 1,104 leases on one stream took 1.5 s and 64 per stream still
 * lost locks on a loaded 2-core machine, while 8 per stream lost none.
 */
export const LEASES_PER_KEEPALIVE_STREAM = 8;

/**
 * One keepalive on a short-lived stream. Resolves the lease's TTL in seconds after the renewal, or a
 * value <= 0 when the lease no longer exists (expired or revoked). The gRPC deadline ends a stream the
 * server never answers, so nothing is left open.
 */
export async function keepAliveOnce(leases: LeaseClient, leaseId: string, timeoutMs: number): Promise<number> {
  return (await keepAliveStream(leases, [leaseId], timeoutMs)).get(leaseId) ?? 0;
}

/**
 * Keepalives for many leases (the watchdog's batch), in parallel streams of LEASES_PER_KEEPALIVE_STREAM.
 * Resolves each lease's TTL after renewal, <= 0 for a lease that no longer exists. Rejects when any stream
 * fails before all its answers arrived.
 */
export async function keepAliveMany(
  leases: LeaseClient,
  leaseIds: readonly string[],
  timeoutMs: number,
): Promise<Map<string, number>> {
  const unique = [...new Set(leaseIds)];
  if (unique.length <= LEASES_PER_KEEPALIVE_STREAM) return keepAliveStream(leases, unique, timeoutMs);
  const streams: Promise<Map<string, number>>[] = [];
  for (let i = 0; i < unique.length; i += LEASES_PER_KEEPALIVE_STREAM) {
    streams.push(keepAliveStream(leases, unique.slice(i, i + LEASES_PER_KEEPALIVE_STREAM), timeoutMs));
  }
  const answers = new Map<string, number>();
  for (const part of await Promise.all(streams)) for (const [id, ttl] of part) answers.set(id, ttl);
  return answers;
}

/**
 * Writes one keepalive per lease, then half-closes the stream at once: etcd still answers every request it
 * read before the end. A half-closed stream matters because etcd3 treats an error on a stream that is still
 * writable (our deadline passing on a slow answer) as a failed host: it closes every gRPC client of that
 * host and counts it toward its circuit breaker, which after three such errors fails every call (acquires
 * and other renewals included) for 5 s. One slow renewal must not take the whole backend down.
 */
function keepAliveStream(
  leases: LeaseClient,
  leaseIds: readonly string[],
  timeoutMs: number,
): Promise<Map<string, number>> {
  return leases.leaseKeepAlive({ deadline: Date.now() + Math.max(1, timeoutMs) }).then(
    (stream) =>
      new Promise((resolve, reject) => {
        const answers = new Map<string, number>();
        let settled = false;
        // Listeners stay attached after settling: a late 'error' (deadline, reset) must not go unhandled.
        const finish = (error?: Error) => {
          if (settled) return;
          settled = true;
          if (error) reject(error);
          else resolve(answers);
        };
        stream.on('data', (response) => {
          answers.set(String(response.ID), Number(response.TTL));
          if (answers.size >= leaseIds.length) finish();
        });
        stream.on('error', (error) => finish(error));
        stream.on('end', () => finish(new Error('the lease keepalive stream ended before every lease was answered')));
        for (const id of leaseIds) stream.write({ ID: id });
        stream.end();
      }),
  );
}

/** Revokes the lease, deleting every key on it. Resolves false when the lease was already gone. */
export async function revokeLease(
  leases: LeaseClient,
  leaseId: string,
  callOptions?: { deadline: number },
): Promise<boolean> {
  try {
    await leases.leaseRevoke({ ID: leaseId }, callOptions);
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
