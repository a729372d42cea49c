/** One row of the chaos table: what ran, against what, under which fault, what it measured, and whether it held. */
export interface ScenarioResult {
  /** e.g. '2 pauses'. */
  readonly scenario: string;
  readonly backend: string;
  readonly fault: string;
  /** In display order, e.g. { sections: 240, 'stale ops rejected': 3 }. */
  readonly figures: Record<string, string | number>;
  readonly checks: readonly Check[];
  readonly durationMs: number;
}

export interface Check {
  readonly name: string;
  readonly pass: boolean;
  /** What was seen, shown when it failed. */
  readonly detail?: string;
}

export function passed(result: ScenarioResult): boolean {
  return result.checks.every((check) => check.pass);
}

/** The failed checks as readable lines, for a Jest assertion that prints what went wrong. */
export function failures(result: ScenarioResult): string[] {
  return result.checks
    .filter((check) => !check.pass)
    .map((check) => `${check.name}${check.detail ? `: ${check.detail}` : ''}`);
}

/** Collects checks while a scenario runs. */
export class Checks {
  readonly list: Check[] = [];

  that(name: string, pass: boolean, detail?: unknown): void {
    this.list.push({
      name,
      pass,
      ...(detail !== undefined && { detail: typeof detail === 'string' ? detail : JSON.stringify(detail, bigints) }),
    });
  }
}

function bigints(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

/** ms with one decimal, or '-' when there is nothing to show. */
export function ms(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '-' : `${value.toFixed(value >= 100 ? 0 : 1)} ms`;
}

/** The p-th percentile (0-100) of `values` by nearest rank; undefined when empty. */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

/** The largest defined value; undefined when there is none. A loop: spreading 10^5 values would overflow the stack. */
export function maxOf(values: readonly (number | undefined)[]): number | undefined {
  let max: number | undefined;
  for (const value of values) if (value !== undefined && (max === undefined || value > max)) max = value;
  return max;
}

/** One-line summary of a result, for logs. */
export function describeResult(result: ScenarioResult): string {
  const figures = Object.entries(result.figures)
    .map(([name, value]) => `${name}=${value}`)
    .join(', ');
  return `[${result.checks.every((check) => check.pass) ? 'pass' : 'FAIL'}] ${result.scenario} / ${result.backend} / ${result.fault}: ${figures}`;
}
