/** Summary of a sample: the figures every table reports. Values keep the unit they were recorded in. */
export interface Summary {
  readonly count: number;
  readonly median: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

const EMPTY: Summary = { count: 0, median: NaN, p99: NaN, max: NaN, mean: NaN };

/** Nearest-rank percentile of an ascending array (p in 0..100). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function summarize(values: ArrayLike<number>): Summary {
  if (values.length === 0) return EMPTY;
  // A typed copy sorts numerically and much faster than an array of boxed numbers.
  const sorted = Float64Array.from(values).sort();
  let total = 0;
  for (const value of sorted) total += value;
  return {
    count: sorted.length,
    median: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1],
    mean: total / sorted.length,
  };
}

/** Grows like an array but stores raw doubles, so 100k latencies do not churn the heap we are measuring. */
export class Samples {
  private buffer = new Float64Array(1024);
  private size = 0;

  push(value: number): void {
    if (this.size === this.buffer.length) {
      const bigger = new Float64Array(this.buffer.length * 2);
      bigger.set(this.buffer);
      this.buffer = bigger;
    }
    this.buffer[this.size++] = value;
  }

  get length(): number {
    return this.size;
  }

  values(): Float64Array {
    return this.buffer.subarray(0, this.size);
  }
}
