import { BeforeApplicationShutdown, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LOGGER_CONTEXT } from '../distributed-lock.constants';
import { ScheduledLockConfigError } from '../errors';
import { LockService } from '../lock.service';
import { jobTimingOf } from './job-timing';
import { RunningCalls } from '../utils/running-calls';
import { registerScheduledJob, ScheduledJob, scheduledJobOf } from './scheduled-job';
import { scheduledLockOf } from './scheduled-lock.decorator';

/** Nest's InstanceWrapper, typed through the public DiscoveryService rather than a deep import. */
type InstanceWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/**
 * Finds `@ScheduledLock` methods when the module initialises (before @nestjs/schedule starts any job, on
 * application bootstrap), checks them, and gives each instance's method its LockService and schedule.
 * Anything that cannot work fails here, at startup.
 */
@Injectable()
export class ScheduledLockExplorer implements OnModuleInit, BeforeApplicationShutdown {
  private readonly running = new RunningCalls();
  private readonly logger = new Logger(LOGGER_CONTEXT);

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly locks: LockService,
  ) {}

  onModuleInit(): void {
    for (const wrapper of [...this.discovery.getControllers(), ...this.discovery.getProviders()]) this.explore(wrapper);
  }

  /**
   * Runs before every module's onApplicationShutdown, so before LockService closes: running firings finish with
   * their lock (and leave it for lockAtLeastFor), and firings from now on are skipped.
   */
  async beforeApplicationShutdown(): Promise<void> {
    // Firings never wait for their lock (one instance takes it, the others skip): none is refused here.
    const { finished: waited } = await this.running.close();
    if (waited > 0) this.logger.log(`Shutdown waited for ${waited} running @ScheduledLock job(s) to finish.`);
  }

  private explore(wrapper: InstanceWrapper): void {
    if (wrapper.isAlias) return;
    // A class provider that Nest has not instantiated (request-scoped, in some versions) is still checked, by its class.
    const classPrototype = wrapper.inject
      ? undefined
      : ((wrapper.metatype as Function | undefined)?.prototype as object | undefined);
    const prototype = objectPrototype(wrapper.instance) ?? classPrototype;
    if (!prototype) return;
    const methodNames = this.scanner
      .getAllMethodNames(prototype)
      .filter((name) => scheduledLockOf(prototype[name as keyof object]));
    if (methodNames.length === 0) return;
    const className = (prototype.constructor as Function | undefined)?.name ?? String(wrapper.name);
    if (!wrapper.isDependencyTreeStatic()) {
      throw new ScheduledLockConfigError(
        `${className}.${methodNames[0]}`,
        `${className} is request-scoped (or depends on a request-scoped provider), and a scheduled job has no request: ` +
          `@nestjs/schedule does not run it. Move the job to a singleton provider and inject what it needs there.`,
      );
    }
    // Transient providers have one instance per consumer.
    const instances = wrapper.isTransient
      ? wrapper
          .getStaticTransientInstances()
          .flatMap((perContext) => (perContext?.instance ? [perContext.instance as object] : []))
      : wrapper.instance && typeof wrapper.instance === 'object'
        ? [wrapper.instance as object]
        : [];
    for (const methodName of methodNames) {
      const where = `${className}.${methodName}`;
      const method = prototype[methodName as keyof object] as Function;
      const metadata = scheduledLockOf(method)!;
      const timing = jobTimingOf(method, metadata.name, where);
      for (const instance of instances) {
        // The same object can be registered twice (useValue in two modules); the first module's LockService keeps it.
        if (!scheduledJobOf(instance, methodName))
          registerScheduledJob(
            instance,
            methodName,
            new ScheduledJob(this.locks, where, metadata, timing, this.running),
          );
      }
    }
  }
}

function objectPrototype(instance: unknown): object | undefined {
  return instance && typeof instance === 'object'
    ? ((Object.getPrototypeOf(instance) as object | null) ?? undefined)
    : undefined;
}
