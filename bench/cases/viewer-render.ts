import { readFileSync } from 'node:fs';
import { chromium, type Browser, type Page } from '@playwright/test';
import { pairedRounds, type BenchCase, type CaseContext, type CaseOutcome } from '../lib/case';
import { onCleanup } from '../lib/cleanup';
import { writePayload, type Payload } from '../lib/payload';
import { waitForQuiet } from '../lib/proc';
import { closeSession, createSession, typeInto, waitForPrompt } from '../lib/sessions';
import { startServer, type BenchServer } from '../lib/server';
import { median, MiB, nowMs, pairedRatio } from '../lib/stats';
import { fmtMiBs, fmtRatio, type Row } from '../lib/table';

/**
 * Case 6, viewer rendering: Chromium opens the viewer page on a session (`/?session_id=<id>`, after
 * a login link signed it in), the session `cat`s a 32 MiB payload, and the clock runs from typing the
 * command until the terminal's buffer holds the END marker line (read through the page's test hook
 * `window.__ptydeckTerminalText(id)`) and two animation frames have passed, so the last state is painted.
 * With the WebGL renderer and with the DOM fallback (`?renderer=dom`).
 *
 * Baseline: the same bytes (what the PTY delivers, `\n` as `\r\n`) written into a bare xterm.js of the
 * same size, font and scrollback on a blank page in the same browser, with the same 1 MiB window the
 * server allows a viewer, until the last write callback and two frames: what xterm.js itself can do
 * with that renderer here, without server, socket, React or acks.
 *
 * The viewer's flow control is lossy by design (a viewer more than 2 MiB behind, too slow to catch up within half a second, is resynced from a
 * snapshot instead of fed the backlog), so the page counts `resync` frames: with resyncs the viewer did
 * not parse every byte, and the figure says so.
 */
const CASE = '6. Viewer rendering';
type RendererKind = 'webgl' | 'dom';

interface Run {
  mibPerSec: number;
  resyncs: number;
  /** Output bytes that reached the page (binary frames of the view socket); resyncs skip the rest. */
  receivedBytes: number;
  /** The renderer the terminal actually used (WebGL may be unavailable and fall back). */
  renderer: string;
}

export const viewerRenderCase: BenchCase = {
  id: 'viewer',
  title: 'Viewer rendering',
  async run(ctx: CaseContext): Promise<CaseOutcome> {
    const size = ctx.quick ? 1 * MiB : 32 * MiB;
    // One pair per renderer: a 32 MiB run in a browser takes 15-30 s here, which already averages a lot.
    const rounds = 1;
    const payload = writePayload(ctx.workDir, size, 3);
    const onPty = Buffer.from(readFileSync(payload.path, 'utf8').replaceAll('\n', '\r\n'), 'utf8');
    const rows: Row[] = [];
    const notes: string[] = [];
    const srv = await startServer();
    const browser = await chromium.launch({
      executablePath: process.env.PTYDECK_CHROMIUM || '/usr/bin/chromium',
      // SwiftShader gives headless Chromium a (software) WebGL2 context.
      args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist'],
    });
    const closeBrowser = onCleanup(() => browser.close());
    try {
      for (const renderer of ['webgl', 'dom'] as RendererKind[]) {
        const runs = await pairedRounds(
          rounds,
          async () => {
            const r = await bareXterm(browser, onPty, renderer);
            ctx.log(`  bare xterm.js (${r.renderer}): ${r.mibPerSec.toFixed(1)} MiB/s`);
            return r;
          },
          async () => {
            const r = await viewerRun(srv, browser, payload, renderer);
            ctx.log(`  viewer (${r.renderer}): ${r.mibPerSec.toFixed(1)} MiB/s, ${r.resyncs} resync(s)`);
            return r;
          },
        );
        const rate = (rs: Run[]): number[] => rs.map((r) => r.mibPerSec);
        const used = [...new Set(runs.ours.map((r) => r.renderer))].join('/');
        const usedBase = [...new Set(runs.baseline.map((r) => r.renderer))].join('/');
        if (used !== renderer || usedBase !== renderer) notes.push(`Viewer rendering: asked for ${renderer}, the viewer used ${used} and the bare xterm.js ${usedBase}.`);
        const resyncs = runs.ours.reduce((s, r) => s + r.resyncs, 0);
        const receivedPct = Math.round((100 * median(runs.ours.map((r) => r.receivedBytes))) / payload.expectedBytes);
        if (resyncs) {
          notes.push(
            `Viewer rendering (${renderer}): the server resynced the viewer ${resyncs} time(s) in ${runs.ours.length} run(s) and the page received ${receivedPct}% of the stream's bytes: ` +
              'a viewer more than 2 MiB behind that cannot catch up within half a second gets a fresh snapshot instead of the backlog (by design, a viewer never holds back the shell), so it rendered less than the bare xterm.js did.',
          );
        }
        rows.push({
          case: CASE,
          figure: `${size / MiB} MiB stream until the screen settles, ${renderer === 'webgl' ? 'WebGL renderer' : 'DOM renderer (fallback)'}${used !== renderer ? ` (ran as ${used})` : ''}`,
          ours: `${fmtMiBs(median(rate(runs.ours)))}${resyncs ? ` (${resyncs} resync${resyncs > 1 ? 's' : ''}; the page got ${receivedPct}% of the bytes)` : ''}`,
          baseline: fmtMiBs(median(rate(runs.baseline))),
          ratio: fmtRatio(pairedRatio(rate(runs.ours), rate(runs.baseline))),
        });
      }
    } finally {
      await closeBrowser();
      await srv.stop();
    }
    return { rows, notes };
  },
};

/** Counts, in the page, the view socket's `resync` frames and the output bytes it receives (binary frames). */
const COUNT_FRAMES = `
window.__benchResyncs = 0;
window.__benchBytes = 0;
const NativeWebSocket = window.WebSocket;
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener('message', (e) => {
      if (typeof e.data === 'string') {
        if (e.data.includes('"resync"')) window.__benchResyncs++;
      } else window.__benchBytes += e.data.byteLength !== undefined ? e.data.byteLength : e.data.size;
    });
  }
};`;

async function viewerRun(srv: BenchServer, browser: Browser, payload: Payload, renderer: RendererKind): Promise<Run> {
  const id = await createSession(srv, `view-${renderer}-${Date.now()}`);
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  try {
    await waitForPrompt(srv, id);
    const page = await context.newPage();
    await page.addInitScript(COUNT_FRAMES);
    const url = new URL(await srv.loginUrl());
    url.searchParams.set('session_id', id);
    if (renderer === 'dom') url.searchParams.set('renderer', 'dom');
    await page.goto(url.toString());
    // The tab is open once the snapshot (the prompt) is in the terminal's buffer.
    await page.waitForFunction((sid) => ((window as any).__ptydeckTerminalText?.(sid) ?? '').trim().length > 0, id, { timeout: 20_000 });
    const rendererOf = async (): Promise<string> => String(await page.evaluate((sid) => (window as any).__ptydeckTerminalRenderer?.(sid), id));
    const before = await rendererOf();
    await waitForQuiet(srv.pid);
    const bytes0 = Number(await page.evaluate(() => (window as any).__benchBytes));
    const t0 = nowMs();
    await typeInto(srv, id, `cat '${payload.path}'\r`);
    await page.waitForFunction(({ sid, end }) => ((window as any).__ptydeckTerminalText?.(sid) ?? '').includes(end), { sid: id, end: payload.end.toString() }, { polling: 100, timeout: 300_000 });
    await settled(page);
    const ms = nowMs() - t0;
    const resyncs = Number(await page.evaluate(() => (window as any).__benchResyncs));
    const receivedBytes = Number(await page.evaluate(() => (window as any).__benchBytes)) - bytes0;
    // A WebGL context can be lost mid-stream (the viewer then falls back to the DOM renderer): say so.
    const after = await rendererOf();
    return { mibPerSec: payload.expectedBytes / MiB / (ms / 1000), resyncs, receivedBytes, renderer: before === after ? before : `${before}→${after}` };
  } finally {
    await context.close();
    await closeSession(srv, id);
  }
}

const settled = (page: Page): Promise<unknown> => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

const BARE_ORIGIN = 'http://bench.invalid';

/**
 * In the bare page: a terminal like the viewer's (font, size, scrollback), the renderer asked for, then
 * the payload through the viewer's window (at most 1 MiB written and not yet parsed, 64 KiB frames).
 */
const BARE_WRITE = `async function (kind) {
  const term = new Terminal({
    fontFamily: '"JetBrains Mono", "Cascadia Mono", "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace',
    fontSize: 13, lineHeight: 1.1, scrollback: 5000, cols: 120, rows: 40, allowProposedApi: true,
  });
  term.open(document.getElementById('t'));
  let used = 'dom';
  if (kind === 'webgl') {
    try { term.loadAddon(new WebglAddon.WebglAddon()); used = 'webgl'; } catch (e) { used = 'dom'; }
  }
  const data = new Uint8Array(await (await fetch('/payload')).arrayBuffer());
  const t0 = performance.now();
  await new Promise(function (resolve) {
    let at = 0, inflight = 0;
    function pump() {
      while (inflight < 16 && at < data.length) {
        const chunk = data.subarray(at, at + 65536);
        at += chunk.length;
        inflight++;
        term.write(chunk, function () {
          inflight--;
          if (at >= data.length && inflight === 0) resolve(); else pump();
        });
      }
    }
    pump();
  });
  await new Promise(function (r) { requestAnimationFrame(function () { requestAnimationFrame(r); }); });
  return { ms: performance.now() - t0, used: used };
}`;

async function bareXterm(browser: Browser, bytes: Buffer, renderer: RendererKind): Promise<Run> {
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  try {
    const page = await context.newPage();
    const files: Record<string, { body: Buffer; type: string }> = {
      '/': {
        type: 'text/html',
        body: Buffer.from('<!doctype html><link rel="stylesheet" href="/xterm.css"><body style="margin:0;background:#0b0e13"><div id="t"></div><script src="/xterm.js"></script><script src="/addon-webgl.js"></script>'),
      },
      '/xterm.css': { type: 'text/css', body: readFileSync(require.resolve('@xterm/xterm/css/xterm.css')) },
      '/xterm.js': { type: 'text/javascript', body: readFileSync(require.resolve('@xterm/xterm/lib/xterm.js')) },
      '/addon-webgl.js': { type: 'text/javascript', body: readFileSync(require.resolve('@xterm/addon-webgl/lib/addon-webgl.js')) },
      '/payload': { type: 'application/octet-stream', body: bytes },
    };
    await page.route(`${BARE_ORIGIN}/**`, (route) => {
      const f = files[new URL(route.request().url()).pathname];
      return f ? route.fulfill({ status: 200, contentType: f.type, body: f.body }) : route.fulfill({ status: 404, body: '' });
    });
    await page.goto(`${BARE_ORIGIN}/`);
    // A string, not a function: the bench runs through esbuild, whose helpers do not exist in the page.
    const result = (await page.evaluate(`(${BARE_WRITE})(${JSON.stringify(renderer)})`)) as { ms: number; used: string };
    return { mibPerSec: bytes.length / MiB / (result.ms / 1000), resyncs: 0, receivedBytes: bytes.length, renderer: result.used };
  } finally {
    await context.close();
  }
}
