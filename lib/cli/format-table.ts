/** Left-aligned columns separated by two spaces, indented by two, as `ps` and `kubectl get` print them. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    '  ' + cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}
