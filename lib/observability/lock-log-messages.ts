import type { LockEvent } from '../lock-event';
import { describeError, redactCredentials } from '../utils/redact';

/**
 * One line per lock event, for people reading logs. Carries what an operator needs to correlate (key, fencing
 * token, holder, request id) and nothing secret: events hold no owner token, and error texts lose credentials.
 */
export function describeLockEvent(event: LockEvent): string {
  const context = contextOf(event);
  switch (event.type) {
    case 'acquired':
      return `Acquired "${event.key}" after waiting ${event.waitTime} ms (${context})`;
    case 'renewed':
      return `Renewed "${event.key}" (#${event.renewalCount}), valid until ${new Date(event.expiresAt).toISOString()} (${context})`;
    case 'released':
      return `Released "${event.key}" after holding it ${event.holdTime} ms (${context})`;
    case 'timeout':
      return `Gave up waiting for "${event.key}" after ${event.waitTime} ms: another owner kept it (${context})`;
    case 'at-risk':
      return (
        `Lock "${event.key}" is at risk: a renewal failed (${describeError(event.error)}), ${event.remaining} ms of validity left; ` +
        `the watchdog keeps retrying (${context})`
      );
    case 'lost':
      return (
        `Lost lock "${event.key}" after holding it ${event.holdTime} ms: ${redactCredentials(event.reason)}. ` +
        `Work guarded by it is no longer exclusive (${context})`
      );
  }
}

function contextOf(event: LockEvent): string {
  const parts = [`family ${event.family}`, `mode ${event.mode}`];
  if ('fencingToken' in event) parts.push(`fencing token ${event.fencingToken}`);
  parts.push(`holder ${event.holder}`, `backend ${event.backend}`);
  if (event.requestId !== undefined) parts.push(`request ${event.requestId}`);
  return parts.join(', ');
}
