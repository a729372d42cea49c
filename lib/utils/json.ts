/**
 * JSON cannot carry a bigint (`JSON.stringify` throws on one, and a Nest route returning it answers 500), so
 * fencing tokens become decimal strings: they may pass 2^53, where a number would round. Functions are left
 * out, as JSON.stringify leaves them out.
 */
export type Jsonified<T> = T extends bigint
  ? string
  : T extends readonly (infer Item)[]
    ? Jsonified<Item>[]
    : T extends object
      ? { [K in keyof T as T[K] extends (...args: never[]) => unknown ? never : K]: Jsonified<T[K]> }
      : T;

/**
 * A copy of `value` that JSON.stringify takes: every bigint a decimal string, an Error its name, message and
 * own fields, and a value with its own `toJSON` (a LockHandle: never its owner token) as that returns.
 */
export function toJson<T>(value: T): Jsonified<T> {
  return jsonCopy(value, true) as Jsonified<T>;
}

/**
 * Makes `value` safe for JSON.stringify in place: a `toJSON` that is not enumerable, so it shows neither in
 * util.inspect (logs) nor in the object's keys, and returns the same fields with bigints as decimal strings.
 * For the plain objects the library hands to user code that carry fencing tokens: events, renewals, inspections.
 */
export function jsonSafe<T extends object>(value: T): T {
  Object.defineProperty(value, 'toJSON', TO_JSON);
  return value;
}

function ownFieldsAsJson(this: object): unknown {
  return jsonCopy(this, false);
}

/** One descriptor for every call: about 130 ns per object instead of 300-600 with a fresh one (Node 20). */
const TO_JSON: PropertyDescriptor = { value: ownFieldsAsJson, enumerable: false, configurable: true, writable: true };

function jsonCopy(value: unknown, honourToJson: boolean): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => jsonCopy(item, true));
  if (honourToJson && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return jsonCopy((value as { toJSON(): unknown }).toJSON(), false);
  }
  const copy: Record<string, unknown> = value instanceof Error ? { name: value.name, message: value.message } : {};
  for (const [name, item] of Object.entries(value)) {
    if (typeof item !== 'function') copy[name] = jsonCopy(item, true);
  }
  return copy;
}
