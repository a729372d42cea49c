'use strict';
/**
 * Lets forked test workers (plain `node`, outside Jest) require our TypeScript sources.
 * Usage: fork(file.ts, args, { execArgv: ['--require', require.resolve('./ts-register.js')] }).
 *
 * Transpile-only (types are checked by ts-jest and tsc), with the repo's tsconfig so decorators and
 * decorator metadata behave as in the library build. Output is cached on disk by content hash, so that
 * forking several workers does not load the TypeScript compiler in each of them.
 */
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const CACHE_DIR = path.join(os.tmpdir(), 'ndl-ts-register-cache');
let compiler;

function compilerOptions() {
  if (compiler) return compiler;
  const ts = require('typescript');
  const configPath = path.join(ROOT, 'tsconfig.json');
  const { config, error } = ts.readConfigFile(configPath, ts.sys.readFile);
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, ROOT);
  const options = {
    ...parsed.options,
    module: ts.ModuleKind.CommonJS,
    sourceMap: false,
    inlineSourceMap: true,
    inlineSources: true,
    declaration: false,
    noEmit: false,
  };
  compiler = { ts, options };
  return compiler;
}

function compile(source, filename) {
  const hash = crypto
    .createHash('sha1')
    .update(filename)
    .update('\0')
    .update(source)
    .update(configText())
    .digest('hex');
  const cached = path.join(CACHE_DIR, `${hash}.js`);
  try {
    return fs.readFileSync(cached, 'utf8');
  } catch {
    // not cached yet
  }
  const { ts, options } = compilerOptions();
  const output = ts.transpileModule(source, { fileName: filename, compilerOptions: options, reportDiagnostics: false });
  fs.mkdirSync(CACHE_DIR, { recursive: true });
  // Write then rename, so a concurrently starting worker never reads half a file.
  const temporary = `${cached}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, output.outputText);
  fs.renameSync(temporary, cached);
  return output.outputText;
}

let tsconfigText;
function configText() {
  if (tsconfigText === undefined) tsconfigText = fs.readFileSync(path.join(ROOT, 'tsconfig.json'), 'utf8');
  return tsconfigText;
}

process.setSourceMapsEnabled(true);
require.extensions['.ts'] = function registerTs(module, filename) {
  const source = fs.readFileSync(filename, 'utf8');
  module._compile(compile(source, filename), filename);
};
