import { passed, ScenarioResult } from '../test/chaos/harness/result';

/** The chaos table as Markdown: scenario, backend, fault, figures, pass/fail. */
export function markdownTable(results: readonly ScenarioResult[]): string {
  const rows = results.map((result) => [
    result.scenario,
    result.backend,
    result.fault,
    Object.entries(result.figures)
      .map(([name, value]) => `${name}: ${value}`)
      .join('; '),
    passed(result)
      ? 'pass'
      : `**FAIL**: ${result.checks
          .filter((check) => !check.pass)
          .map((check) => check.name)
          .join('; ')}`,
  ]);
  const header = ['Scenario', 'Backend', 'Fault', 'Figures', 'Result'];
  const escape = (cell: string) => cell.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return [header, header.map(() => '---'), ...rows].map((row) => `| ${row.map(escape).join(' | ')} |`).join('\n');
}
