import { readdirSync, readFileSync } from 'node:fs';
import { pairedRounds, type BenchCase, type CaseContext, type CaseOutcome } from '../lib/case';
import { startServer, type BenchServer } from '../lib/server';
import { median, nowMs } from '../lib/stats';
import { fmtMs, fmtRatio, latencyRows, type Row } from '../lib/table';

/**
 * Case 7, what the approval gate costs a session whose commands no rule stops (issue 14).
 *
 * In an agent's bash, ptydeck's hook asks the server about every command line before it runs; with no
 * rule that can stop the agent, the answer is "the rest of the line is free" and the shell runs on.
 *
 *   - `exec true` in an agent's session under a policy of 50 `ask` rules none of which matches, against
 *     the same session with no rules (the policy is switched between rounds, in one run): what rules cost.
 *   - the same agent session with no rules, against a session without the hook at all (the person's own,
 *     which is never gated): what the hook itself costs.
 *   - CPU time (the session's shell and the server, from /proc) per `exec true`, with the rules against
 *     without: what the gate costs in work, a figure a busy machine does not stretch the way it stretches
 *     wall-clock time (every wake-up of a process waits for a core there).
 */
const RULES = 50;

export const approvalsCase: BenchCase = {
  id: 'approvals',
  title: 'Approval gate',
  run: (ctx) => runApprovals(ctx),
};

function nonMatchingRules(n: number): { pattern: string; action: 'ask' }[] {
  // Realistic shapes (a word, a flag, an alternation), none of which `true` matches.
  return Array.from({ length: n }, (_, i) => ({ pattern: `\\b(?:never-${i}|nomatch${i})\\s+--flag-${i}\\b`, action: 'ask' as const }));
}

async function runApprovals(ctx: CaseContext): Promise<CaseOutcome> {
  const rounds = ctx.quick ? 2 : 4;
  const perRound = ctx.quick ? 15 : 75;
  const caseName = '7. Approval gate';
  const srv = await startServer();
  const rows: Row[] = [];
  try {
    const made = await srv.api('POST', '/api/tokens', { name: 'bench-agent' });
    if (made.status !== 201) throw new Error(`token: ${made.status} ${JSON.stringify(made.body)}`);
    const agentToken = made.body.token as string;
    const agentId = await create(srv, agentToken);
    const personId = await create(srv, srv.token);
    const policy = (rules: unknown[]) => put(srv, { default: 'allow', rules });
    // Warm-up: JIT, keep-alive connections, the shell's gate connection.
    await policy(nonMatchingRules(RULES));
    for (let i = 0; i < 10; i++) {
      await execTrue(srv, agentId, agentToken);
      await execTrue(srv, personId, srv.token);
    }

    const shellPid = shellOf(srv.pid, agentId);
    const cpu = { ours: 0, baseline: 0 };
    const measured = async (side: 'ours' | 'baseline'): Promise<number[]> => {
      const before = cpuMs(srv.pid) + cpuMs(shellPid);
      const times = await timeMany(perRound, () => execTrue(srv, agentId, agentToken));
      cpu[side] += cpuMs(srv.pid) + cpuMs(shellPid) - before;
      return times;
    };
    const rules = await pairedRounds(
      rounds,
      async () => {
        await policy([]);
        return measured('baseline');
      },
      async () => {
        await policy(nonMatchingRules(RULES));
        return measured('ours');
      },
    );
    rows.push(...latencyRows(caseName, `\`exec true\` in an agent's session, ${RULES} non-matching \`ask\` rules (baseline: no rules), ${rules.ours.flat().length} calls`, rules));
    const calls = rules.ours.flat().length;
    rows.push({
      case: caseName,
      figure: `CPU (shell + server) per \`exec true\`, ${RULES} non-matching \`ask\` rules (baseline: no rules), ${calls} calls each`,
      ours: fmtMs(cpu.ours / calls),
      baseline: fmtMs(cpu.baseline / calls),
      ratio: fmtRatio(cpu.ours / cpu.baseline),
    });
    ctx.log(`  ${RULES} rules: p50 ${median(rules.ours.flat()).toFixed(2)} ms, CPU ${(cpu.ours / calls).toFixed(2)} ms/exec; no rules p50 ${median(rules.baseline.flat()).toFixed(2)} ms, CPU ${(cpu.baseline / calls).toFixed(2)} ms/exec`);

    await policy([]);
    const hook = await pairedRounds(
      rounds,
      () => timeMany(perRound, () => execTrue(srv, personId, srv.token)),
      () => timeMany(perRound, () => execTrue(srv, agentId, agentToken)),
    );
    rows.push(...latencyRows(caseName, `\`exec true\` in an agent's session with no rules (baseline: a session without the hook), ${hook.ours.flat().length} calls`, hook));
    ctx.log(`  hook: p50 ${median(hook.ours.flat()).toFixed(2)} ms; without p50 ${median(hook.baseline.flat()).toFixed(2)} ms`);
  } finally {
    await srv.stop();
  }
  return { rows, notes: [] };
}

/**
 * The pid of the shell of session `id`: the topmost process that carries PTYDECK_SESSION_ID=id (a child
 * of the server, or of the PTY host, which is the default backend).
 */
function shellOf(_serverPid: number, id: string): number {
  const tagged = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`PTYDECK_SESSION_ID=${id}`)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      tagged.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone, or not ours to read
    }
  }
  for (const [pid, ppid] of tagged) if (!tagged.has(ppid)) return pid;
  throw new Error(`no shell found for session ${id}`);
}

/** User and system CPU a process has used, in ms (clock ticks of 10 ms: meaningful over many calls). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

async function create(srv: BenchServer, token: string): Promise<string> {
  const res = await call(srv, token, 'POST', '/v2/pty/sessions', { cols: 120, rows: 40 });
  if (res.status !== 200 || !res.body?.success) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.session_id as string;
}

async function put(srv: BenchServer, policy: unknown): Promise<void> {
  const res = await srv.api('PUT', '/api/policy', policy);
  if (res.status !== 200) throw new Error(`PUT /api/policy: ${res.status} ${JSON.stringify(res.body)}`);
}

async function execTrue(srv: BenchServer, id: string, token: string): Promise<void> {
  const res = await call(srv, token, 'POST', `/v2/pty/sessions/${encodeURIComponent(id)}/exec`, { command: 'true' });
  if (res.status !== 200 || res.body?.data?.status !== 'completed' || res.body?.data?.exit_code !== 0) {
    throw new Error(`exec true on ${id}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
  }
}

async function call(srv: BenchServer, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(srv.url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function timeMany(n: number, op: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = nowMs();
    await op();
    out.push(nowMs() - t0);
  }
  return out;
}
