import { Samples, summarize, Summary } from './stats';

/** One acquisition on the hot key, in wall-clock ms (see clock.ts), possibly from several processes. */
export interface GrantRecord {
  /** Just before acquire() was called. */
  readonly arrive: number;
  /** When acquire() resolved. */
  readonly grant: number;
  /** Just before release() was called. */
  readonly release: number;
}

export interface GrantAnalysis {
  readonly grants: number;
  readonly grantsPerSecond: number;
  /**
   * For each release while others were waiting: release -> the first grant to one of those waiters.
   * A releaser that comes back and takes the lock again does not end the sample; its waiters still wait.
   */
  readonly handoff: Summary;
  /** arrive -> grant. */
  readonly wait: Summary;
  /** Longest wait, counting contenders still waiting when the window closed. */
  readonly maxWait: number;
  /** Grants that went to a contender while one that arrived earlier was still waiting. */
  readonly inversions: number;
  /** A grant before the previous holder's release stamp: two holders at once (must be 0). */
  readonly overlaps: number;
  /** Mean grant -> release stamp (the hold) in ms, over the grants inside the windows. */
  readonly meanHold: number;
}

/** One timed window of grants on the hot key: the records of every process, and the window's bounds. */
export interface GrantWindow {
  readonly records: readonly GrantRecord[];
  readonly start: number;
  readonly end: number;
}

/**
 * Reads the grants inside [start, end]. Records granted after `end` (contenders that were still waiting when
 * the run stopped) only count towards inversions and the maximum wait.
 */
export function analyzeGrants(records: readonly GrantRecord[], start: number, end: number): GrantAnalysis {
  return analyzeWindows([{ records, start, end }]);
}

/** analyzeGrants over several windows taken apart in time: counts add up, waits and handoffs are pooled. */
export function analyzeWindows(windows: readonly GrantWindow[]): GrantAnalysis {
  const wait = new Samples();
  const handoff = new Samples();
  let grants = 0;
  let measuredMs = 0;
  let overlaps = 0;
  let inversions = 0;
  let maxWait = 0;
  let heldMs = 0;
  for (const { records, start, end } of windows) {
    const ordered = [...records].sort((a, b) => a.grant - b.grant);
    const inWindow = ordered.filter((record) => record.grant >= start && record.grant <= end);
    for (let index = 0; index < inWindow.length; index++) {
      const current = inWindow[index];
      wait.push(current.grant - current.arrive);
      heldMs += current.release - current.grant;
      const previous = inWindow[index - 1];
      if (previous && current.grant < previous.release) overlaps++;
    }
    for (const record of ordered) {
      if (record.arrive > end) continue;
      maxWait = Math.max(maxWait, Math.min(record.grant, end) - record.arrive);
    }
    for (const value of handoffs(inWindow).values()) handoff.push(value);
    inversions += countInversions(ordered, end);
    grants += inWindow.length;
    measuredMs += end - start;
  }
  return {
    grants,
    grantsPerSecond: (grants * 1000) / measuredMs,
    handoff: summarize(handoff.values()),
    wait: summarize(wait.values()),
    maxWait,
    inversions,
    overlaps,
    meanHold: grants > 0 ? heldMs / grants : NaN,
  };
}

/** Walks grants from last to first, remembering the earliest arrival among everyone granted later. */
function countInversions(ordered: readonly GrantRecord[], end: number): number {
  let earliestLaterArrival = Infinity;
  let inversions = 0;
  for (let index = ordered.length - 1; index >= 0; index--) {
    const record = ordered[index];
    if (record.grant <= end && earliestLaterArrival < record.arrive) inversions++;
    if (record.arrive <= end) earliestLaterArrival = Math.min(earliestLaterArrival, record.arrive);
  }
  return inversions;
}

/**
 * Grants are sequential, so for the release of grant i the waiters are the later grants j that arrived by
 * then; the handoff ends at the first of them. Walking backwards with a stack of the running minimum of
 * arrivals (nearest first, arrivals strictly decreasing) finds that j by binary search: O(n log n).
 */
function handoffs(ordered: readonly GrantRecord[]): Samples {
  const samples = new Samples();
  const stack: number[] = [];
  for (let index = ordered.length - 1; index >= 0; index--) {
    const released = ordered[index].release;
    // The nearest later grant whose arrival is <= released: the stack is sorted by arrival, deepest smallest.
    let low = 0;
    let high = stack.length - 1;
    let found = -1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      if (ordered[stack[middle]].arrive <= released) {
        found = middle;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    if (found >= 0) samples.push(ordered[stack[found]].grant - released);
    while (stack.length > 0 && ordered[stack[stack.length - 1]].arrive >= ordered[index].arrive) stack.pop();
    stack.push(index);
  }
  return samples;
}
