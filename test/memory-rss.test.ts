import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { expect, onTestFinished, test } from 'vitest';
import { SettledAfterOutputMs } from '../src/main/terminal/memory-budget';
import { sleep, until } from './helpers';
import { spawnServer, type ServerProcess } from './server-process';
import { WsClient } from './ws-client';

/**
 * The memory budget bounds what the server process really holds (its RSS, as the kernel counts it),
 * not only what its own accounting says: many sessions print far more than the budget while sockets
 * watch them, then someone looks at every screen. The PTY host, which keeps its own copy of each log,
 * is held to the same bound. Spilled output still comes back byte for byte.
 */
const MiB = 1024 * 1024;
const Budget = 16 * MiB;
const Sessions = 16;
/** Lines of `s<n>-<number>` each session prints: ~6 MiB a session, ~96 MiB in all (six budgets). */
const Lines = 450_000;
/**
 * What either process may hold beyond its idle self and the budget: its JS heap growing with the work,
 * the sockets' unsent frames (up to 1 MiB each), output read and not yet collected, allocator slack.
 * Before the budget held, the server went ~200 MiB past it here (a 12 MiB screen per session).
 */
const Allowance = 96 * MiB;
/**
 * Once output has stopped and the budget has settled (a collection, then the C heap's free pages given
 * back: memory-budget.ts), what the burst freed is no longer resident. Measured here: without the heap
 * trimmed, the PTY host stayed 31-41 MiB above its idle self and the server's C heap 27-30 MiB above its
 * own; trimmed, 10-12 MiB and 11-12 MiB (what the budget counts: logs' hot tails, screens' cells).
 * (The server's RSS as a whole also carries its V8 heap, which after the screens were built stays
 * 0-30 MiB larger from run to run: too loose to tell the two apart.)
 */
const SettledAllowance = 8 * MiB;

/** What the process's C heap (glibc's main arena, the [heap] mapping) has resident. */
const cHeapOf = (pid: number): number => {
  const smaps = readFileSync(`/proc/${pid}/smaps`, 'latin1');
  const at = smaps.search(/^[0-9a-f]+-[0-9a-f]+ .*\[heap\]$/m);
  return at < 0 ? 0 : Number(/^Rss:\s*(\d+) kB/m.exec(smaps.slice(at))![1]) * 1024;
};
const rssOf = (pid: number): number => Number(/^VmRSS:\s*(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))![1]) * 1024;
const hostPidOf = (home: string): number => Number.parseInt(readFileSync(join(home, 'ptyhost', 'host.lock'), 'utf8'), 10);

async function api(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(srv.url + path, {
    method,
    headers: { Authorization: `Bearer ${srv.token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** Types `command` on the session's AIO socket and resolves once `done` has come back on it. */
function runOnSocket(srv: ServerProcess, id: string, command: string, done: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${srv.url.replace(/^http/, 'ws')}/v2/pty/sessions/${id}/ws?protocol=binary`, { headers: { Authorization: `Bearer ${srv.token}` } });
    let tail = '';
    let typed = false;
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`${id}: no "${done}" within 120 s; last output ${JSON.stringify(tail)}`));
    }, 120_000);
    ws.on('message', (data, isBinary) => {
      if (!isBinary) {
        if (!typed && JSON.parse(data.toString()).type === 'ready') {
          typed = true;
          ws.send(Buffer.from(`${command}\r`), { binary: true });
        }
        return;
      }
      tail = (tail + data.toString('latin1')).slice(-200);
      if (!tail.includes(done)) return;
      clearTimeout(timer);
      ws.close();
      resolve();
    });
    ws.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

test('many sessions printing six budgets while watched: server and PTY host stay within budget plus a fixed allowance; replays still read everything', async () => {
  const srv = await spawnServer(mkdtempSync(join(tmpdir(), 'ptydeck-rss-')), { PTYDECK_MEMORY_BUDGET_BYTES: String(Budget), AIO_SHELL_BACKEND: 'host' });
  onTestFinished(() => srv.close());
  const pid = srv.proc.pid!;
  const ids: string[] = [];
  for (let n = 0; n < Sessions; n++) {
    const r = await api(srv, 'POST', '/v2/pty/sessions', { id: `rss-${n}`, cwd: '/tmp', cols: 120, rows: 40 });
    expect(r.status).toBe(200);
    ids.push(r.body.data.session_id);
  }
  // Each session has run a command once (code paths warm, first allocations made) before the baseline.
  await Promise.all(ids.map((id, n) => runOnSocket(srv, id, `echo WA''RM-${n}`, `WARM-${n}\r\n`)));
  await sleep(1500);
  const host = hostPidOf(srv.home);
  const base = { server: rssOf(pid), host: rssOf(host), serverHeap: cHeapOf(pid) };
  const peak = { ...base };
  const sampler = setInterval(() => {
    peak.server = Math.max(peak.server, rssOf(pid));
    peak.host = Math.max(peak.host, rssOf(host));
  }, 50);
  onTestFinished(() => clearInterval(sampler));

  // Every session prints at once, each read by its own socket (which makes the screen it attaches with).
  await Promise.all(ids.map((id, n) => runOnSocket(srv, id, `seq -f 's${n}-%09g' 1 ${Lines}; echo DO''NE-${n}`, `DONE-${n}\r\n`)));
  // Then someone looks at every screen.
  for (const id of ids) expect((await api(srv, 'GET', `/v2/pty/sessions/${id}/screen`)).status).toBe(200);
  // The budget is checked every second.
  await sleep(2500);
  clearInterval(sampler);
  const after = { server: rssOf(pid), host: rssOf(host) };
  const report = `budget ${Budget / MiB} MiB; server ${(base.server / MiB).toFixed(0)} MiB before, peak ${(peak.server / MiB).toFixed(0)}, after ${(after.server / MiB).toFixed(0)}; host ${(base.host / MiB).toFixed(0)} before, peak ${(peak.host / MiB).toFixed(0)}, after ${(after.host / MiB).toFixed(0)}`;
  console.log(report);
  for (const [what, bytes] of [['server peak', peak.server - base.server], ['server after', after.server - base.server], ['host peak', peak.host - base.host], ['host after', after.host - base.host]] as const) {
    expect(bytes, `${what} grew ${(bytes / MiB).toFixed(0)} MiB (${report})`).toBeLessThanOrEqual(Budget + Allowance);
  }
  // Idle again: what the burst freed is given back to the system, not kept at its peak.
  await sleep(SettledAfterOutputMs);
  const settled = { server: rssOf(pid), host: rssOf(host), serverHeap: cHeapOf(pid) };
  const settledReport = `${report}; settled: server ${(settled.server / MiB).toFixed(0)} MiB (C heap ${(base.serverHeap / MiB).toFixed(0)} MiB before, ${(settled.serverHeap / MiB).toFixed(0)} now), host ${(settled.host / MiB).toFixed(0)} MiB`;
  console.log(settledReport);
  // The host's RSS: its logs (within the budget) and little else. The server's C heap: its logs and its
  // screens' cells (within the budget) and nothing else.
  for (const [what, bytes, limit] of [
    ['the host, settled,', settled.host - base.host, Budget + SettledAllowance],
    ["the server's C heap, settled,", settled.serverHeap - base.serverHeap, Budget],
  ] as const) {
    expect(bytes, `${what} is ${(bytes / MiB).toFixed(0)} MiB above its idle self (${settledReport})`).toBeLessThanOrEqual(limit);
  }

  // The first session's whole output, replayed from its first byte: most of it was on disk by now.
  const c = await WsClient.open(`${srv.url.replace(/^http/, 'ws')}/pty/${ids[0]}/ws?since=0`, { 'X-EXECD-ACCESS-TOKEN': srv.token });
  onTestFinished(() => c.close());
  const replay = await c.next((f) => Boolean(f.binary && f.binary[0] === 0x03), 30_000);
  expect(Number(replay.binary!.readBigUInt64BE(1))).toBe(0);
  const text = replay.binary!.subarray(9).toString('latin1');
  const lines = text.match(/s0-\d{9}(?=\r\n)/g) ?? [];
  expect(lines.length).toBe(Lines);
  expect(lines[0]).toBe('s0-000000001');
  expect(lines[Lines - 1]).toBe(`s0-${String(Lines).padStart(9, '0')}`);
  expect(lines.every((l, i) => l === `s0-${String(i + 1).padStart(9, '0')}`)).toBe(true);
  expect(await until(() => text.includes('DONE-0'))).toBe(true);
}, 240_000);
