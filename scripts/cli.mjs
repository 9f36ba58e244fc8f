#!/usr/bin/env node
// `npm run cli -- <command>` and `npm run serve`: the ptydeck CLI from a checkout, built first only when
// the sources changed (and silently, unless the build fails), so that `npm run cli -s -- token` prints
// the token and nothing else.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ensureBuilt, root } from './build.mjs';

if (!ensureBuilt()) process.exit(1);
createRequire(import.meta.url)(join(root, 'bin', 'ptydeck.js'));
