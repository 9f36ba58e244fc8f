import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect, test } from 'vitest';

/**
 * The layering DESIGN.md asks for, enforced: the terminal core knows no transport and no Electron;
 * shared/ imports nothing; only the Electron entry and the preload import electron.
 */
const root = join(__dirname, '..');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(n) ? [p] : [];
  });
}

const importsOf = (file: string): string[] => [...readFileSync(file, 'utf8').matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]|require\(['"]([^'"]+)['"]\)/g)].map((m) => m[1] ?? m[2]);

test('src/main/terminal imports nothing from api/, renderer/, electron or HTTP frameworks', () => {
  const bad: string[] = [];
  for (const f of files(join(root, 'src/main/terminal'))) {
    for (const i of importsOf(f)) {
      if (/(^|\/)api\/|renderer|^electron$|^fastify|^ws$|^node:http$/.test(i) || i.startsWith('../../main')) bad.push(`${relative(root, f)} -> ${i}`);
    }
  }
  expect(bad).toEqual([]);
});

test('src/shared imports nothing', () => {
  const bad = files(join(root, 'src/shared')).flatMap((f) => importsOf(f).map((i) => `${relative(root, f)} -> ${i}`));
  expect(bad).toEqual([]);
});

test('only src/main/index.ts and the preload import electron', () => {
  const allowed = new Set(['src/main/index.ts', 'src/preload/index.ts']);
  const bad = files(join(root, 'src'))
    .filter((f) => importsOf(f).includes('electron'))
    .map((f) => relative(root, f))
    .filter((f) => !allowed.has(f));
  expect(bad).toEqual([]);
});
