import { expect, test } from 'vitest';
import type { SessionSummary } from '../../../shared/types';
import { refusalLines } from '../sessions/describe';
import { byUrgency } from './items';
import { sessionAttention } from './session-source';

const base: SessionSummary = {
  id: 's',
  owner: 'claude',
  title: null,
  titleSource: null,
  backend: 'native',
  origin: 'aio-v2',
  createdAt: '2026-01-01T00:00:00.000Z',
  lastUsedAt: '2026-01-01T00:00:00.000Z',
  cols: 80,
  rows: 24,
  cwd: '/tmp',
  shellState: 'prompt',
  exitCode: null,
  floor: 'watch',
  controller: 'agent',
  floorReason: null,
  floorLeaseExpiresAt: null,
  refusals: 0,
  refusedBy: [],
  command: null,
  waitingForInput: false,
  prompt: null,
  attached: 0,
  viewers: 0,
  durable: false,
  restored: false,
};

const command = (exitCode: number | null, status: 'running' | 'completed' = 'completed') => ({
  command: 'make test',
  source: 'exec' as const,
  status,
  exitCode,
  startedAt: '2026-01-01T00:01:00.000Z',
  finishedAt: status === 'running' ? null : '2026-01-01T00:02:00.000Z',
});

test('the queue ranks a question first, then a lease running out, a failure, a refusal; nothing for a quiet session', () => {
  const sessions = new Map<string, SessionSummary>([
    ['quiet', { ...base, id: 'quiet', command: command(0) }],
    ['refused', { ...base, id: 'refused', floor: 'takeover', controller: 'person', refusals: 2, refusedBy: [{ agent: 'claude', count: 2, actions: ['input'], last: '2026-01-01T00:03:00.000Z' }] }],
    ['failed', { ...base, id: 'failed', command: command(2) }],
    ['lease', { ...base, id: 'lease', floor: 'takeover', controller: 'person', floorLeaseExpiresAt: '2026-01-01T00:05:00.000Z' }],
    ['asks', { ...base, id: 'asks', shellState: 'busy', waitingForInput: true, prompt: 'Deploy to prod? [y/N]', command: command(null, 'running') }],
    ['crashed', { ...base, id: 'crashed', shellState: 'exited', exitCode: 3 }],
  ]);
  const items = sessionAttention.items(sessions).sort(byUrgency);
  // Equally urgent ones: the older first (the shell that exited started before the command failed).
  expect(items.map((i) => `${i.kind}:${i.sessionId}`)).toEqual(['waiting:asks', 'lease:lease', 'failed:crashed', 'failed:failed', 'refused:refused']);
  expect(items[0]).toMatchObject({ headline: 'Deploy to prod? [y/N]', dismissible: false });
  expect(items[2]).toMatchObject({ headline: 'The shell exited with code 3', dismissible: true });
  expect(items[3]).toMatchObject({ headline: 'make test failed (exit 2)', dismissible: true });
});

test('refusals read as a sentence per agent, with what it tried', () => {
  const s: SessionSummary = {
    ...base,
    refusedBy: [
      { agent: 'claude', count: 2, actions: ['send', 'input'], last: '' },
      { agent: 'codex', count: 3, actions: ['exec', 'signal', 'close'], last: '' },
    ],
  };
  expect(refusalLines(s)).toEqual(['claude tried to type 2×, refused', 'codex tried to run a command, send a signal and close it 3×, refused']);
});
