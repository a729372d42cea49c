import type { RegisterStats } from './register-protocol';
import type { SectionRecord } from './worker-protocol';

/** A fault the parent injected, for the "time until the lock was available again" figure. */
export interface InjectedFault {
  readonly kind: string;
  /** hrtime (ns) when the fault began. */
  readonly at: bigint;
  /** The worker it hit, whose own later grants do not count as recovery. */
  readonly worker?: string;
  /**
   * Only grants recorded after this count as recovery (default `at`): e.g. once a crashed server is back,
   * since a grant recorded while it was down is a reply that left before the crash.
   */
  readonly grantsAfter?: bigint;
}

/** Two sections of one key held by different holders at the same time. */
export interface Overlap {
  readonly key: string;
  readonly first: SectionRecord;
  readonly second: SectionRecord;
  /** ms by which `second` began before `first` ended (released, or its validity ran out for `unsafe`). */
  readonly byMs: number;
}

export interface HistoryReport {
  readonly sections: number;
  /**
   * Sections another holder was granted into before they ended (the first such grant for each): the earlier
   * holder was paused, starved or cut off past its validity (a zombie), or the lock service double-granted.
   */
  readonly overlaps: Overlap[];
  /**
   * The lock service's own violations (one entry per section): a grant while the earlier holder was still
   * inside the validity the library had promised it. Must be zero on every backend and under every fault, except where the server
   * itself forgot the lock (a Redis restart without persistence), which only fencing can cover.
   */
  readonly unsafeOverlaps: Overlap[];
  /** Grants (per key, in time order) whose fencing token did not exceed the previous grant's. */
  readonly tokenOrderViolations: number;
  /** Register operations refused because a higher token had been seen (fenced register). */
  readonly staleRejected: number;
  /** Register operations with a lower token than one seen before that were accepted (unfenced control). */
  readonly staleAccepted: number;
  /** Writes the register acknowledged. */
  readonly acknowledged: number;
  /** Sum of the register's values: what the acknowledged increments add up to if none was lost. */
  readonly finalValue: number;
  /** Acknowledged increments that the register no longer counts: overwritten by a stale read-modify-write. */
  readonly lostUpdates: number;
  /** Sections into which a worker injected a pause or a blocked loop, and what became of their writes. */
  readonly faultedSections: number;
  readonly faultedWritesFenced: number;
  readonly faultedWritesAccepted: number;
  /** For each faulted section: ms from the end of the fault until the holder's signal fired (undefined: never). */
  readonly signalDelaysMs: (number | undefined)[];
  /** For each injected fault: ms until another holder was granted the lock (undefined: nobody was). */
  readonly recoveryMs: (number | undefined)[];
}

/** Rounding of expiresAt to whole ms and Date.now()'s resolution, when validity is turned into hrtime. */
const VALIDITY_TOLERANCE_NS = 3_000_000n;

export function checkHistory(
  sections: readonly SectionRecord[],
  register: RegisterStats,
  faults: readonly InjectedFault[] = [],
): HistoryReport {
  const byKey = new Map<string, SectionRecord[]>();
  for (const section of sections) {
    let list = byKey.get(section.key);
    if (!list) byKey.set(section.key, (list = []));
    list.push(section);
  }
  const overlaps: Overlap[] = [];
  const unsafeOverlaps: Overlap[] = [];
  const overlapped = new Set<SectionRecord>();
  const unsafe = new Set<SectionRecord>();
  let tokenOrderViolations = 0;
  for (const [key, list] of byKey) {
    list.sort((a, b) => compare(BigInt(a.acquiredAt), BigInt(b.acquiredAt)));
    let active: SectionRecord[] = [];
    for (let i = 0; i < list.length; i++) {
      const current = list[i];
      const start = BigInt(current.acquiredAt);
      if (i > 0 && BigInt(list[i - 1].token) >= BigInt(current.token)) tokenOrderViolations += 1;
      active = active.filter((earlier) => BigInt(earlier.releasedAt) > start);
      for (const earlier of active) {
        if (holderOf(earlier) === holderOf(current)) continue;
        const released = BigInt(earlier.releasedAt);
        // One entry per overlapped section (a long zombie overlaps every section granted while it slept).
        if (!overlapped.has(earlier)) {
          overlapped.add(earlier);
          overlaps.push({ key, first: earlier, second: current, byMs: Number(released - start) / 1e6 });
        }
        const promisedEnd = min(released, BigInt(earlier.validUntil) - VALIDITY_TOLERANCE_NS);
        if (promisedEnd > start && !unsafe.has(earlier)) {
          unsafe.add(earlier);
          unsafeOverlaps.push({ key, first: earlier, second: current, byMs: Number(promisedEnd - start) / 1e6 });
        }
      }
      active.push(current);
    }
  }

  let staleRejected = 0;
  let staleAccepted = 0;
  let acknowledged = 0;
  let finalValue = 0;
  for (const stats of Object.values(register.keys)) {
    staleRejected += stats.rejectedReads + stats.rejectedWrites;
    staleAccepted += stats.staleAccepted;
    acknowledged += stats.accepted;
    finalValue += stats.value;
  }

  const faulted = sections.filter((section) => section.fault !== undefined);
  return {
    sections: sections.length,
    overlaps,
    unsafeOverlaps,
    tokenOrderViolations,
    staleRejected,
    staleAccepted,
    acknowledged,
    finalValue,
    lostUpdates: acknowledged - finalValue,
    faultedSections: faulted.length,
    faultedWritesFenced: faulted.filter((section) => section.write === 'stale').length,
    faultedWritesAccepted: faulted.filter((section) => section.write === 'ok').length,
    signalDelaysMs: faulted.map((section) =>
      section.lostAt === undefined || section.faultEnd === undefined
        ? undefined
        : Number(BigInt(section.lostAt) - BigInt(section.faultEnd)) / 1e6,
    ),
    recoveryMs: faults.map((fault) => recoveryAfter(sections, fault)),
  };
}

/** ms from the fault to the first grant to anyone but the faulted worker. */
export function recoveryAfter(sections: readonly SectionRecord[], fault: InjectedFault): number | undefined {
  const after = fault.grantsAfter ?? fault.at;
  let first: bigint | undefined;
  for (const section of sections) {
    if (fault.worker !== undefined && section.worker === fault.worker) continue;
    const at = BigInt(section.acquiredAt);
    if (at > after && (first === undefined || at < first)) first = at;
  }
  return first === undefined ? undefined : Number(first - fault.at) / 1e6;
}

function holderOf(section: SectionRecord): string {
  return `${section.worker}/${section.contender}`;
}

function compare(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
