import type { RedlockInstance } from './redlock-instance';

/**
 * The acquire calls one waiter sent, per instance. A waiter's cleanup (taking its writer's intent back) must
 * run on an instance only after every acquire sent there settled: a round is decided by the first majority,
 * so the others' calls may still be running, and one that answers "busy" after the cleanup would leave the
 * intent behind. Ordering on the connection alone is not enough: an acquire that met NOSCRIPT (a restarted
 * instance) is sent again as EVAL after its reply, behind a cleanup sent in the meantime.
 */
export class SentCalls {
  private readonly pending = new Map<RedlockInstance, Set<Promise<unknown>>>();
  private readonly instances = new Set<RedlockInstance>();

  add(instance: RedlockInstance, call: Promise<unknown>): void {
    this.instances.add(instance);
    let calls = this.pending.get(instance);
    if (!calls) this.pending.set(instance, (calls = new Set()));
    calls.add(call);
    const settle = () => calls.delete(call);
    call.then(settle, settle);
  }

  /** The instances any call was sent to (it may have run even if it failed: the reply can be what was lost). */
  get sentTo(): readonly RedlockInstance[] {
    return [...this.instances];
  }

  /** Resolves once every call sent to `instance` so far has settled (never rejects). */
  async settled(instance: RedlockInstance): Promise<void> {
    await Promise.allSettled([...(this.pending.get(instance) ?? [])]);
  }
}
