import { InvalidKeyTemplateError } from '../errors/invalid-key-template.error';

/** One `<<name>>` of a template. */
export interface Placeholder {
  /** As written, e.g. `<<body.order.id>>`, for error messages. */
  readonly text: string;
  /** The dot-separated name, e.g. ['body', 'order', 'id']. Where it is looked up depends on the caller. */
  readonly path: readonly string[];
}

export type TemplatePart = { readonly literal: string } | { readonly placeholder: Placeholder };

/** A template parsed once, at decoration time. */
export interface KeyTemplate {
  readonly source: string;
  readonly parts: readonly TemplatePart[];
  readonly placeholders: readonly Placeholder[];
}

const OPEN = '<<';
const CLOSE = '>>';
// Identifiers, array indexes and header names (x-tenant); nothing that could be mistaken for syntax.
const SEGMENT = /^[A-Za-z0-9_$-]+$/;

/** Parses `'file:<<id>>'`. Throws InvalidKeyTemplateError on an unclosed `<<`, an empty or malformed name. */
export function parseKeyTemplate(source: unknown): KeyTemplate {
  if (typeof source !== 'string' || source.length === 0) {
    throw new InvalidKeyTemplateError(
      String(source),
      'a key template must be a non-empty string such as "file:<<id>>".',
    );
  }
  const parts: TemplatePart[] = [];
  const placeholders: Placeholder[] = [];
  let position = 0;
  while (position < source.length) {
    const open = source.indexOf(OPEN, position);
    if (open === -1) {
      parts.push({ literal: source.slice(position) });
      break;
    }
    if (open > position) parts.push({ literal: source.slice(position, open) });
    const close = source.indexOf(CLOSE, open + OPEN.length);
    if (close === -1) {
      throw new InvalidKeyTemplateError(source, `"<<" at position ${open} is never closed with ">>".`);
    }
    const placeholder = parsePlaceholder(source, source.slice(open + OPEN.length, close), open);
    parts.push({ placeholder });
    placeholders.push(placeholder);
    position = close + CLOSE.length;
  }
  return { source, parts, placeholders };
}

function parsePlaceholder(source: string, name: string, at: number): Placeholder {
  const text = `${OPEN}${name}${CLOSE}`;
  if (name.length === 0) {
    throw new InvalidKeyTemplateError(
      source,
      `empty placeholder "<<>>" at position ${at}: name a value, e.g. <<id>> or <<params.id>>.`,
    );
  }
  const path = name.split('.');
  if (!path.every((segment) => SEGMENT.test(segment))) {
    throw new InvalidKeyTemplateError(
      source,
      `placeholder ${JSON.stringify(text)} at position ${at} is not a name: use dot-separated segments of ` +
        `letters, digits, "_", "$" and "-", e.g. <<id>>, <<body.order.id>>, <<headers.x-tenant>> or <<0>>.`,
    );
  }
  return { text, path };
}
