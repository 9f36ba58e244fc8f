import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { SessionSummary, ShellState } from '../../shared/types';
import { ApiError } from '../api/errors';
import type { ElsewhereRoute } from '../api/server';
import { bodyObject, parse } from '../api/validate';
import { SessionConstants } from '../terminal/constants';
import { deckId, MaxRemoteIdLength, MaxRemoteTextLength, MaxSessionsPerRemote, reasonOf, statusOf, type RemoteClient, type RemoteClientEvents } from './client';
import { errorMessage, RemoteEndpoint, RemoteRefusedError, type RemoteAnswer } from './endpoint';
import { RemoteLink } from './link';
import type { RemoteEntry } from './store';
import { DefaultSize, relayAioView } from './aio-view';

/**
 * An AIO Sandbox endpoint (aiod's /v2/pty and /v1/shell, or the 1.x server's /v1/shell; ptydeck's own
 * AIO door is wire-compatible and stands in for one in the tests). Its terminals appear as tabs.
 *
 * AIO has no events socket, so the listing is polled; no floor control, so the deck keeps a keyboard
 * rule of its own per tab (Watch or Type; Take over is refused: nothing can hold AIO's agents back); and
 * one socket per terminal, so the deck watches through the terminal's WebSocket only when it is free and
 * never asks for a durable attach (which would knock an agent's socket off). See aio-view.ts.
 */
export const AioTiming = {
  /** How often the listing is asked for: a new terminal's tab within a breath, without loading the sandbox. */
  ListPollMs: 2000,
} as const;

export type AioApi = 'v2' | 'v1';


interface Known {
  api: AioApi;
  summary: SessionSummary;
  json: string;
}

const FloorBody = z.object({ mode: z.enum(['watch', 'type', 'takeover']) });

export const NO_FLOOR_ON_AIO = 'An aio remote has no floor control: AIO cannot hold its agents back, so the deck cannot take over there. Use Type to type beside the agent, or Interrupt.';

export class AioRemote implements RemoteClient {
  readonly endpoint: RemoteEndpoint | null;
  private readonly link: RemoteLink;
  private readonly byId = new Map<string, Known>();
  /** The deck's keyboard rule per terminal (AIO has none of its own). */
  private readonly floors = new Map<string, 'watch' | 'type'>();
  /** How each open view of a terminal watches it (several viewers may watch one terminal). */
  private readonly watchers = new Map<string, Map<object, 'socket' | 'polling'>>();
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly stopListeners = new Set<() => void>();

  constructor(
    readonly entry: RemoteEntry,
    token: string | Error,
    private readonly out: RemoteClientEvents,
  ) {
    this.link = new RemoteLink(() => out.status());
    if (token instanceof Error) {
      this.endpoint = null;
      this.link.down(token.message, true);
      return;
    }
    this.endpoint = new RemoteEndpoint(entry.url, token, entry.ca);
    void this.poll();
  }

  get name(): string {
    return this.entry.name;
  }

  status() {
    return statusOf(this.entry, this.link, this.byId.size);
  }

  sessions(): SessionSummary[] {
    return [...this.byId.values()].map((k) => k.summary);
  }

  known(remoteId: string): { api: AioApi; summary: SessionSummary } | null {
    return this.byId.get(remoteId) ?? null;
  }

  floorOf(remoteId: string): 'watch' | 'type' {
    return this.floors.get(remoteId) ?? 'watch';
  }

  /** A view reports how it watches (null when it closes); the tab says so. */
  setWatch(remoteId: string, viewer: object, mode: 'socket' | 'polling' | null): void {
    let m = this.watchers.get(remoteId);
    if (!m) this.watchers.set(remoteId, (m = new Map()));
    if (mode) m.set(viewer, mode);
    else m.delete(viewer);
    if (m.size === 0) this.watchers.delete(remoteId);
    this.refresh(remoteId);
  }

  /** Called when the remote is removed: its views end their viewers' sockets. */
  onStop(listener: () => void): () => void {
    this.stopListeners.add(listener);
    return () => this.stopListeners.delete(listener);
  }

  route(remoteId: string): ElsewhereRoute {
    return {
      http: (req) => this.answer(req, remoteId),
      view: (up) => relayAioView(up, this, remoteId),
    };
  }

  retryNow(): void {
    if (!this.timer || this.stopped) return;
    clearTimeout(this.timer);
    this.timer = null;
    void this.poll();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const l of [...this.stopListeners]) l();
    this.endpoint?.close();
    for (const id of this.byId.keys()) this.out.closed(deckId(this.name, id));
    this.byId.clear();
  }

  /** Types into the terminal over REST (no socket needed, so never in an agent's way). */
  async input(remoteId: string, data: string): Promise<void> {
    const api = this.byId.get(remoteId)?.api ?? 'v2';
    const answer =
      api === 'v2'
        ? await this.call('POST', `/v2/pty/sessions/${encodeURIComponent(remoteId)}/input`, { input: data, press_enter: false })
        : await this.call('POST', '/v1/shell/write', { id: remoteId, input: data, press_enter: false });
    this.check(answer, remoteId);
  }

  async call(method: string, path: string, body?: unknown): Promise<RemoteAnswer> {
    if (!this.endpoint) throw new ApiError(502, `Remote ${this.name} cannot be used: ${this.link.reason}`, 'REMOTE_UNAUTHORIZED');
    try {
      return await this.endpoint.request(method, path, body);
    } catch (err) {
      throw new ApiError(502, `Remote ${this.name} did not answer: ${reasonOf(err).reason}`, 'REMOTE_UNREACHABLE');
    }
  }

  /** An AIO answer as the deck's: its envelope's `success: false` and error statuses become ApiErrors. */
  check(answer: RemoteAnswer, remoteId: string): unknown {
    const body = answer.body as { success?: unknown; data?: unknown } | null;
    const message = errorMessage(answer.body) ?? `HTTP ${answer.status}`;
    if (answer.status === 401 || answer.status === 403) throw new ApiError(502, `Remote ${this.name} refused the deck (${answer.status}): ${message}`, 'REMOTE_UNAUTHORIZED');
    if (answer.status === 404 || (answer.status === 200 && body?.success === false && /not found/i.test(message))) {
      throw new ApiError(404, `Session ${deckId(this.name, remoteId)} not found (on remote ${this.name})`, 'NOT_FOUND');
    }
    if (answer.status >= 500) throw new ApiError(502, `Remote ${this.name} failed (${answer.status}): ${message}`, 'REMOTE_FAILED');
    if (answer.status >= 400 || body?.success === false) throw new ApiError(answer.status >= 400 ? answer.status : 400, `${message} (on remote ${this.name})`);
    return body?.data;
  }

  // ------------------------------------------------------------------ the listing

  private async poll(): Promise<void> {
    this.timer = null;
    if (this.stopped || !this.endpoint) return;
    const ep = this.endpoint;
    const [v2, v1] = await Promise.allSettled([ep.request('GET', '/v2/pty/sessions'), ep.request('GET', '/v1/shell/sessions')]);
    if (this.stopped) return;
    const lists = [listOf(v2, 'v2'), listOf(v1, 'v1')];
    const ok = lists.filter((l): l is { api: AioApi; sessions: Record<string, Record<string, unknown>> } => 'sessions' in l);
    if (ok.length === 0) {
      const errors = lists.map((l) => ('error' in l ? l.error : null));
      const refused = errors.find((e) => e instanceof RemoteRefusedError && (e.status === 401 || e.status === 403));
      const unreachable = errors.find((e) => !(e instanceof RemoteRefusedError));
      const { reason, unauthorized } = refused
        ? reasonOf(refused)
        : unreachable
          ? reasonOf(unreachable)
          : { reason: 'not an AIO endpoint: neither /v2/pty/sessions nor /v1/shell/sessions answered with a listing', unauthorized: false };
      this.timer = setTimeout(() => void this.poll(), this.link.down(reason, unauthorized));
      return;
    }
    const seen = new Set<string>();
    for (const { api, sessions } of ok) {
      for (const [id, info] of Object.entries(sessions)) {
        if (seen.has(id) || seen.size >= MaxSessionsPerRemote || !id || id.length > MaxRemoteIdLength) continue;
        seen.add(id);
        this.upsert(id, api, info && typeof info === 'object' ? info : {});
      }
    }
    for (const id of [...this.byId.keys()]) {
      if (!seen.has(id)) this.remove(id);
    }
    if (this.link.state !== 'online') this.link.up();
    this.timer = setTimeout(() => void this.poll(), AioTiming.ListPollMs);
  }

  private upsert(id: string, api: AioApi, info: Record<string, unknown>): void {
    const summary = this.toDeck(id, info);
    const json = JSON.stringify(summary);
    const known = this.byId.get(id);
    if (known?.json === json && known.api === api) return;
    this.byId.set(id, { api, summary, json });
    this.out.session(summary);
    if (!known) this.out.status();
  }

  private remove(id: string): void {
    if (!this.byId.delete(id)) return;
    this.floors.delete(id);
    this.out.closed(deckId(this.name, id));
    this.out.status();
  }

  /** Rebuilds a known summary after a deck-side change (floor, how it is watched). */
  private refresh(id: string): void {
    const known = this.byId.get(id);
    if (!known) return;
    const summary: SessionSummary = { ...known.summary, floor: this.floorOf(id), remote: { ...known.summary.remote!, watch: this.watchMode(id) } };
    known.summary = summary;
    known.json = JSON.stringify(summary);
    this.out.session(summary);
  }

  private watchMode(id: string): 'socket' | 'polling' | undefined {
    const modes = [...(this.watchers.get(id)?.values() ?? [])];
    return modes.includes('polling') ? 'polling' : modes.includes('socket') ? 'socket' : undefined;
  }

  private toDeck(id: string, info: Record<string, unknown>): SessionSummary {
    const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v.slice(0, MaxRemoteTextLength) : fallback);
    const int = (v: unknown, fallback: number, max: number): number => (typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= max ? v : fallback);
    const created = str(info.created_at, new Date(0).toISOString());
    const current = typeof info.current_command === 'string' && info.current_command ? info.current_command.slice(0, MaxRemoteTextLength) : null;
    return {
      id: deckId(this.name, id),
      host: this.name,
      // AIO knows no agents; ptydeck's own AIO door says whose the terminal is.
      owner: str(info.owner, 'sandbox') || 'sandbox',
      // AIO has no titles: the running command names the tab, as a local session's does.
      title: current,
      titleSource: current ? 'command' : null,
      backend: info.backend === 'tmux' ? 'tmux' : 'native',
      origin: 'aio',
      createdAt: created,
      lastUsedAt: str(info.last_used_at, created),
      cols: int(info.cols, DefaultSize.cols, SessionConstants.MaxCols),
      rows: int(info.rows, DefaultSize.rows, SessionConstants.MaxRows),
      cwd: str(info.working_dir),
      shellState: shellStateOf(info.status),
      exitCode: null,
      floor: this.floorOf(id),
      controller: 'agent',
      floorReason: null,
      floorLeaseExpiresAt: null,
      refusals: 0,
      refusedBy: [],
      command: current ? { command: current, source: 'exec', status: 'running', exitCode: null, startedAt: str(info.last_used_at, created), finishedAt: null } : null,
      waitingForInput: false,
      prompt: null,
      attached: int(info.attached_clients, 0, MaxSessionsPerRemote),
      viewers: 0,
      durable: info.backend === 'tmux',
      restored: false,
      remote: { kind: 'aio', id, floorControl: false, watch: this.watchMode(id) },
    };
  }

  // ------------------------------------------------------------------ the deck's routes for an aio terminal

  private async answer(req: FastifyRequest, remoteId: string): Promise<unknown> {
    const tail = /^\/api\/sessions\/[^/?]+(\/[^?]*)?/.exec(req.url)?.[1] ?? '';
    const known = this.byId.get(remoteId);
    const notFound = (): never => {
      throw new ApiError(404, `Session ${deckId(this.name, remoteId)} not found (on remote ${this.name})`, 'NOT_FOUND');
    };
    const route = `${req.method} ${tail || '/'}`;
    switch (route) {
      case 'GET /':
        return known ? known.summary : notFound();
      case 'DELETE /': {
        const api = known?.api ?? 'v2';
        const path = api === 'v2' ? `/v2/pty/sessions/${encodeURIComponent(remoteId)}` : `/v1/shell/sessions/${encodeURIComponent(remoteId)}`;
        this.check(await this.call('DELETE', path), remoteId);
        this.remove(remoteId);
        return { id: deckId(this.name, remoteId), closed: true, survivors: [] };
      }
      case 'POST /floor':
      case 'POST /takeover':
      case 'POST /release': {
        if (!known) notFound();
        const mode = tail === '/floor' ? parse(FloorBody, bodyObject(req.body, 'native'), 'native').mode : tail === '/takeover' ? 'takeover' : 'watch';
        if (mode === 'takeover') throw new ApiError(409, NO_FLOOR_ON_AIO, 'NOT_SUPPORTED');
        this.floors.set(remoteId, mode);
        this.refresh(remoteId);
        return this.byId.get(remoteId)!.summary;
      }
      case 'POST /interrupt':
        if (!known) notFound();
        await this.input(remoteId, '\x03');
        return { id: deckId(this.name, remoteId), sent: '^C' };
    }
    throw new ApiError(400, `${req.method} ${tail || '/'} is not available for a session on an aio remote: the deck can watch, type, interrupt and close it`, 'NOT_SUPPORTED');
  }
}

function listOf(r: PromiseSettledResult<RemoteAnswer>, api: AioApi): { api: AioApi; sessions: Record<string, Record<string, unknown>> } | { error: unknown } {
  if (r.status === 'rejected') return { error: r.reason };
  const { status, body } = r.value;
  if (status !== 200) return { error: new RemoteRefusedError(status, errorMessage(body) ?? `HTTP ${status}`) };
  const b = body as { data?: { sessions?: unknown }; sessions?: unknown } | null;
  const sessions = b?.data?.sessions ?? b?.sessions;
  if (!sessions || typeof sessions !== 'object' || Array.isArray(sessions)) return { error: new RemoteRefusedError(status, `GET ${api} listing: no sessions in the answer`) };
  return { api, sessions: sessions as Record<string, Record<string, unknown>> };
}

function shellStateOf(status: unknown): ShellState {
  switch (status) {
    case 'active':
    case 'running':
      return 'busy';
    case 'exited':
    case 'terminated':
      return 'exited';
    case 'created':
      return 'starting';
    default:
      return 'prompt';
  }
}
