import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { distinctUntilChanged, Observable } from 'rxjs';
import { runInScopeOf } from '../context/lock-context';
import { LockNotSupportedError, LockServiceClosedError } from '../errors';
import { backendErrorOf } from '../errors/lock-backend.error';
import { LockService } from '../lock.service';
import { DEFAULT_OPERATION_TIMEOUT } from '../lock-options';
import { ClosableWaits } from '../backends/shared/closable-waits';
import { newOwnerToken } from '../utils/owner-token';
import { checkOptionNames, checkTtl, optionNames, validateKeyPrefix, validateLockKey } from '../utils/validate';
import { withDeadline } from '../utils/deadline';
import { monotonicNow } from '../utils/clock';
import { ElectionBackend, ElectionGrant, LeaderInfo, supportsElections } from './election-backend.interface';
import {
  CampaignOptions,
  DEFAULT_ELECTION_PREFIX,
  DEFAULT_ELECTION_TTL,
  LeaderElectionOptions,
} from './leader-election.options';
import { Leadership } from './leadership';

const ELECTION_OPTIONS = optionNames<LeaderElectionOptions>({ keyPrefix: true, ttl: true, operationTimeout: true });

/**
 * Leader election on the module's backend. `campaign(name)` resolves once this instance leads, with a
 * Leadership (term = fencing token, signal, events$, proclaim, resign); `observe(name)` follows who leads.
 *
 * On etcd the layout is Go's `concurrency.Election` (so `etcdctl elect` takes part); on ZooKeeper, Curator's
 * LeaderLatch. Leaderships still held are resigned before application shutdown, so a successor takes over at once.
 */
@Injectable()
export class LeaderElection implements BeforeApplicationShutdown {
  private readonly keyPrefix: string;
  private readonly ttl: number;
  private readonly operationTimeout: number;
  private readonly held = new Set<Leadership>();
  private readonly waits = new ClosableWaits();
  private electionBackend: ElectionBackend | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly locks: LockService,
    options: LeaderElectionOptions = {},
  ) {
    checkOptionNames(options, ELECTION_OPTIONS, 'LeaderElection options (forRoot({ elections }))', '{ ttl: 15000 }');
    this.keyPrefix = validateKeyPrefix(options.keyPrefix ?? DEFAULT_ELECTION_PREFIX);
    this.ttl = options.ttl ?? DEFAULT_ELECTION_TTL;
    checkTtl(this.ttl);
    this.operationTimeout = options.operationTimeout ?? DEFAULT_OPERATION_TIMEOUT;
  }

  /**
   * Joins the election `name` and resolves once this instance leads. Waits as long as it takes; pass a `signal`
   * to stop waiting (the campaign then leaves and rejects with the signal's reason).
   */
  async campaign(name: string, options: CampaignOptions = {}): Promise<Leadership> {
    const election = validateLockKey(name);
    const ttl = options.ttl ?? this.ttl;
    checkTtl(ttl);
    const value = options.value ?? this.locks.holderId;
    if (typeof value !== 'string')
      throw new TypeError(`campaign() takes a string value, got ${typeof value}. JSON.stringify objects first.`);
    if (this.closing) throw new LockServiceClosedError(election);
    const backend = this.backend();
    const signal = options.signal ?? new AbortController().signal;
    let grant: ElectionGrant;
    try {
      grant = await this.waits.run(signal, (wait) => this.lead(backend, election, value, Math.ceil(ttl), wait));
    } catch (error) {
      // The caller stopped waiting: their reason, whether the backend was waiting for its turn or for a reply.
      if (signal.aborted) throw signal.reason;
      throw error;
    }
    const leadership = new Leadership({
      backend,
      name: election,
      value,
      ttl: Math.ceil(ttl),
      grant,
      operationTimeout: this.operationTimeout,
      onEnd: (ended) => this.held.delete(ended),
    });
    this.held.add(leadership);
    if (this.closing) {
      await leadership.resign().catch(() => undefined);
      throw new LockServiceClosedError(election);
    }
    return leadership;
  }

  /**
   * Campaigns until a grant with validity left. A grant whose reply came after its validity (a stalled server, a
   * blocked loop: the server granted it late, the validity counts from when we asked) would be lost the moment it
   * resolved: renew it once, and if that does not keep it, give it back and campaign again.
   */
  private async lead(
    backend: ElectionBackend,
    name: string,
    value: string,
    ttl: number,
    signal: AbortSignal,
  ): Promise<ElectionGrant> {
    for (;;) {
      const grant = await backend.campaign(
        { namespace: this.keyPrefix, name, value, ttl, token: newOwnerToken() },
        signal,
      );
      if (grant.validUntil > monotonicNow()) return grant;
      const validUntil = await withDeadline(backend.renew(grant, ttl), this.operationTimeout, () => undefined).catch(
        () => null,
      );
      if (typeof validUntil === 'number' && validUntil > monotonicNow()) return { ...grant, validUntil };
      await withDeadline(backend.resign(grant), this.operationTimeout, () => undefined).catch(() => false);
      if (signal.aborted) throw signal.reason;
    }
  }

  /**
   * The leader of `name` as the server sees it: `{ value, term }`, or null when nobody leads. Emits the current
   * leader on subscription, then on every change (new leader, proclaimed value, nobody). Errors when the backend
   * fails to follow the election; retry with rxjs `retry({ delay })` if you want it to keep going.
   */
  observe(name: string): Observable<LeaderInfo | null> {
    const election = validateLockKey(name);
    return new Observable<LeaderInfo | null>((subscriber) => {
      let backend: ElectionBackend;
      try {
        backend = this.backend();
      } catch (error) {
        return subscriber.error(error);
      }
      return backend.watch(
        this.keyPrefix,
        election,
        // From a shared connection, which carries the scope of whichever call opened it: deliver outside all.
        (leader) => runInScopeOf(undefined, () => subscriber.next(leader)),
        (error) => runInScopeOf(undefined, () => subscriber.error(error)),
        { operationTimeout: this.operationTimeout },
      );
    }).pipe(distinctUntilChanged((a, b) => a?.term === b?.term && a?.value === b?.value));
  }

  /** One read of who leads `name` now. */
  leader(name: string): Promise<LeaderInfo | null> {
    const election = validateLockKey(name);
    return withDeadline(this.backend().leader(this.keyPrefix, election), this.operationTimeout, () =>
      backendErrorOf(this.locks.backend, 'election leader', `no reply within ${this.operationTimeout} ms`),
    );
  }

  /** Whether this instance leads `name` now (a local answer: no server call). */
  isLeader(name: string): boolean {
    for (const leadership of this.held) if (leadership.name === name && leadership.isLeader) return true;
    return false;
  }

  /** Leaderships this instance holds now. */
  leaderships(): Leadership[] {
    return [...this.held];
  }

  /** Stops every campaign under way and resigns every leadership held. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.waits.abortAll(new LockServiceClosedError('(leader election)'));
      await Promise.allSettled([...this.held].map((leadership) => leadership.resign()));
      await this.electionBackend?.close();
    })();
    return this.closing;
  }

  /** Before LockService closes the backend (onApplicationShutdown), so resigning can still reach the server. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.close();
  }

  private backend(): ElectionBackend {
    if (this.electionBackend) return this.electionBackend;
    const backend = this.locks.backend;
    if (!supportsElections(backend)) {
      throw new LockNotSupportedError(
        backend.kind,
        'leader election',
        'use the memory, etcd, ZooKeeper or Redis backend (a Redlock majority has no single ordered store to elect on).',
      );
    }
    return (this.electionBackend = backend.createElectionBackend());
  }
}
