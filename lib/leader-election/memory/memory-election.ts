import type { LockBackend } from '../../backends/lock-backend.interface';
import { LockBackendError } from '../../errors';
import { monotonicNow } from '../../utils/clock';
import type { CampaignRequest, ElectionBackend, ElectionGrant, LeaderInfo } from '../election-backend.interface';

interface Contender {
  readonly term: bigint;
  value: string;
  /** Resolves the campaign when it reaches the front. */
  promote(): void;
}

interface Election {
  /** In join order: the first one leads. */
  readonly contenders: Contender[];
  readonly watchers: Set<(leader: LeaderInfo | null) => void>;
}

/**
 * The elections of one MemoryLockBackend: every LeaderElection on that backend (one process) sees the same ones.
 * A term is taken from one counter for all names when a contender joins, so it strictly increases per name too.
 */
class MemoryElectionStore {
  private readonly elections = new Map<string, Election>();
  private lastTerm = 0n;

  join(id: string, value: string, promote: () => void): Contender {
    const election = this.election(id);
    const contender: Contender = { term: ++this.lastTerm, value, promote };
    election.contenders.push(contender);
    if (election.contenders.length === 1) {
      contender.promote();
      this.publish(id, election);
    }
    return contender;
  }

  /** Removes the contender; if it led, the next one leads. True when it was still there. */
  leave(id: string, contender: Contender): boolean {
    const election = this.elections.get(id);
    const index = election?.contenders.indexOf(contender) ?? -1;
    if (!election || index < 0) return false;
    election.contenders.splice(index, 1);
    if (index === 0) {
      election.contenders[0]?.promote();
      this.publish(id, election);
    }
    this.forgetIfIdle(id, election);
    return true;
  }

  leads(id: string, contender: Contender): boolean {
    return this.elections.get(id)?.contenders[0] === contender;
  }

  proclaim(id: string, contender: Contender, value: string): boolean {
    const election = this.elections.get(id);
    if (election?.contenders[0] !== contender) return false;
    contender.value = value;
    this.publish(id, election);
    return true;
  }

  leader(id: string): LeaderInfo | null {
    const first = this.elections.get(id)?.contenders[0];
    return first ? { value: first.value, term: first.term } : null;
  }

  watch(id: string, onChange: (leader: LeaderInfo | null) => void): () => void {
    const election = this.election(id);
    election.watchers.add(onChange);
    onChange(this.leader(id));
    return () => {
      election.watchers.delete(onChange);
      this.forgetIfIdle(id, election);
    };
  }

  private publish(id: string, election: Election): void {
    const leader = this.leader(id);
    for (const watcher of [...election.watchers]) watcher(leader);
  }

  private election(id: string): Election {
    let election = this.elections.get(id);
    if (!election) this.elections.set(id, (election = { contenders: [], watchers: new Set() }));
    return election;
  }

  private forgetIfIdle(id: string, election: Election): void {
    if (election.contenders.length === 0 && election.watchers.size === 0 && this.elections.get(id) === election)
      this.elections.delete(id);
  }
}

const stores = new WeakMap<LockBackend, MemoryElectionStore>();

interface MemoryGrantState {
  readonly id: string;
  readonly contender: Contender;
}

/** In-process elections for tests and development: leaders never expire on their own, they resign or the process ends. */
export class MemoryElection implements ElectionBackend {
  readonly kind = 'memory';
  readonly address = 'in-process';
  private readonly store: MemoryElectionStore;
  private closed = false;

  constructor(backend: LockBackend) {
    let store = stores.get(backend);
    if (!store) stores.set(backend, (store = new MemoryElectionStore()));
    this.store = store;
  }

  campaign(request: CampaignRequest, signal: AbortSignal): Promise<ElectionGrant> {
    if (this.closed) return Promise.reject(this.closedError('campaign'));
    if (signal.aborted) return Promise.reject(signal.reason);
    const id = electionId(request.namespace, request.name);
    return new Promise<ElectionGrant>((resolve, reject) => {
      // eslint-disable-next-line prefer-const -- assigned after the closures below that read it are created
      let contender: Contender | undefined;
      let leading = false;
      const onAbort = () => {
        if (leading) return;
        this.store.leave(id, contender!);
        reject(signal.reason);
      };
      contender = this.store.join(id, request.value, () => {
        leading = true;
        signal.removeEventListener('abort', onAbort);
        // join() may promote synchronously, before `contender` is assigned: read it on the next microtask.
        queueMicrotask(() => {
          const state: MemoryGrantState = { id, contender: contender! };
          resolve({ term: contender!.term, validUntil: monotonicNow() + request.ttl, state });
        });
      });
      if (!leading) signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  async renew(grant: ElectionGrant, ttl: number): Promise<number | null> {
    const startedAt = monotonicNow();
    const { id, contender } = grant.state as MemoryGrantState;
    return this.store.leads(id, contender) ? startedAt + ttl : null;
  }

  async proclaim(grant: ElectionGrant, value: string): Promise<boolean> {
    const { id, contender } = grant.state as MemoryGrantState;
    return this.store.proclaim(id, contender, value);
  }

  async resign(grant: ElectionGrant): Promise<boolean> {
    const { id, contender } = grant.state as MemoryGrantState;
    return this.store.leave(id, contender);
  }

  async leader(namespace: string, name: string): Promise<LeaderInfo | null> {
    return this.store.leader(electionId(namespace, name));
  }

  watch(namespace: string, name: string, onChange: (leader: LeaderInfo | null) => void): () => void {
    return this.store.watch(electionId(namespace, name), onChange);
  }

  async close(): Promise<void> {
    // LeaderElection aborts its campaigns and resigns its leaderships itself; the store stays for other views.
    this.closed = true;
  }

  private closedError(operation: string): LockBackendError {
    return new LockBackendError('memory', this.address, `election ${operation}`, 'the election backend is closed');
  }
}

function electionId(namespace: string, name: string): string {
  return `${namespace}\u0000${name}`;
}
