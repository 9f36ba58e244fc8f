import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Machine } from './machine';

/**
 * docs/PERFORMANCE.md, written by the bench: when, on what, with which command, the table, how to read
 * each figure, and what this run noticed. The section "What changed which figure" belongs to people:
 * it is carried over from the previous file untouched (a placeholder the first time).
 */
export interface ReportInput {
  date: Date;
  machine: Machine;
  command: string;
  quick: boolean;
  durationSecs: number;
  /** 1-minute load average when the run started and when it ended. */
  load: { start: number; end: number };
  /** Processes on the machine when the run started. */
  processes: number;
  table: string;
  notes: string[];
}

const CHANGES_HEADING = '## What changed which figure';
const CHANGES_PLACEHOLDER = '_(To be filled in by the lead engineer after each optimization: the change, the commit, and the figures it moved, before → after.)_';

export function writeReport(path: string, input: ReportInput): void {
  const changes = previousChangesSection(path) ?? `${CHANGES_HEADING}\n\n${CHANGES_PLACEHOLDER}\n`;
  const m = input.machine;
  const text = `# Performance

Written by \`${input.command}\` (bench/run.ts); do not edit by hand, except the section "${CHANGES_HEADING.slice(3)}".

- **Date:** ${input.date.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}
- **Machine:** ${m.cores} cores (${m.cpu}), ${m.memGiB.toFixed(1)} GiB memory, Node ${m.node}, ${m.os}
- **Command:** \`${input.command}\`${input.quick ? ' (quick: small sizes, fewer rounds; a smoke test, not figures to quote)' : ''}
- **Duration:** ${Math.round(input.durationSecs)} s
- **Load:** 1-minute load average ${input.load.start.toFixed(1)} at the start, ${input.load.end.toFixed(1)} at the end (on ${m.cores} cores; whatever else runs on the machine weighs on every absolute figure, and on the ratios less); ${input.processes} processes on the machine at the start

${input.table}

**Ratio** is always ours ÷ baseline. For a rate (MiB/s) below 1× is slower than the baseline; for a
latency or a memory figure above 1× is slower or bigger. Ours and the baseline run in rounds, each run of
ours beside a baseline run made right next to it, alternating which goes first (ABBA), so drift of a
shared machine weighs on both; the ratio is the median of the per-round ratios (four rounds for case
1's doors and case 4's 50-session burst, whose ratios swung most between runs; two elsewhere). Latency
cells give the percentile over every sample of every round; the ratio compares that percentile round by
round.

## How to read each figure

Unless a row says otherwise, sessions use the PTY host backend (\`AIO_SHELL_BACKEND=host\`, what the
default \`auto\` means: PTYs in a separate ptydeck process, read on the other core). The rows marked
"(node-pty in the server)" repeat the first doors with \`native\`, the rows marked "(tmux backend)" a few
figures, smaller, with tmux. Where a row gives server CPU "(+ the PTY host's)", the second figure is the host's.
Each case starts its own server (\`node bin/ptydeck.js serve --port 0\`, a fresh \`PTYDECK_HOME\`, session
and rate limits raised).

1. **Output throughput.** A file of mixed text (words, numbers, paths, multi-byte UTF-8, some SGR colour
   codes; prepared once per run) is printed with \`cat\` in a session; one client on one door receives it.
   The clock runs from the first payload byte to the last, as the client sees them. *Baseline:* the same
   \`cat\` on a PTY read by node-pty in the bench process itself, the most Node gets out of a PTY.
   Every byte is checked at the client: length and CRC-32 of everything between a BEGIN and an END
   marker. The expected bytes are the file's with \`\\n\` as \`\\r\\n\` (the PTY's ONLCR); the baseline
   confirms that every round. A door that drops bytes shows **FAILED: lost bytes** with the share that
   arrived and the door's own loss reports. The JSON door delivers UTF-8 strings
   (\`{"type":"output","data"}\`); the viewer client acks every frame as soon as it has it, like a viewer
   that parses instantly. The second row per door: the server process's CPU time per MiB while
   streaming (with the tmux backend, plus its tmux server's); the average payload per frame (for the
   baseline, per node-pty read: what one PTY read yields); and the CPU the server spent after the stream
   ended until it went quiet (work the burst left behind, such as parsing the log into the headless screen).
   The third row: the CPU the whole machine spent per MiB (every core's user, system and interrupt time
   from \`/proc/stat\`: the shell and \`cat\`, the kernel's tty and socket work, the PTY host, the server and
   the client), with the bench process's own share in brackets (ours: the door's client; baseline: the
   node-pty reader itself). Where the machine has no idle core to spare, the rates follow these: ours
   runs at about the baseline's CPU per MiB divided by its own.
2. **Keystroke echo.** One key at a time to \`cat\` (cooked mode: the line discipline echoes it) over the
   AIO binary WebSocket; time from sending the key to the frame that carries its echo. Paced 10 ms apart
   (fast typing), and back to back (the next key as soon as the echo is in). *Baseline:* the same keys
   to \`cat\` on node-pty, written and read in-process.
3. **Command round trip.** \`POST /v2/pty/sessions/{id}/exec {"command":"true"}\`, one call after another,
   over HTTP keep-alive; time to the answer. *Baseline:* an interactive bash on node-pty whose prompt is
   a marker: type \`true\`, wait for the marker (the shell's own round trip, without HTTP, JSON or the
   server's shell integration). **send → stdin_read**: \`POST /api/sessions/{id}/send {"text":"read -p 'x? ' v"}\`
   until it answers \`wait_reason: "stdin_read"\`. *Baseline:* the same line typed on node-pty, until the
   prompt \`x? \` arrives: the earliest anyone could know the program waits (the server must then still
   prove it from /proc, and polls for it).
4. **Scale.** **Create**: sessions created one after another with \`POST /v2/pty/sessions\` (which answers
   once the shell has drawn its first prompt). *Baseline:* node-pty spawning a bash to its first prompt.
   **Memory per idle session**: the server process's RSS (/proc/<pid>/status; the shells are other
   processes, so not in it) with 100 idle sessions, minus before, ÷ 100. *Baseline:* the same for a bare
   Node process holding 100 node-pty bashes. RSS is coarse (the heap grows in steps), so read it to within
   tens of KiB. **N sessions × 8 MiB at once**: every session \`cat\`s an 8 MiB file at the same moment,
   each read by its own AIO binary WebSocket; aggregate MiB/s from the first BEGIN to the last END, every
   byte checked. *Baseline:* as many node-pty \`cat\`s read in-process. **RSS after the bursts**: what the
   server holds once they are over and its memory budget has settled (SettledAfterOutputMs: idle logs
   spilled to their hot tails, a collection, the C heap's free pages given back); in brackets, the same
   read as soon as the server was quiet, before that. The PTY host's, read at the same moments, beside
   it. **Close**: \`DELETE /v2/pty/sessions/{id}\` one by one, which answers once the session's
   process tree is gone. *Baseline:* node-pty killing a bash until it exits.
5. **Flood with a stalled reader.** One session runs \`yes\` while its only client (an AIO binary WebSocket)
   never reads (\`ws.pause()\`); another session runs \`exec true\` every 100 ms. Figures: the server's peak
   RSS during the flood (kernel VmHWM, reset at the start, and sampling) against the same server before
   any flood; the execs' p50/p99 against the same execs with no flood, in alternating periods (five
   floods, five quiet periods); the execs in the seconds after each flood is stopped (^C), 100 in all, so
   that their p99 (nearest rank) is not simply the slowest one; how fast the server read the flooding
   PTY, and the CPU it spent from the ^C until it went quiet.
6. **Viewer rendering.** Chromium (Playwright, Debian's Chromium; SwiftShader provides WebGL, in software)
   opens the viewer page on a session (\`/?session_id=<id>\`, \`&renderer=dom\` for the fallback), which then
   \`cat\`s a 32 MiB payload; MiB/s from typing the command until the terminal's buffer holds the END marker
   (through the page's test hook \`__ptydeckTerminalText\`) and two animation frames have passed. The page
   counts the view socket's \`resync\` frames and the output bytes it received: a viewer more than 2 MiB
   behind is sent a fresh snapshot instead of the backlog, so with resyncs it rendered only part of the
   stream (the share is shown). *Baseline:* the same bytes written into a bare xterm.js (same size, font,
   scrollback and renderer) on a blank page in the same browser, with the viewer's 1 MiB window,
   until the last write callback and two frames.
7. **Restart (PTY host).** A server holds 20 sessions (each printed \`seq 1 20000\`) while a 21st streams
   64 MiB to an execd client; the server is killed with SIGKILL once a few MiB are through and started
   again on the same home. *Figure:* the time from starting it until it answers with every session listed
   (their logs replayed from the host); the bytes the client lost resuming from its offset (length and
   CRC, must be 0). *Baseline:* a server starting on a fresh home, until it answers.
8. **Approval gate.** In an agent's bash, ptydeck's hook asks the server about each command line before it
   runs. **50 rules**: \`exec true\` over AIO v2 in an agent's session while the policy holds 50 \`ask\` rules
   none of which matches, against the same session with no rules (the policy is switched between rounds,
   ABBA): what rules cost a session they do not stop. **The hook**: the same agent session with no rules,
   against a session without the hook (the person's own, which is never gated): one round trip to the
   server per line (about two process wake-ups), which a loaded machine magnifies.

${changes}
## Notes from this run

${input.notes.length ? input.notes.map((n) => `- ${n}`).join('\n') : '- Nothing failed; no door reported a gap.'}
`;
  writeFileSync(path, text);
}

function previousChangesSection(path: string): string | null {
  if (!existsSync(path)) return null;
  const old = readFileSync(path, 'utf8');
  const at = old.indexOf(CHANGES_HEADING);
  if (at < 0) return null;
  const rest = old.slice(at);
  const next = rest.indexOf('\n## ', CHANGES_HEADING.length);
  const section = next < 0 ? rest : rest.slice(0, next);
  return `${section.trimEnd()}\n`;
}
