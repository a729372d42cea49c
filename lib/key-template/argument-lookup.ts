import { InvalidKeyTemplateError } from '../errors/invalid-key-template.error';
import type { KeyTemplate, Placeholder } from './parse-key-template';
import { readParameterNames } from './parameter-names';
import { readPath } from './read-path';
import type { PlaceholderLookup } from './render-key-template';

const INDEX = /^(0|[1-9]\d*)$/;

/**
 * For a locked provider method: `<<0>>`, `<<1.id>>` name arguments by index; `<<reportId>>`, `<<order.id>>`
 * by parameter name when the method's parameter list can be read (see readParameterNames).
 * Checks every placeholder now, at startup, and returns a lookup over the call's arguments.
 */
export function compileArgumentLookup(
  templates: readonly KeyTemplate[],
  method: Function,
  where: string,
): (args: readonly unknown[]) => PlaceholderLookup {
  let names: string[] | undefined;
  const indexes = new Map<Placeholder, number>();
  for (const template of templates) {
    for (const placeholder of template.placeholders) {
      const first = placeholder.path[0];
      if (INDEX.test(first)) {
        indexes.set(placeholder, Number(first));
        continue;
      }
      names ??= readParameterNames(method) ?? [];
      const index = names.indexOf(first);
      if (index === -1) {
        throw new InvalidKeyTemplateError(template.source, unknownNameProblem(placeholder, where, method, names));
      }
      indexes.set(placeholder, index);
    }
  }
  return (args) => (placeholder) => readPath(args[indexes.get(placeholder)!], placeholder.path.slice(1));
}

function unknownNameProblem(placeholder: Placeholder, where: string, method: Function, names: string[]): string {
  const known =
    names.length > 0
      ? `its parameters are ${names.join(', ')}`
      : `its parameter names cannot be read reliably (defaults, destructuring or rest parameters, or a wrapped method)`;
  return (
    `${placeholder.text} on ${where} names no parameter (${known}). ` +
    `Use an argument index instead, e.g. <<0>> or <<${Math.max(0, method.length - 1)}.id>>.`
  );
}
