const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
// What may stand before the parameter list: `name`, `async name`, `*name`, `async *name`, `function name`, or nothing.
const HEAD = /^(?:async\s*)?(?:function\s*)?\*?\s*(?:[A-Za-z_$][\w$]*)?\s*$/;
// Anything that makes a parameter list non-trivial: defaults, destructuring, rest, comments, strings.
const NOT_SIMPLE = /[=[\]{}().'"`/]/;

/**
 * The parameter names of a plain function or method, read from its source text, or undefined when the
 * list is not a simple comma-separated list of identifiers (defaults, destructuring, rest, comments,
 * computed names, native or bound functions). Conservative on purpose: a wrong answer would lock the
 * wrong key, so anything unusual falls back to index placeholders (`<<0>>`).
 */
export function readParameterNames(fn: Function): string[] | undefined {
  let source: string;
  try {
    source = Function.prototype.toString.call(fn);
  } catch {
    return undefined;
  }
  const open = source.indexOf('(');
  if (open === -1 || !HEAD.test(source.slice(0, open))) return undefined;
  const close = source.indexOf(')', open);
  if (close === -1) return undefined;
  const list = source.slice(open + 1, close);
  if (NOT_SIMPLE.test(list)) return undefined;
  const names = list.split(',').map((name) => name.trim());
  if (names.length > 0 && names[names.length - 1] === '') names.pop(); // trailing comma, or no parameters
  if (!names.every((name) => IDENTIFIER.test(name))) return undefined;
  // Native and bound functions print an empty list ("[native code]"): their arity gives them away.
  return names.length === fn.length ? names : undefined;
}
