import { describeUnusable, encodeKeyPart } from './encode-key-part';
import type { KeyTemplate, Placeholder } from './parse-key-template';
import { UnresolvedPlaceholderError } from '../errors/unresolved-placeholder.error';

/** Finds the raw value of one placeholder (from a request, a message payload, or method arguments). */
export type PlaceholderLookup = (placeholder: Placeholder) => unknown;

/** Builds the key: literals as written, each placeholder's value encoded. Throws UnresolvedPlaceholderError. */
export function renderKeyTemplate(template: KeyTemplate, lookup: PlaceholderLookup): string {
  let key = '';
  for (const part of template.parts) {
    if ('literal' in part) {
      key += part.literal;
      continue;
    }
    const value = lookup(part.placeholder);
    const encoded = encodeKeyPart(value);
    if (encoded === undefined) {
      throw new UnresolvedPlaceholderError(template.source, part.placeholder.text, describeUnusable(value));
    }
    key += encoded;
  }
  return key;
}
