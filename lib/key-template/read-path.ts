/**
 * Follows `path` through own properties, and through getters an object's own classes define (an entity's
 * `get id()`, a Mongoose document's fields), so `<<user.id>>` reads what the application's code reads. Nothing
 * else on the prototype chain: not methods or other data there (`<<constructor.name>>`), and nothing of
 * `Object.prototype` (`<<__proto__>>`), which every request body has. Undefined when any step is missing.
 */
export function readPath(root: unknown, path: readonly string[]): unknown {
  let current = root;
  for (const segment of path) {
    if (current === null || (typeof current !== 'object' && typeof current !== 'function')) return undefined;
    if (!Object.prototype.hasOwnProperty.call(current, segment) && !hasClassGetter(current, segment)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

function hasClassGetter(target: object, name: string): boolean {
  for (let proto: object | null = Object.getPrototypeOf(target) as object | null; proto;) {
    if (proto === Object.prototype || proto === Function.prototype) return false;
    const descriptor = Object.getOwnPropertyDescriptor(proto, name);
    if (descriptor) return descriptor.get !== undefined;
    proto = Object.getPrototypeOf(proto) as object | null;
  }
  return false;
}
