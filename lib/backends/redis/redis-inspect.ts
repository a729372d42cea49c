import type { BackendInspection, InspectedEntry } from '../lock-backend.interface';
import { redisLockKeys, redisSemaphoreKeys } from './redis-keys';
import { holderOf } from './stored-token';
import type { RedisPort } from './port/redis-port';

/**
 * Who holds the name (writer, readers, semaphore permits) and, in FIFO mode, who waits in order. Holder ids
 * come from the stored tokens (see storedToken); expiries from PTTL and the holders' ZSET scores.
 */
export async function inspectRedis(
  client: RedisPort,
  namespace: string,
  key: string,
  fifo: boolean,
): Promise<BackendInspection> {
  const lockKeys = redisLockKeys(namespace, key);
  const semaphoreKeys = redisSemaphoreKeys(namespace, key);
  const [writer, writerTtl, readers, permits, fence, queue, semaphoreQueue, time] = await Promise.all([
    client.get(lockKeys.lock),
    client.pttl(lockKeys.lock),
    client.zrangeWithScores(lockKeys.readers),
    client.zrangeWithScores(semaphoreKeys.holders),
    client.get(lockKeys.fence),
    client.lrange(lockKeys.queue, 0, -1),
    client.lrange(semaphoreKeys.queue, 0, -1),
    client.time(),
  ]);
  // ZSET scores are expiries on the server's clock; shift them onto ours.
  const skew = Date.now() - (Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000));
  const serverNow = Date.now() - skew;
  const scored = (pairs: string[], mode: InspectedEntry['mode']) => {
    const entries: InspectedEntry[] = [];
    for (let i = 0; i < pairs.length; i += 2) {
      const expiry = Number(pairs[i + 1]);
      if (expiry <= serverNow) continue;
      entries.push({ mode, ...holderOf(pairs[i]), expiresAt: expiry + skew });
    }
    return entries;
  };
  const holders: InspectedEntry[] = [];
  if (writer !== null) {
    holders.push({
      mode: 'exclusive',
      ...holderOf(writer),
      // The counter's last value belongs to the writer unless readers or permits were granted since.
      ...(fence !== null && readers.length === 0 && { fencingToken: BigInt(fence) }),
      ...(writerTtl > 0 && { expiresAt: Date.now() + writerTtl }),
    });
  }
  holders.push(...scored(readers, 'read'), ...scored(permits, 'exclusive'));
  const waiting = (entries: string[]) =>
    entries.map((entry): InspectedEntry => ({
      mode: entry.startsWith('r') ? 'read' : 'exclusive',
      // A handoff writer's entry goes on after its token: 'g' + token + ' ' + what a grant needs.
      ...holderOf(entry.startsWith('g') ? entry.slice(1, entry.indexOf(' ')) : entry.slice(1)),
    }));
  // Plain waiters race for the key and are not recorded on the server: only FIFO mode can list them.
  return fifo ? { holders, waiters: [...waiting(queue), ...waiting(semaphoreQueue)] } : { holders };
}
