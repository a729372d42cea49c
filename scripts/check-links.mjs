#!/usr/bin/env node
// Checks that every relative link in README.md, CHANGELOG.md and docs/**/*.md points at a file that exists,
// and that every #anchor into a Markdown file names one of its headings. Plain Node, no dependencies.
// Usage: node scripts/check-links.mjs [file.md ...]   (default: the files above). Exits 1 on any broken link.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The Markdown files to check: the arguments, or README.md, CHANGELOG.md and every .md under docs/. */
function filesToCheck(args) {
  if (args.length > 0) return args.map((file) => resolve(file));
  const files = ['README.md', 'CHANGELOG.md'].map((file) => join(root, file)).filter((file) => existsSync(file));
  return [...files, ...markdownUnder(join(root, 'docs'))];
}

function markdownUnder(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownUnder(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/** The lines outside fenced code blocks (``` or ~~~), with their 1-based numbers. */
function proseLines(text) {
  const lines = [];
  let fence = null;
  text.split(/\r?\n/).forEach((line, index) => {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (marker) {
      if (fence === null) fence = marker[1];
      else if (marker[1][0] === fence[0] && marker[1].length >= fence.length) fence = null;
      return;
    }
    if (fence === null) lines.push({ line, number: index + 1 });
  });
  return lines;
}

/** GitHub's heading anchor: lower case, punctuation dropped, each space a hyphen; repeats get -1, -2, ... */
function slug(heading) {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text stays, its target goes
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const anchorCache = new Map();

/** Every anchor a Markdown file offers: its headings' slugs, and explicit <a id|name="..."> anchors. */
function anchorsOf(file) {
  if (anchorCache.has(file)) return anchorCache.get(file);
  const anchors = new Set();
  const seen = new Map();
  for (const { line } of proseLines(readFileSync(file, 'utf8'))) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = slug(heading[1]);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const match of line.matchAll(/<a\s+[^>]*(?:id|name)=["']([^"']+)["']/gi)) anchors.add(match[1]);
  }
  anchorCache.set(file, anchors);
  return anchors;
}

/** Link targets on one line: inline links and images, and reference definitions. Code spans are skipped. */
function targetsOn(line) {
  const text = line.replace(/(`+)[\s\S]*?\1/g, '');
  const targets = [];
  for (const match of text.matchAll(/!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+["'(][^)]*)?\)/g)) {
    targets.push(match[1].replace(/^<|>$/g, ''));
  }
  const definition = /^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(text);
  if (definition) targets.push(definition[1].replace(/^<|>$/g, ''));
  return targets;
}

/** Why `target`, linked from `file`, is broken; undefined when it resolves (or is not a relative link). */
function problemWith(target, file) {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return undefined; // http:, mailto:, ...
  const hash = target.indexOf('#');
  const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash)).replace(/\?.*$/, '');
  const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const linked =
    pathPart === '' ? file : pathPart.startsWith('/') ? join(root, pathPart) : resolve(dirname(file), pathPart);
  if (!existsSync(linked)) return `no such file: ${relative(root, linked) || '.'}`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!statSync(linked).isFile() || !linked.endsWith('.md')) return undefined; // anchors into code: line numbers etc.
  if (!anchorsOf(linked).has(anchor)) return `no heading #${anchor} in ${relative(root, linked)}`;
  return undefined;
}

const broken = [];
const files = filesToCheck(process.argv.slice(2));
let checked = 0;
for (const file of files) {
  for (const { line, number } of proseLines(readFileSync(file, 'utf8'))) {
    for (const target of targetsOn(line)) {
      checked += 1;
      const problem = problemWith(target, file);
      if (problem) broken.push(`${relative(root, file)}:${number}: ${target} (${problem})`);
    }
  }
}

if (broken.length > 0) {
  console.error(`${broken.length} broken link${broken.length === 1 ? '' : 's'}:`);
  for (const entry of broken) console.error(`  ${entry}`);
  process.exit(1);
}
console.log(`Links OK: ${checked} links in ${files.length} files.`);
