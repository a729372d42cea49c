/**
 * Follows `path` through own properties only, so `<<constructor.name>>` or `<<__proto__>>` cannot reach
 * the prototype chain. Undefined when any step is missing.
 */
export function readPath(root: unknown, path: readonly string[]): unknown {
  let current = root;
  for (const segment of path) {
    if (current === null || (typeof current !== 'object' && typeof current !== 'function')) return undefined;
    if (!Object.prototype.hasOwnProperty.call(current, segment)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}
