/** JSON cannot carry a bigint: fencing tokens become decimal strings (they may pass 2^53). */
export type Jsonified<T> = T extends bigint
  ? string
  : T extends readonly (infer Item)[]
    ? Jsonified<Item>[]
    : T extends object
      ? { [K in keyof T]: Jsonified<T[K]> }
      : T;

/** A copy of `value` with every bigint as a string, so Nest's JSON serialisation does not throw on it. */
export function toJson<T>(value: T): Jsonified<T> {
  if (typeof value === 'bigint') return value.toString() as Jsonified<T>;
  if (Array.isArray(value)) return value.map((item) => toJson(item)) as Jsonified<T>;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, toJson(item)])) as Jsonified<T>;
  }
  return value as Jsonified<T>;
}
