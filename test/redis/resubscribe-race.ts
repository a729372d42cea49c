import { ChannelSubscriber } from '../../lib/backends/redis/channel-subscriber';
import type { RedisPort } from '../../lib/backends/redis/port/redis-port';

/** Far above a loopback round trip, far below the waiters' re-check interval that would hide a lost message. */
const HEARD_WITHIN_MS = 2_000;

/**
 * A channel's last waiter leaves (UNSUBSCRIBE goes out) and, before the server has answered, a new waiter of the
 * same channel subscribes: as on a hot key, where each grant ends a wait and the releaser soon waits again. The new
 * subscription must really be on the server once `ready` resolves, so a release published then is heard. Resolves
 * with the message, or rejects when none came within HEARD_WITHIN_MS.
 */
export async function publishAfterResubscribe(
  port: RedisPort,
  channel: string,
  publish: (channel: string, message: string) => Promise<unknown>,
): Promise<string> {
  const subscriber = new ChannelSubscriber(port.duplicateForSubscriber());
  try {
    const first = subscriber.subscribe(channel, () => undefined);
    await first.ready;
    first.unsubscribe();
    // Same tick: the UNSUBSCRIBE above is not answered yet.
    let heard: (message: string) => void = () => undefined;
    const message = new Promise<string>((resolve) => (heard = resolve));
    const second = subscriber.subscribe(channel, (text) => text === 'release' && heard(text));
    await second.ready;
    // Let the UNSUBSCRIBE reach the server before the release (node-redis writes in a setImmediate, and a PUBLISH
    // on another connection could otherwise overtake it): one more tick, then one round trip of the publisher.
    await new Promise((resolve) => setImmediate(resolve));
    await publish(channel, 'after the unsubscribe');
    await publish(channel, 'release');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no message on ${channel} within ${HEARD_WITHIN_MS} ms: the re-subscription was lost`)),
        HEARD_WITHIN_MS,
      );
    });
    try {
      return await Promise.race([message, timeout]);
    } finally {
      clearTimeout(timer);
      second.unsubscribe();
    }
  } finally {
    await subscriber.close();
  }
}
