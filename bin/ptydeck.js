#!/usr/bin/env node
'use strict';
// The headless CLI. Built by `npm run build` into out/main/cli.js; this file never loads electron.
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const cli = join(__dirname, '..', 'out', 'main', 'cli.js');
if (!existsSync(cli)) {
  console.error('ptydeck: not built yet; run `npm run build` first (npm run serve builds for you)');
  process.exit(1);
}
require(cli).run(process.argv.slice(2));
