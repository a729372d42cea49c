import type { Role } from '../peers/adapter';

export type Better = 'higher' | 'lower';

export interface Ranked {
  readonly role: Role;
}

/** The best value among rows of `role` (e.g. the best peer), NaN when there is none. */
export function bestOf<T extends Ranked>(
  rows: readonly T[],
  role: Role,
  value: (row: T) => number,
  better: Better,
): number {
  const values = rows
    .filter((row) => row.role === role)
    .map(value)
    .filter(Number.isFinite);
  if (values.length === 0) return NaN;
  return better === 'higher' ? Math.max(...values) : Math.min(...values);
}

/** Whether `ours` beats (or equals) `other` in the direction that is better. */
export function isAhead(ours: number, other: number, better: Better): boolean {
  if (!Number.isFinite(other)) return true;
  return better === 'higher' ? ours >= other : ours <= other;
}
