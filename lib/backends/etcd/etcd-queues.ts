import type { AcquireRequest } from '../lock-backend.interface';
import type { QueueRules } from './etcd-queue-rules';
import { readerQueue } from './etcd-reader-queue';
import { semaphoreQueue } from './etcd-semaphore-queue';
import { writerQueue } from './etcd-writer-queue';

/** How many names' rules are kept for reuse; past it, the oldest go. */
const RECENT_RULES = 1_024;
const recentRules = new Map<string, QueueRules>();

/**
 * The queue a request joins: a semaphore's, or the lock's as reader or as writer (exclusive is write). Kept
 * apart from etcd-queue-rules.ts, which only declares the contract, so the queue files import no cycle.
 * Rules depend on the name and kind alone, so those of recent names are reused: encoding the key and building
 * its range buffers was a measurable part of an uncontended acquire's own work.
 */
export function queueRulesFor(request: AcquireRequest): QueueRules {
  const kind = request.permits !== undefined ? `s${request.permits}` : request.mode === 'read' ? 'r' : 'w';
  const id = `${kind}\0${request.namespace}\0${request.key}`;
  let rules = recentRules.get(id);
  if (!rules) {
    if (recentRules.size >= RECENT_RULES) recentRules.delete(recentRules.keys().next().value!);
    rules = newQueueRules(request);
    recentRules.set(id, rules);
  }
  return rules;
}

function newQueueRules(request: AcquireRequest): QueueRules {
  if (request.permits !== undefined) return semaphoreQueue(request.namespace, request.key, request.permits);
  if (request.mode === 'read') return readerQueue(request.namespace, request.key);
  return writerQueue(request.namespace, request.key);
}
