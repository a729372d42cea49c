#!/usr/bin/env node
'use strict';
// The CLI lives in the compiled library; this file only starts it.
function start() {
  let cli;
  try {
    cli = require('../dist/lib/cli/main.js');
  } catch (error) {
    if (error && error.code === 'MODULE_NOT_FOUND' && String(error.message).includes('dist/lib/cli/main')) {
      process.stderr.write('nest-distributed-lock is not built: run "npm run build" in the package first.\n');
      process.exit(1);
    }
    throw error;
  }
  cli.main();
}
// Nest 12 is ESM-only, and the CommonJS build loads it with require(esm), which skips ESM loader hooks: under Yarn
// Plug'n'Play on Node 20, Nest's own imports then fail to resolve. Imported first, Nest loads through the hooks,
// and the build's require finds it loaded. A failure here is left to that require to report.
import('@nestjs/common').then(start, start);
