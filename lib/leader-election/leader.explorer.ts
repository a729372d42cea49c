import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { ignoreElements, lastValueFrom } from 'rxjs';
import { delay } from '../utils/abort';
import { LOGGER_CONTEXT, ON_LEADER_METADATA } from '../distributed-lock.constants';
import { LeaderElection } from './leader-election.service';
import type { Leadership } from './leadership';
import type { OnLeaderMetadata } from './on-leader.decorator';

/** Pause before campaigning again after a leadership ended or a campaign failed, so nothing spins. */
const CAMPAIGN_AGAIN_MS = 1_000;
/** Shutdown waits this long for @OnLeader methods to settle after their stop signal aborted. */
const SHUTDOWN_GRACE_MS = 10_000;

type LeaderMethod = (leadership: Leadership, stop: AbortSignal) => unknown;

/** Finds `@OnLeader` methods of singleton providers and campaigns for each, in the background. */
@Injectable()
export class LeaderExplorer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(LOGGER_CONTEXT);
  private readonly stopper = new AbortController();
  private readonly loops = new Set<Promise<void>>();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly elections: LeaderElection,
  ) {}

  onApplicationBootstrap(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const instance: unknown = wrapper.instance;
      if (!instance || typeof instance !== 'object' || wrapper.isAlias) continue;
      const prototype = Object.getPrototypeOf(instance) as Record<string, unknown> | null;
      if (!prototype) continue;
      const className = instance.constructor?.name ?? String(wrapper.name);
      for (const methodName of this.scanner.getAllMethodNames(prototype)) {
        const method = prototype[methodName];
        if (typeof method !== 'function') continue;
        const metadata = this.reflector.get<OnLeaderMetadata | undefined>(ON_LEADER_METADATA, method);
        if (!metadata) continue;
        const where = `${className}.${methodName}`;
        if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
          this.logger.warn(
            `@OnLeader on ${where} is ignored: it needs a singleton provider (this one is request-scoped or transient).`,
          );
          continue;
        }
        const loop = this.lead(instance as Record<string, LeaderMethod>, methodName, where, metadata);
        this.loops.add(loop);
        void loop.finally(() => this.loops.delete(loop));
      }
    }
  }

  /**
   * Stops campaigning and aborts the methods' stop signals, then waits (up to SHUTDOWN_GRACE_MS) for the methods
   * to settle and their leaderships to be resigned.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopper.abort();
    if (this.loops.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), SHUTDOWN_GRACE_MS)));
    const outcome = await Promise.race([Promise.allSettled([...this.loops]), grace]);
    clearTimeout(timer);
    if (outcome === 'late') {
      this.logger.warn(
        `@OnLeader methods still run ${SHUTDOWN_GRACE_MS} ms after shutdown began: have them return when their stop signal aborts.`,
      );
    }
  }

  private async lead(
    instance: Record<string, LeaderMethod>,
    methodName: string,
    where: string,
    metadata: OnLeaderMetadata,
  ): Promise<void> {
    const stop = this.stopper.signal;
    while (!stop.aborted) {
      let leadership: Leadership;
      try {
        leadership = await this.elections.campaign(metadata.name, { ...metadata.options, signal: stop });
      } catch (error) {
        if (stop.aborted) return;
        this.logger.error(
          `@OnLeader ${where}: campaigning for "${metadata.name}" failed; trying again in ${CAMPAIGN_AGAIN_MS} ms. ${String(error)}`,
        );
        await delay(CAMPAIGN_AGAIN_MS, stop).catch(() => undefined);
        continue;
      }
      // Aborts when the leadership is lost or the application shuts down (a resign alone does not abort leadership.signal).
      const run = new AbortController();
      const end = () => run.abort(leadership.signal.aborted ? leadership.signal.reason : stop.reason);
      leadership.signal.addEventListener('abort', end, { once: true });
      stop.addEventListener('abort', end, { once: true });
      try {
        const result = instance[methodName](leadership, run.signal);
        if (isPromiseLike(result)) {
          await result;
          // The method succeeded: a failed resign is the server's (the leadership then expires after its ttl).
          await leadership
            .resign()
            .catch((error: unknown) =>
              this.logger.warn(
                `@OnLeader ${where}: could not resign "${metadata.name}" (term ${leadership.term}); it expires after its ttl. ${String(error)}`,
              ),
            );
        } else {
          // Held until lost (events$ errors) or resigned (it completes), e.g. on shutdown.
          await lastValueFrom(leadership.events$.pipe(ignoreElements()), { defaultValue: undefined });
        }
      } catch (error) {
        if (leadership.state !== 'lost')
          this.logger.error(
            `@OnLeader ${where} failed while leading "${metadata.name}" (term ${leadership.term}): ${String(error)}`,
          );
        await leadership.resign().catch(() => undefined);
      } finally {
        leadership.signal.removeEventListener('abort', end);
        stop.removeEventListener('abort', end);
      }
      await delay(CAMPAIGN_AGAIN_MS, stop).catch(() => undefined);
    }
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';
}
