/** One table of the report, rendered the same way to stdout and to RESULTS.md (a padded Markdown table). */
export interface Table {
  readonly title: string;
  /** Settings and caveats printed under the title. */
  readonly notes: readonly string[];
  readonly headers: readonly string[];
  readonly rows: readonly (readonly string[])[];
  /** How many leading columns hold text (left-aligned); the rest are numbers (right-aligned). Default 1. */
  readonly textColumns?: number;
}

export interface Section {
  readonly heading: string;
  readonly text: readonly string[];
  readonly tables: readonly Table[];
}

export function renderTable(table: Table): string {
  const widths = table.headers.map((header, column) =>
    Math.max(header.length, ...table.rows.map((row) => (row[column] ?? '').length)),
  );
  const isText = (column: number) => column < (table.textColumns ?? 1);
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, column) => (isText(column) ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join(' | ')} |`;
  const rule = `|${widths.map((width, column) => (isText(column) ? `:${'-'.repeat(width + 1)}` : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  const notes = table.notes.map((note) => `- ${note}`);
  return [
    `#### ${table.title}`,
    '',
    ...notes,
    ...(notes.length ? [''] : []),
    line(table.headers),
    rule,
    ...table.rows.map(line),
    '',
  ].join('\n');
}

export function renderSection(section: Section): string {
  const text = section.text.length ? [...section.text, ''] : [];
  return [`### ${section.heading}`, '', ...text, ...section.tables.map(renderTable)].join('\n');
}

/** 1234.5 -> "1,235"; small values keep `digits` decimals. NaN -> "n/a". */
export function num(value: number, digits = 2): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  if (Math.abs(value) >= 100) return value.toFixed(Math.min(digits, 1));
  return value.toFixed(digits);
}

/** "0.93x"; "n/a" when either side is missing. */
export function times(numerator: number, denominator: number): string {
  if (!Number.isFinite(numerator) || !Number.isFinite(denominator) || denominator === 0) return 'n/a';
  const ratio = numerator / denominator;
  return `${ratio >= 100 ? Math.round(ratio) : ratio >= 10 ? ratio.toFixed(1) : ratio.toFixed(2)}x`;
}

/** A failed scenario still gets a section, so one broken library does not hide every other figure. */
export function failedSection(heading: string, error: unknown): Section {
  const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
  return { heading, text: ['**failed:**', '', '```', message, '```'], tables: [] };
}

export interface Failure {
  readonly name: string;
  readonly error: unknown;
}

/** A table row for a library whose run threw; the error itself goes into the table's notes (failureNotes). */
export function failedRow(failure: Failure, columns: number): string[] {
  return [failure.name, 'failed', ...Array.from({ length: Math.max(0, columns - 2) }, () => '')];
}

export function failureNotes(failures: readonly Failure[]): string[] {
  return failures.map((failure) => {
    const message = (failure.error instanceof Error ? failure.error.message : String(failure.error))
      .split('\n')[0]
      .slice(0, 300);
    return `**${failure.name} failed:** ${message}`;
  });
}
