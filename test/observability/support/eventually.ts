/**
 * Re-checks `probe` until it returns a value (not undefined) or `timeout` passes. For states that no event
 * announces, such as a waiter having joined a backend's queue.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  timeout = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
