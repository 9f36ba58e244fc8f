import { chromium, type Page } from '@playwright/test';
import { pairedRounds, type BenchCase, type CaseContext, type CaseOutcome } from '../lib/case';
import { onCleanup } from '../lib/cleanup';
import { cpuMs, waitForQuiet } from '../lib/proc';
import { closeSession, createSession, typeInto, waitForPrompt } from '../lib/sessions';
import { startServer, type BenchServer } from '../lib/server';
import { median } from '../lib/stats';
import { fmtMs, fmtRatio, type Row } from '../lib/table';

/**
 * Case 7, the overview with many busy terminals: Chromium opens the viewer's overview (a live glance of
 * every screen, grouped by agent) on N sessions, each running a program that prints a coloured build
 * line every 10 ms, and the page's frames are counted for a window (requestAnimationFrame callbacks),
 * with the longest gap between two frames and the glances the page received.
 *
 * Baseline: the same page with the same N sessions quiet (nothing printing), measured right beside it.
 * So the ratio says what the busy screens cost the page: 1.0 means nothing.
 *
 * The server's CPU over the window is reported too: glances are rendered there (its headless screens
 * parse what every busy terminal prints), which is the price of a light page.
 */
const CASE = '7. Overview of busy terminals';

/** One build line every 10 ms, in colour, forever: what an agent's build or test run looks like from afar. */
/** Every glance in view is live (only cards in view are glanced; see overview/Overview.tsx). */
const ALL_IN_VIEW_LIVE = `(() => {
  const cards = [...document.querySelectorAll('[data-testid="glance"]')].filter((g) => { const r = g.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; });
  return cards.length > 0 && cards.every((g) => g.getAttribute('data-state') === 'live');
})()`;

const PRINTER =
  "perl -e '$|=1; my $i=0; while (1) { $i++; printf(\"\\e[32m[%06d]\\e[0m compiling \\e[1mmodule_%02d.c\\e[0m ... \\e[33mok\\e[0m %s\\n\", $i, $i % 97, q(=) x ($i % 40)); select(undef, undef, undef, 0.01) }'";

interface Window {
  fps: number;
  /** The longest time between two frames (ms): a stall a person would see. */
  maxGapMs: number;
  /** Frame gaps over 50 ms (a dropped frame at 20 fps or worse). */
  longFrames: number;
  /** Glances received per second, all sessions together. */
  glancesPerSec: number;
  /** The server's CPU over the window, in % of one core. */
  serverCpuPct: number;
}

/** Counts, in the page, the deck socket's glance frames. */
const COUNT_GLANCES = `
window.__benchGlances = 0;
const NativeWebSocket = window.WebSocket;
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) {
    super(...args);
    if (String(args[0]).includes('/api/deck')) this.addEventListener('message', (e) => {
      if (typeof e.data === 'string' && e.data.startsWith('{"type":"glance"')) window.__benchGlances++;
    });
  }
};`;

/** In the page: frames and frame gaps over `ms`, and the glances received meanwhile. */
const MEASURE = `async function (ms) {
  const g0 = window.__benchGlances;
  const gaps = [];
  let frames = 0;
  let last = performance.now();
  const t0 = last;
  await new Promise(function (resolve) {
    function tick(now) {
      frames++;
      gaps.push(now - last);
      last = now;
      if (now - t0 >= ms) resolve(); else requestAnimationFrame(tick);
    }
    requestAnimationFrame(tick);
  });
  const elapsed = performance.now() - t0;
  return { frames: frames, elapsed: elapsed, maxGap: Math.max.apply(null, gaps), long: gaps.filter(function (g) { return g > 50; }).length, glances: window.__benchGlances - g0 };
}`;

export const overviewRenderCase: BenchCase = {
  id: 'overview',
  title: 'Overview of busy terminals',
  async run(ctx: CaseContext): Promise<CaseOutcome> {
    const count = ctx.quick ? 6 : 30;
    const windowMs = ctx.quick ? 3000 : 10_000;
    const rounds = ctx.quick ? 1 : 2;
    const notes: string[] = [];
    const srv = await startServer();
    const browser = await chromium.launch({
      executablePath: process.env.PTYDECK_CHROMIUM || '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist'],
    });
    const closeBrowser = onCleanup(() => browser.close());
    const ids: string[] = [];
    try {
      for (let i = 0; i < count; i++) ids.push(await createSession(srv, `overview-${i}`, { cols: 100, rows: 30 }));
      for (const id of ids) await waitForPrompt(srv, id);
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      const page = await context.newPage();
      await page.addInitScript(COUNT_GLANCES);
      await page.goto(await srv.loginUrl());
      await page.getByTestId('overview-button').click({ timeout: 20_000 });
      // Polled with evaluate: the page's CSP refuses the string eval waitForFunction would use.
      for (const deadline = Date.now() + 30_000; !(await page.evaluate(ALL_IN_VIEW_LIVE)); ) {
        if (Date.now() > deadline) throw new Error('the overview never showed live glances of the terminals in view');
        await new Promise((r) => setTimeout(r, 100));
      }

      const quiet = async (): Promise<Window> => {
        await waitForQuiet(srv.pid);
        return measure(page, srv, windowMs);
      };
      const busy = async (): Promise<Window> => {
        for (const id of ids) await typeInto(srv, id, `${PRINTER}\r`);
        // Let every printer start and the glances reach their steady rate before counting.
        await new Promise((r) => setTimeout(r, 1500));
        try {
          return await measure(page, srv, windowMs);
        } finally {
          for (const id of ids) await typeInto(srv, id, '\x03');
          for (const id of ids) await waitForPrompt(srv, id);
        }
      };
      const runs = await pairedRounds(
        rounds,
        async () => {
          const w = await quiet();
          ctx.log(`  ${count} quiet terminals: ${w.fps.toFixed(1)} fps, longest frame gap ${w.maxGapMs.toFixed(0)} ms`);
          return w;
        },
        async () => {
          const w = await busy();
          ctx.log(`  ${count} busy terminals: ${w.fps.toFixed(1)} fps, longest frame gap ${w.maxGapMs.toFixed(0)} ms, ${w.glancesPerSec.toFixed(0)} glances/s, server ${w.serverCpuPct.toFixed(0)}% of a core`);
          return w;
        },
      );
      await context.close();
      const med = (rs: Window[], f: (w: Window) => number): number => median(rs.map(f));
      const fpsOurs = med(runs.ours, (w) => w.fps);
      const fpsBase = med(runs.baseline, (w) => w.fps);
      const rows: Row[] = [
        {
          case: CASE,
          figure: `page frames per second, ${count} terminals printing a coloured line every 10 ms each (baseline: the same ${count} quiet)`,
          ours: `${fpsOurs.toFixed(1)} fps`,
          baseline: `${fpsBase.toFixed(1)} fps`,
          ratio: fmtRatio(fpsOurs / fpsBase),
        },
        {
          case: CASE,
          figure: 'longest gap between two frames in the window (a stall a person would see)',
          ours: fmtMs(med(runs.ours, (w) => w.maxGapMs)),
          baseline: fmtMs(med(runs.baseline, (w) => w.maxGapMs)),
          ratio: fmtRatio(med(runs.ours, (w) => w.maxGapMs) / med(runs.baseline, (w) => w.maxGapMs)),
        },
        {
          case: CASE,
          figure: `glances received per second (all ${count} screens), and the server's CPU meanwhile`,
          ours: `${med(runs.ours, (w) => w.glancesPerSec).toFixed(0)}/s, server ${med(runs.ours, (w) => w.serverCpuPct).toFixed(0)}% of a core`,
          baseline: `${med(runs.baseline, (w) => w.glancesPerSec).toFixed(0)}/s, server ${med(runs.baseline, (w) => w.serverCpuPct).toFixed(0)}% of a core`,
          ratio: 'n/a',
        },
      ];
      const long = med(runs.ours, (w) => w.longFrames);
      if (long > 0) notes.push(`Overview: with ${count} busy terminals the page had a median of ${long} frame gap(s) over 50 ms per ${windowMs / 1000} s window.`);
      return { rows, notes };
    } finally {
      for (const id of ids) await closeSession(srv, id);
      await closeBrowser();
      await srv.stop();
    }
  },
};

async function measure(page: Page, srv: BenchServer, windowMs: number): Promise<Window> {
  const cpu0 = cpuMs(srv.pid);
  const t0 = Date.now();
  // A string, not a function: the bench runs through esbuild, whose helpers do not exist in the page.
  const r = (await page.evaluate(`(${MEASURE})(${windowMs})`)) as { frames: number; elapsed: number; maxGap: number; long: number; glances: number };
  const wall = Date.now() - t0;
  return {
    fps: (r.frames / r.elapsed) * 1000,
    maxGapMs: r.maxGap,
    longFrames: r.long,
    glancesPerSec: (r.glances / r.elapsed) * 1000,
    serverCpuPct: ((cpuMs(srv.pid) - cpu0) / wall) * 100,
  };
}
