#!/usr/bin/env node
'use strict';
// The CLI lives in the compiled library; this file only starts it.
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
