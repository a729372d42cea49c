import type { AcquireRequest } from '../lock-backend.interface';
import type { QueueRules } from './etcd-queue-rules';
import { readerQueue } from './etcd-reader-queue';
import { semaphoreQueue } from './etcd-semaphore-queue';
import { writerQueue } from './etcd-writer-queue';

/**
 * The queue a request joins: a semaphore's, or the lock's as reader or as writer (exclusive is write). Kept
 * apart from etcd-queue-rules.ts, which only declares the contract, so the queue files import no cycle.
 */
export function queueRulesFor(request: AcquireRequest): QueueRules {
  if (request.permits !== undefined) return semaphoreQueue(request.namespace, request.key, request.permits);
  if (request.mode === 'read') return readerQueue(request.namespace, request.key);
  return writerQueue(request.namespace, request.key);
}
