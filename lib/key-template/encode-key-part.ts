/**
 * Turns a resolved placeholder value into text that cannot change the key's structure: everything but
 * `[A-Za-z0-9_.~-]` is percent-encoded, so `:`, `/`, `*`, `?`, `[`, `{`, `<`, `%`... in user input stay data.
 * Text is NFC-normalised first, so the composed and decomposed spellings of the same name lock the same key.
 * Returns undefined for values that do not name one thing (see `describeUnusable`).
 */
export function encodeKeyPart(value: unknown): string | undefined {
  const text = scalarText(value);
  if (text === undefined || text.length === 0) return undefined;
  // Ids are mostly plain ASCII already: then there is nothing to normalise or encode.
  if (UNRESERVED.test(text)) return text;
  if (!text.isWellFormed()) return undefined;
  return encodeURIComponent(text.normalize('NFC')).replace(
    /[!'()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

const UNRESERVED = /^[A-Za-z0-9_.~-]+$/;

/** Why `encodeKeyPart` refused a value, phrased to follow the placeholder's name. */
export function describeUnusable(value: unknown): string {
  if (value === undefined) return 'is missing';
  if (value === null) return 'is null';
  if (Array.isArray(value)) return 'is an array';
  if (typeof value === 'string') return value.length === 0 ? 'is an empty string' : 'is not well-formed Unicode text';
  if (typeof value === 'number') return `is ${String(value)}, not a finite number`;
  return `is ${typeof value === 'object' ? 'an object' : `a ${typeof value}`}`;
}

function scalarText(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
      return Number.isFinite(value) ? String(value) : undefined;
    case 'bigint':
    case 'boolean':
      return String(value);
    default:
      return undefined;
  }
}
