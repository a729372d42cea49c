/** 850 ms, 3.2 s, 4 min 12 s, 2 h 5 min: short enough for a table column, precise where it matters. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(abs)} ms`;
  // Below 59.95 s, one decimal; above, whole seconds (so 59 999 ms reads "1 min 0 s", not "60.0 s").
  if (abs < 59_950) return `${(abs / 1_000).toFixed(1)} s`;
  const totalSeconds = Math.round(abs / 1_000);
  if (abs < 3_600_000) return `${Math.floor(totalSeconds / 60)} min ${totalSeconds % 60} s`;
  const totalMinutes = Math.floor(totalSeconds / 60);
  return `${Math.floor(totalMinutes / 60)} h ${totalMinutes % 60} min`;
}
