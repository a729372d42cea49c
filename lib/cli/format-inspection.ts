import type { InspectedEntry } from '../backends/lock-backend.interface';
import type { LockInspection } from '../lock.service';
import { formatDuration } from './format-duration';
import { formatTable } from './format-table';

/**
 * The inspection as a person reads it in a terminal: the key and where it lives, then holders and waiters
 * as tables. Times are UTC ISO instants (unambiguous across servers) plus how long ago / how long left.
 */
export function formatInspection(inspection: LockInspection, now: number = Date.now()): string {
  const { holders, waiters } = inspection;
  const lines = [
    `Lock "${inspection.key}" in namespace "${inspection.namespace}" on ${inspection.backend} at ${inspection.address}`,
    `Checked at ${new Date(now).toISOString()}: ${summary(holders.length, waiters?.length)}`,
  ];
  if (holders.length > 0) {
    lines.push(
      '',
      'HOLDERS',
      formatTable(
        ['HOLDER', 'MODE', 'FENCING TOKEN', 'SINCE', 'HELD FOR', 'EXPIRES IN'],
        holders.map((entry) => [
          entry.holder ?? '?',
          modeOf(entry),
          entry.fencingToken?.toString() ?? '-',
          instant(entry.since),
          entry.since === undefined ? '-' : formatDuration(now - entry.since),
          expiry(entry.expiresAt, now),
        ]),
      ),
    );
  }
  if (waiters === undefined) {
    lines.push('', `WAITERS: not reported (the ${inspection.backend} backend keeps no queue on the server)`);
  } else if (waiters.length > 0) {
    lines.push(
      '',
      'WAITERS (in grant order)',
      formatTable(
        ['#', 'WAITER', 'MODE', 'SINCE', 'WAITING FOR'],
        waiters.map((entry, index) => [
          String(index + 1),
          entry.holder ?? '?',
          modeOf(entry),
          instant(entry.since),
          entry.since === undefined ? '-' : formatDuration(now - entry.since),
        ]),
      ),
    );
  }
  return lines.join('\n');
}

function summary(holders: number, waiters: number | undefined): string {
  const state = holders === 0 ? 'free' : holders === 1 ? 'held' : `held by ${holders}`;
  if (waiters === undefined || waiters === 0) return state;
  return `${state}, ${waiters} waiting`;
}

function modeOf(entry: InspectedEntry): string {
  return entry.permits === undefined ? entry.mode : `semaphore of ${entry.permits}`;
}

function instant(epochMs: number | undefined): string {
  return epochMs === undefined ? '-' : new Date(epochMs).toISOString();
}

function expiry(expiresAt: number | undefined, now: number): string {
  if (expiresAt === undefined) return '-';
  const left = expiresAt - now;
  return left >= 0 ? formatDuration(left) : `expired ${formatDuration(left)} ago`;
}
