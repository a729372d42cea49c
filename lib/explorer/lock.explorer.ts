import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LOGGER_CONTEXT } from '../distributed-lock.constants';
import { LockModuleMissingError, ScheduledLockConfigError } from '../errors';
import { LockInterceptor } from '../interceptors/lock.interceptor';
import { LockService } from '../lock.service';
import { isScheduledJob } from '../schedule/job-timing';
import { LockMetadataAccessor } from './lock-metadata.accessor';
import { addLateBinder, bindLockedVersion, hasLockedVersion, lockableOf } from '../decorators/lockable-method';
import { RunningCalls } from '../utils/running-calls';
import { createLockedMethod } from './locked-method';

/** Nest's InstanceWrapper, typed through the public DiscoveryService rather than a deep import. */
type InstanceWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/**
 * Interceptors only reach route handlers, so `@WithLock` methods of ordinary providers are found here, once the
 * module initialises, and a locked version is bound to each instance: the stand-in `@WithLock` put on the
 * prototype runs it from then on, also where another module copied the method before this one ran.
 * Controllers, WebSocket gateways' message handlers and GraphQL resolver methods are left to LockInterceptor.
 */
@Injectable()
export class LockExplorer implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger(LOGGER_CONTEXT);
  /** Calls of locked provider methods returning a Promise, until they settle. */
  private readonly running = new RunningCalls();
  private stopLateBinding?: () => void;
  /** Request-scoped providers already warned about. */
  private readonly warnedScoped = new WeakSet<InstanceWrapper>();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly metadata: LockMetadataAccessor,
    private readonly locks: LockService,
  ) {}

  onModuleInit(): void {
    this.warnOfOtherRegistrations();
    const controllers = this.discovery.getControllers();
    for (const wrapper of controllers) this.checkController(wrapper);
    const controllerClasses = new Set(controllers.map((wrapper) => wrapper.metatype));
    for (const wrapper of this.discovery.getProviders()) this.explore(wrapper, controllerClasses);
    this.stopLateBinding = addLateBinder((instance) => this.bindLate(instance));
  }

  /**
   * A stand-in ran on an instance with no locked version: if it is a provider of this app (a lazily loaded
   * module's, created after startup), or an instance of a transient provider's class (`moduleRef.resolve()` makes
   * one per call, kept where it cannot be listed), bind its locked versions now, as at startup.
   */
  private bindLate(instance: object): void {
    const wrapper = this.discovery
      .getProviders()
      .find(
        (candidate) =>
          !candidate.isAlias &&
          (candidate.instance === instance || (candidate.isTransient && candidate.metatype === instance.constructor)),
      );
    if (!wrapper) return;
    const controllerClasses = new Set(this.discovery.getControllers().map((controller) => controller.metatype));
    this.explore(wrapper, controllerClasses, instance);
  }

  /** The app is gone: its instances are not looked up any more (and the app is not kept in memory). */
  onApplicationShutdown(): void {
    this.stopLateBinding?.();
  }

  /**
   * Runs before every module's onApplicationShutdown, so before LockService closes and releases what it holds:
   * locked provider methods running now (a queue worker's job, an event listener) finish with their lock, rather
   * than have it released under them while another instance takes the key. Calls still waiting for their lock,
   * and calls starting later, are refused with LockServiceClosedError (createLockedMethod), except inside a
   * running locked call.
   */
  async beforeApplicationShutdown(): Promise<void> {
    const { finished, refused } = await this.running.close();
    if (finished > 0) this.logger.log(`Shutdown waited for ${finished} running @WithLock method call(s) to finish.`);
    if (refused > 0) {
      this.logger.log(`Shutdown refused ${refused} @WithLock method call(s) still waiting for their lock.`);
    }
  }

  /**
   * `forRoot` in two feature modules makes two LockServices, each with its own backend: on the memory backend
   * their locks do not exclude each other, and each runs its own elections. Say so once, from the first one.
   */
  private warnOfOtherRegistrations(): void {
    const services = this.discovery
      .getProviders()
      .filter((wrapper) => !wrapper.isAlias && wrapper.instance instanceof LockService)
      .map((wrapper) => wrapper.instance as LockService);
    const distinct = [...new Set(services)];
    if (distinct.length < 2 || distinct[0] !== this.locks) return;
    const memory = distinct.filter((service) => service.backend.kind === 'memory').length;
    this.logger.warn(
      `DistributedLockModule is registered ${distinct.length} times in this application (forRoot in several modules): ` +
        'each registration is a LockService and backend of its own' +
        (memory > 1 ? ', and the memory backends of these do not exclude each other' : '') +
        '. Register it once with { isGlobal: true }, or in one module that exports it, and import that module.',
    );
  }

  /**
   * A @WithLock controller whose module cannot see DistributedLockModule fails now, naming what to do, rather
   * than on its first request (Nest made that module's LockInterceptor without a LockService).
   */
  private checkController(wrapper: InstanceWrapper): void {
    const controller = wrapper.metatype as Function | undefined;
    const prototype = controller?.prototype as Record<string, unknown> | undefined;
    if (!controller || !prototype) return;
    this.requireLockService(wrapper, controller, prototype, (name) => !!this.metadata.getWithLock(prototype[name]));
  }

  /**
   * Throws LockModuleMissingError when the module of `host` (a controller, gateway or resolver) made its
   * LockInterceptor without a LockService and `host` has @WithLock on the class or on a method `locked` picks.
   */
  private requireLockService(
    wrapper: InstanceWrapper,
    host: Function,
    prototype: Record<string, unknown>,
    locked: (methodName: string) => boolean,
  ): void {
    const interceptor = wrapper.host?.injectables.get(LockInterceptor)?.instance as LockInterceptor | undefined;
    if (!interceptor || interceptor.hasLockService) return;
    const classLevel = this.metadata.getWithLock(host) !== undefined;
    // The interceptor may be there for another class of the module; this one may not use @WithLock.
    const method = classLevel ? undefined : this.scanner.getAllMethodNames(prototype).find(locked);
    if (!classLevel && method === undefined) return;
    throw new LockModuleMissingError(method === undefined ? host.name : `${host.name}.${method}`, wrapper.host?.name);
  }

  /** Binds the locked methods of `wrapper`'s instances, or of `only` (an instance found later, see bindLate). */
  private explore(wrapper: InstanceWrapper, controllerClasses: ReadonlySet<unknown>, only?: object): void {
    const instance: unknown = only ?? wrapper.instance;
    if (!instance || typeof instance !== 'object' || wrapper.isAlias) return;
    const prototype = Object.getPrototypeOf(instance) as Record<string, unknown> | null;
    // Controllers are locked by their LockInterceptor.
    if (!prototype || controllerClasses.has(instance.constructor)) return;
    const className = instance.constructor?.name ?? String(wrapper.name);
    const allMethodNames = this.scanner.getAllMethodNames(prototype);
    const isHandlerHost = allMethodNames.some((name) => this.metadata.isInterceptedHandler(prototype[name]));
    // On a gateway or resolver, a class-level @WithLock reaches every handler through its LockInterceptor.
    if (this.metadata.getWithLock(instance.constructor) && !isHandlerHost) {
      this.logger.warn(
        `@WithLock on the class ${className} has no effect: on providers it goes on each method to lock (class-level @WithLock is for controllers).`,
      );
    }
    // Its module must see DistributedLockModule, as a controller's must.
    if (isHandlerHost) {
      this.requireLockService(
        wrapper,
        instance.constructor,
        prototype,
        (name) => this.metadata.isInterceptedHandler(prototype[name]) && !!this.metadata.getWithLock(prototype[name]),
      );
    }
    // Gateway message handlers and resolver methods are route handlers: their LockInterceptor locks them.
    // A method is locked where its class or a base class declares it with @WithLock (an override without it runs
    // unlocked, and locks when it calls the base method with super).
    const methodNames = allMethodNames.filter(
      (name) =>
        lockableDeclarations(prototype, name).some((declared) => this.metadata.getWithLock(declared)) &&
        !this.metadata.isInterceptedHandler(prototype[name]),
    );
    if (methodNames.length === 0) return;
    const job = methodNames.find((name) => isScheduledJob(prototype[name]));
    if (job !== undefined) {
      // The scheduler keeps the method it found before this explorer runs: the lock would silently never be taken.
      throw new ScheduledLockConfigError(
        `${className}.${job}`,
        'use it here instead of @WithLock. @WithLock on a @Cron, @Interval or @Timeout method would never run, because ' +
          '@nestjs/schedule keeps the method it found before locks are applied; @ScheduledLock runs each firing on exactly one instance.',
      );
    }
    if (!wrapper.isDependencyTreeStatic()) {
      // Once per provider: instances found later (bindLate) may come one per request.
      if (this.warnedScoped.has(wrapper)) return;
      this.warnedScoped.add(wrapper);
      this.logger.warn(
        `${className} is request-scoped (or depends on a request-scoped provider), so @WithLock on ` +
          `${methodNames.map((name) => `${className}.${name}`).join(', ')} is ignored. ` +
          `Move the locked methods to a singleton provider, or lock with LockService.run() inside them.`,
      );
      return;
    }
    // Transient providers have one instance per consumer.
    const instances = only
      ? [only]
      : wrapper.isTransient
        ? wrapper
            .getStaticTransientInstances()
            .flatMap((perContext): unknown[] => (perContext?.instance ? [perContext.instance] : []))
        : [instance];
    for (const target of instances) {
      for (const methodName of methodNames)
        this.lockMethod(target as Record<string, unknown>, prototype, className, methodName);
    }
  }

  /**
   * Binds the locked version of every `@WithLock` declaration of `methodName` along the prototype chain: an
   * override's own, and the base class's that it reaches with `super`, each with its own keys.
   */
  private lockMethod(
    instance: Record<string, unknown>,
    prototype: Record<string, unknown>,
    className: string,
    methodName: string,
  ): void {
    for (const { owner, declared } of declarationsOf(prototype, methodName)) {
      const found = lockableOf(declared);
      const metadata = found && this.metadata.getWithLock(declared);
      // The same object can be registered twice (useValue in two modules); lock it once.
      if (!found || !metadata || hasLockedVersion(instance, found.lockable)) continue;
      const ownerName =
        owner === prototype ? className : ((owner.constructor as Function | undefined)?.name ?? className);
      const locked = createLockedMethod(this.locks, metadata, {
        instance,
        original: found.original,
        where: `${ownerName}.${methodName}`,
        returnType: Reflect.getMetadata('design:returntype', owner, methodName),
        running: this.running,
      });
      bindLockedVersion(instance, found.lockable, locked);
    }
  }
}

/** `methodName` as each class along the prototype chain declares it (its own property), most derived first. */
function declarationsOf(prototype: object, methodName: string): { owner: object; declared: unknown }[] {
  const found: { owner: object; declared: unknown }[] = [];
  for (
    let owner: object | null = prototype;
    owner && owner !== Object.prototype;
    owner = Object.getPrototypeOf(owner) as object | null
  ) {
    const descriptor = Object.getOwnPropertyDescriptor(owner, methodName);
    if (descriptor && 'value' in descriptor) found.push({ owner, declared: descriptor.value as unknown });
  }
  return found;
}

/** The declarations of `methodName` along the chain that are `@WithLock` stand-ins. */
function lockableDeclarations(prototype: object, methodName: string): unknown[] {
  return declarationsOf(prototype, methodName)
    .map(({ declared }) => declared)
    .filter((declared) => lockableOf(declared) !== undefined);
}
