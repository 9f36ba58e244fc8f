#!/usr/bin/env node
// Builds main, preload and renderer into out/ with electron-vite.
//
//   node scripts/build.mjs              always build, showing electron-vite's output (`npm run build`)
//   node scripts/build.mjs --if-stale   build only when an input changed since the last build, and say
//                                       nothing unless it fails (`npm start`, `npm run cli`, `npm run serve`)
//
// "Changed" is judged by a fingerprint of every input file's path, size and modification time, written
// to out/ after each successful build: an edit, a new file, a deleted file or a new lockfile all change it.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** What the build reads (relative to the root): directories are walked. */
export const BUILD_INPUTS = ['src', 'resources', 'electron.vite.config.mts', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.base.json', 'tsconfig.node.json', 'tsconfig.web.json'];
/** What a usable build has. */
const OUTPUTS = ['out/main/index.js', 'out/main/cli.js', 'out/preload/index.js', 'out/renderer/index.html'];
const FINGERPRINT = 'out/.build-fingerprint';
/** Two builds into one out/ at once would mix their files: a second caller waits for the first. */
const LOCK = 'out/.build-lock';
const LockWaitMs = 120_000;
const StaleLockMs = 300_000;

function walk(dir, files) {
  let st;
  try {
    st = statSync(dir);
  } catch {
    return;
  }
  if (!st.isDirectory()) return void files.push([dir, st]);
  for (const name of readdirSync(dir).sort()) walk(join(dir, name), files);
}

/** A hash over every input's path, size and mtime. */
export function fingerprint(base = root, inputs = BUILD_INPUTS) {
  const files = [];
  for (const input of inputs) walk(join(base, input), files);
  const h = createHash('sha256');
  for (const [path, st] of files) h.update(`${relative(base, path)}\0${st.size}\0${st.mtimeMs}\n`);
  return h.digest('hex');
}

export function isStale(base = root) {
  if (OUTPUTS.some((o) => !existsSync(join(base, o)))) return true;
  try {
    return readFileSync(join(base, FINGERPRINT), 'utf8').trim() !== fingerprint(base);
  } catch {
    return true;
  }
}

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

function withBuildLock(fn) {
  const lock = join(root, LOCK);
  mkdirSync(join(root, 'out'), { recursive: true });
  const deadline = Date.now() + LockWaitMs;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      let age = 0;
      try {
        age = Date.now() - statSync(lock).mtimeMs;
      } catch {
        continue;
      }
      // A build that died mid-way leaves its lock: builds take seconds, not minutes.
      if (age > StaleLockMs) rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`another build holds ${lock}; remove it if no build is running`);
      else sleep(200);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Runs electron-vite build; `quiet` keeps its output unless it fails. Returns true on success. */
export function build({ quiet }) {
  const before = fingerprint();
  const r = spawnSync(process.execPath, [join(root, 'node_modules/electron-vite/bin/electron-vite.js'), 'build'], {
    cwd: root,
    stdio: quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    encoding: 'utf8',
  });
  if (r.status !== 0) {
    if (quiet) process.stderr.write(`${r.stdout ?? ''}${r.stderr ?? ''}`);
    process.stderr.write(`ptydeck: the build failed (${r.error ? r.error.message : `electron-vite exited with ${r.status ?? r.signal}`}); its output is above\n`);
    return false;
  }
  // The fingerprint of the inputs as they were when the build began: an edit made during it counts as new.
  writeFileSync(join(root, FINGERPRINT), before + '\n');
  return true;
}

/** Builds when needed, quietly. Returns true when out/ is current. */
export function ensureBuilt() {
  if (!isStale()) return true;
  return withBuildLock(() => (isStale() ? build({ quiet: true }) : true));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const ifStale = process.argv.includes('--if-stale');
  const ok = ifStale ? ensureBuilt() : withBuildLock(() => build({ quiet: false }));
  process.exit(ok ? 0 : 1);
}
