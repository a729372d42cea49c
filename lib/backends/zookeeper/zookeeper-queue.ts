import type { AcquireRequest } from '../lock-backend.interface';
import type { OwnNodeWatches } from './own-node-watches';
import { ALL_MARKERS, excludesReaders, sortContenders } from './zookeeper-node-layout';
import type { ZooKeeperSession } from './zookeeper-session';

/**
 * The vocabulary of a ZooKeeper acquisition (ZooKeeperAcquisition): our node in a lock path's queue, the
 * recipes that share that queue skeleton, where a node stands in Curator's order, and how a waiter wakes.
 */

/** A release elsewhere may delete the empty lock path between our parent create and our node create. */
export const MAX_PARENT_ATTEMPTS = 5;

/** What an acquisition needs from its backend. */
export interface AcquisitionContext {
  readonly session: ZooKeeperSession;
  readonly ownNodes: OwnNodeWatches;
  /** Data of every contender node (Curator's default: this host's address). */
  readonly nodeData: Buffer;
  /** Registers clean-up work with the backend, so close() can wait for it. */
  track(work: Promise<unknown>): void;
  /** A namespace we lock in: its empty lock paths are reaped from now on (LockPathSweeper.reap). */
  useNamespace(namespace: string): void;
}

/**
 * Another Curator recipe on the same queue skeleton (LeaderLatch: marker `latch-`, the participant id as data).
 * Its nodes sort among themselves by the text after `marker`; the first one is granted.
 */
export interface ContenderRecipe {
  readonly marker: string;
  readonly nodeData: Buffer;
  /** The queue's parent path when it is not the key's lock path (a semaphore's `locks` and `leases` children). */
  readonly parent?: string;
  /**
   * Count-based admission (a semaphore's leases): our node is granted while the parent has at most `limit`
   * children, ours included, and a waiter watches the children list instead of a predecessor.
   */
  readonly limit?: number;
}

/** Our node in the queue. */
export interface Contender {
  readonly path: string;
  readonly name: string;
  readonly sessionId: string;
  /** The node's creation zxid: the fencing token. */
  readonly czxid: bigint;
  /**
   * The lock path's children, listed in the same pipeline as our node's Stat (a session's requests run in
   * order, so the listing sees our node): the first locate() uses it instead of another round trip.
   */
  firstListing?: { readonly children: Promise<string[] | null>; readonly sentAt: number };
}

export type Position =
  /** Our turn: first in line, or a reader with no writer ahead of it. */
  | { readonly kind: 'first'; readonly confirmedAt: number }
  | { readonly kind: 'behind'; readonly predecessor: string }
  /** More children than a counting recipe's limit; `watching` when the listing left a watch on the list. */
  | { readonly kind: 'full'; readonly watching: boolean }
  /** Our node is gone: its session expired, or someone deleted it. */
  | { readonly kind: 'gone' };

/** A one-shot wake-up. Firing it after the wait ended does nothing, so a late watch is harmless. */
export class Wakeup {
  private resolve!: () => void;
  readonly promise = new Promise<void>((resolve) => (this.resolve = resolve));
  readonly fire = (): void => this.resolve();
}

/**
 * Our place among the lock path's `children`, in Curator's order. A writer (or exclusive) needs to be first and
 * watches the node just before it; a reader needs no writer before it and watches the nearest one, so a run of
 * readers is admitted together and a writer's release wakes only the readers right behind it. A counting recipe
 * (semaphore leases) only counts the children, as Curator's InterProcessSemaphoreV2 does. `watching`: the
 * listing left a watch on the list.
 */
export function positionIn(
  children: readonly string[] | null,
  name: string,
  mode: AcquireRequest['mode'],
  recipe: ContenderRecipe | undefined,
  confirmedAt: number,
  watching: boolean,
): Position {
  if (children === null) return { kind: 'gone' };
  const limit = recipe?.limit;
  if (limit !== undefined) {
    if (!children.includes(name)) return { kind: 'gone' };
    return children.length <= limit ? { kind: 'first', confirmedAt } : { kind: 'full', watching };
  }
  const sorted = sortContenders(children, recipe ? [recipe.marker] : ALL_MARKERS);
  const index = sorted.indexOf(name);
  if (index < 0) return { kind: 'gone' };
  if (mode === 'read') {
    const writer = sorted.slice(0, index).findLast(excludesReaders);
    return writer === undefined ? { kind: 'first', confirmedAt } : { kind: 'behind', predecessor: writer };
  }
  if (index === 0) return { kind: 'first', confirmedAt };
  return { kind: 'behind', predecessor: sorted[index - 1] };
}
