import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { isStale, root } from '../scripts/build.mjs';
import { spawnServer, type ServerProcess } from './server-process';

/**
 * README.md's commands, run verbatim, as a newcomer pastes them: the agent's first calls, in bash, from
 * the checkout, against a server whose PTYDECK_HOME is not the default (so nothing may assume a path).
 * Each `# ...` line under a command is what the README says it prints: its pieces between "..." must
 * appear in the output, in order.
 */
const readme = readFileSync(join(root, 'README.md'), 'utf8');

interface Step {
  command: string;
  expected: string | null;
}

/** The first ```sh block after `heading`, as commands (continuation lines joined) with their expected output. */
function stepsUnder(heading: string): Step[] {
  const from = readme.indexOf(heading);
  if (from < 0) throw new Error(`README.md has no ${heading}`);
  const open = readme.indexOf('```sh\n', from);
  const block = readme.slice(open + 6, readme.indexOf('\n```', open + 6));
  const steps: Step[] = [];
  const lines = block.split('\n');
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i];
    if (!line.trim()) continue;
    if (line.startsWith('#')) {
      // What a command prints: `# {...`, `# ...`, and their continuation lines (`#  ...`); other comments are prose.
      const last = steps[steps.length - 1];
      if (last && /^# (\{|\.\.\.)|^# {2}/.test(line)) last.expected = (last.expected ?? '') + line.replace(/^#\s*/, '');
      continue;
    }
    // Verbatim: the backslash-newline stays, bash joins the lines.
    while (line.endsWith('\\')) line = line + '\n' + lines[++i];
    steps.push({ command: line, expected: null });
  }
  return steps;
}

const steps = stepsUnder("## An agent's first calls");
const sendStep = steps.findIndex((s) => s.command.includes('/api/sessions/build/send'));
let server: ServerProcess;
const outputs: { output: string; rc: number }[] = [];

beforeAll(async () => {
  if (isStale()) expect.fail('out/ is older than the sources: run `npm run build` first (npm test does)');
  server = await spawnServer(mkdtempSync(join(tmpdir(), 'ptydeck-readme-home-')));
  const script = steps.map((s, i) => `printf '@@begin ${i}\\n'\n${s.command}\nrc=$?\nprintf '\\n@@end ${i} %d\\n' $rc`).join('\n');
  const out = await new Promise<string>((resolve, reject) =>
    execFile('bash', ['-c', script], { cwd: root, env: { ...process.env, PTYDECK_HOME: server.home, PTYDECK_TOKEN: '' }, encoding: 'utf8', timeout: 120_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout + stderr),
    ),
  );
  for (let i = 0; i < steps.length; i++) {
    const m = new RegExp(`@@begin ${i}\\n([\\s\\S]*?)\\n@@end ${i} (\\d+)\\n`).exec(out);
    outputs.push(m ? { output: m[1], rc: Number(m[2]) } : { output: `(no output found in:\n${out})`, rc: -1 });
  }
}, 180_000);
afterAll(async () => {
  await server?.close();
});

/** The README's expected output, as pieces that must appear in order. */
function expectPrinted(i: number): void {
  const { output, rc } = outputs[i];
  const { command, expected } = steps[i];
  expect(rc, `${command}\n${output}`).toBe(0);
  if (!expected) return;
  let at = 0;
  for (const piece of expected.split('...').filter(Boolean)) {
    const found = output.indexOf(piece, at);
    expect(found, `README says \`${command.split('\n')[0]}\` prints ${JSON.stringify(piece)}; it printed:\n${output}`).toBeGreaterThanOrEqual(0);
    at = found + piece.length;
  }
}

test('the README starts with the two commands of a fresh machine', () => {
  const first = readme.slice(readme.indexOf('```sh\n') + 6, readme.indexOf('\n```', readme.indexOf('```sh\n')));
  expect(first.split('\n').map((l) => l.replace(/\s+#.*$/, ''))).toEqual(['npm install && npm start', 'npm test']);
});

test("the agent's first calls work verbatim with any PTYDECK_HOME: the address and token come from the CLI", () => {
  expect(steps[0].command).toMatch(/^BASE=\$\(npm run cli -s -- url --api\)(\s+#.*)?$/);
  expect(steps[1].command).toMatch(/^TOKEN=\$\(npm run cli -s -- token\)(\s+#.*)?$/);
  // Assignments print nothing (so nothing else went to the terminal either).
  expect(outputs[0]).toEqual({ output: '', rc: 0 });
  expect(outputs[1]).toEqual({ output: '', rc: 0 });
  expect(steps.length).toBeGreaterThan(6);
  for (let i = 2; i < steps.length; i++) if (i !== sendStep) expectPrinted(i);
});

// The README's token is the person's: the floor never refuses it, on any door (issue 12, item 2).
test("the README's send step answers with the program's prompt and stdin_read", () => {
  expect(sendStep).toBeGreaterThan(0);
  expectPrinted(sendStep);
});

test("the README's token command prints a new agent token, which the server accepts at once", async () => {
  const [step] = stepsUnder('## Give each agent its own token');
  expect(step.command).toMatch(/^npm run cli -s -- token create --name claude(\s+#.*)?$/);
  const out = await new Promise<string>((resolve, reject) =>
    execFile('bash', ['-c', step.command], { cwd: root, env: { ...process.env, PTYDECK_HOME: server.home, PTYDECK_TOKEN: '' }, encoding: 'utf8' }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
  );
  expect(out).toMatch(/^pdk_\S+\n$/);
  const r = await fetch(`${server.url}/v2/pty/sessions`, { headers: { Authorization: `Bearer ${out.trim()}` } });
  expect(r.status).toBe(200);
}, 90_000);
