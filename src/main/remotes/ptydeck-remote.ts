import type { FastifyReply, FastifyRequest } from 'fastify';
import type WebSocket from 'ws';
import type { SessionSummary } from '../../shared/types';
import { ApiError } from '../api/errors';
import { SendConstants } from '../terminal/send';
import type { ElsewhereRoute } from '../api/server';
import { asText, jsonObject, keepalive } from '../api/ws-util';
import { closeReason, deckId, MaxRemoteIdLength, MaxSessionsPerRemote, reasonOf, statusOf, type RemoteClient, type RemoteClientEvents } from './client';
import { errorMessage, RemoteEndpoint, RemoteRefusedError, RemoteTiming, RemoteUnreachableError, type RemoteAnswer } from './endpoint';
import { RemoteLink } from './link';
import type { RemoteEntry } from './store';
import { relayPtydeckView } from './ptydeck-view';

/**
 * Another ptydeck server, with full fidelity: the deck follows the remote's own events socket
 * (/api/events) for its listing, relays its view sockets, and hands every /api/sessions/{id}/... call to
 * the remote's own route with the remote's token. So the floor is held *on the remote*, and the remote's
 * agents get the remote's 423; titles, waiting-for-input and whatever the remote's summary carries come
 * along as they are.
 *
 * The token must be the remote's person (admin) token: the view socket and floor control need it.
 */
export const PtydeckRemoteTiming = {
  /** Ping the events socket this often: a remote that vanished without a word is noticed within two. */
  EventsPingMs: 10_000,
} as const;

export class PtydeckRemote implements RemoteClient {
  readonly endpoint: RemoteEndpoint | null;
  private readonly link: RemoteLink;
  /** By the remote's own id; the summaries are already in the deck's terms (`host/id`). */
  private readonly byId = new Map<string, { summary: SessionSummary; json: string }>();
  private events: WebSocket | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly onlineListeners = new Set<() => void>();
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
    this.connect();
  }

  get name(): string {
    return this.entry.name;
  }

  get online(): boolean {
    return this.link.state === 'online';
  }

  get reason(): string | null {
    return this.link.reason;
  }

  status() {
    return statusOf(this.entry, this.link, this.byId.size);
  }

  sessions(): SessionSummary[] {
    return [...this.byId.values()].map((e) => e.summary);
  }

  /** Called when the remote is removed: its relays end their viewers' sockets. */
  onStop(listener: () => void): () => void {
    this.stopListeners.add(listener);
    return () => this.stopListeners.delete(listener);
  }

  /** Called each time the events socket is back: relays waiting out a backoff try at once. */
  onOnline(listener: () => void): () => void {
    this.onlineListeners.add(listener);
    return () => this.onlineListeners.delete(listener);
  }

  route(remoteId: string): ElsewhereRoute {
    return {
      http: (req, reply) => this.proxy(req, reply, remoteId),
      view: (up) => relayPtydeckView(up, this, remoteId),
    };
  }

  retryNow(): void {
    if (!this.timer || this.stopped) return;
    clearTimeout(this.timer);
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.events?.close(1000);
    this.events = null;
    for (const l of [...this.stopListeners]) l();
    this.endpoint?.close();
    for (const id of this.byId.keys()) this.out.closed(deckId(this.name, id));
    this.byId.clear();
  }

  private connect(): void {
    this.timer = null;
    if (this.stopped || !this.endpoint) return;
    this.endpoint.socket('/api/events').then(
      ({ ws, listen }) => {
        if (this.stopped) return void ws.close(1000);
        this.events = ws;
        keepalive(ws, PtydeckRemoteTiming.EventsPingMs);
        listen((data, isBinary) => {
          if (!isBinary) this.onEvent(ws, jsonObject(asText(data)));
        });
        ws.on('close', (code) => {
          if (this.events !== ws) return;
          this.events = null;
          this.failed(new RemoteUnreachableError(closeReason(code)));
        });
      },
      (err) => this.failed(err),
    );
  }

  private failed(err: unknown): void {
    if (this.stopped) return;
    const { reason, unauthorized } = reasonOf(err);
    const delay = this.link.down(reason, unauthorized);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  private onEvent(ws: WebSocket, frame: Record<string, unknown> | null): void {
    if (!frame) return;
    switch (frame.type) {
      case 'hello': {
        if (frame.principal !== 'admin') {
          // An agent's token lists only that agent's sessions and may neither watch nor hold the floor.
          this.events = null;
          ws.close(1000);
          this.failed(new RemoteRefusedError(403, `the token belongs to agent ${JSON.stringify(frame.principal)}; the deck needs the remote's person (admin) token`));
          return;
        }
        const sessions = Array.isArray(frame.sessions) ? frame.sessions : [];
        const seen = new Set<string>();
        for (const s of sessions.slice(0, MaxSessionsPerRemote)) {
          const id = this.upsert(s);
          if (id !== null) seen.add(id);
        }
        for (const id of [...this.byId.keys()]) {
          if (!seen.has(id)) this.remove(id);
        }
        this.link.up();
        for (const l of this.onlineListeners) l();
        return;
      }
      case 'session':
        if (this.byId.size < MaxSessionsPerRemote || this.byId.has(String((frame.session as { id?: unknown })?.id))) this.upsert(frame.session);
        return;
      case 'closed':
        if (typeof frame.id === 'string') this.remove(frame.id);
        return;
    }
  }

  /** Takes a summary from the remote into the deck's terms; returns its remote id, or null when malformed. */
  private upsert(raw: unknown): string | null {
    const s = raw as SessionSummary;
    if (!s || typeof s !== 'object' || typeof s.id !== 'string' || !s.id || s.id.length > MaxRemoteIdLength || typeof s.owner !== 'string') return null;
    // The remote's own remotes are not taken in: two decks that list each other (or one that lists
    // itself) would otherwise mirror each other's sessions without end.
    if (s.host !== undefined || s.remote !== undefined) return null;
    const json = JSON.stringify(s);
    const known = this.byId.get(s.id);
    if (known?.json === json) return s.id;
    const summary = this.toDeck(s);
    this.byId.set(s.id, { summary, json });
    this.out.session(summary);
    if (!known) this.out.status();
    return s.id;
  }

  private remove(remoteId: string): void {
    if (!this.byId.delete(remoteId)) return;
    this.out.closed(deckId(this.name, remoteId));
    this.out.status();
  }

  private toDeck(s: SessionSummary): SessionSummary {
    // A remote of an older version lists no deck fields (titles, refusals, leases): the viewer reads them all.
    const deck = { title: null, titleSource: null, floorReason: null, floorLeaseExpiresAt: null, refusals: 0, refusedBy: [], prompt: null, viewers: 0 };
    return { ...deck, ...s, id: deckId(this.name, s.id), host: this.name, remote: { kind: 'ptydeck', id: s.id, floorControl: true } };
  }

  /** /api/sessions/{host/id}/rest → the remote's /api/sessions/{id}/rest, with the remote's token. */
  private async proxy(req: FastifyRequest, reply: FastifyReply, remoteId: string): Promise<unknown> {
    if (!this.endpoint) throw new ApiError(502, `Remote ${this.name} cannot be used: ${this.link.reason}`, 'REMOTE_UNAUTHORIZED');
    const rest = /^\/api\/sessions\/[^/?]+(.*)$/.exec(req.url)?.[1] ?? '';
    // The recording (a .cast, up to PTYDECK_RECORDING_MAX_BYTES) is passed on as it comes, not collected.
    if (req.method === 'GET' && /^\/recording(\?|$)/.test(rest)) return this.relayRecording(reply, remoteId);
    const body = req.body === undefined ? undefined : req.body;
    // A call that waits on the remote's program by design gets the wait it asked for, plus a margin.
    const waits = (body as { timeout_ms?: unknown } | undefined)?.timeout_ms;
    const long = /^\/(send|exec)(\?|$)/.test(rest);
    const timeout = long ? (typeof waits === 'number' && waits > 0 ? Math.min(waits, SendConstants.MaxTimeoutMs) : SendConstants.TimeoutMs) + RemoteTiming.LongCallMarginMs : RemoteTiming.RequestMs;
    let answer;
    try {
      answer = await this.endpoint.request(req.method, `/api/sessions/${encodeURIComponent(remoteId)}${rest}`, body, timeout);
    } catch (err) {
      throw this.unreachable(err);
    }
    this.refusal(answer);
    reply.code(answer.status);
    return this.rewrite(answer.body, remoteId);
  }

  private unreachable(err: unknown): ApiError {
    const e = err as RemoteUnreachableError;
    return new ApiError(e.status ?? 502, `Remote ${this.name} did not answer: ${reasonOf(err).reason}`, e.status === 504 ? 'REMOTE_TIMEOUT' : 'REMOTE_UNREACHABLE');
  }

  /** Throws the deck's error for a remote's error answer (never the viewer's own 401). */
  private refusal(answer: RemoteAnswer): void {
    const message = errorMessage(answer.body);
    if (answer.status === 401 || answer.status === 403) {
      // Never the viewer's own 401: its login is fine, the deck's token for the remote is not.
      throw new ApiError(502, `Remote ${this.name} refused the deck (${answer.status}): ${message ?? 'no reason given'}`, 'REMOTE_UNAUTHORIZED');
    }
    if (answer.status >= 500) throw new ApiError(502, `Remote ${this.name} failed (${answer.status}): ${message ?? 'no reason given'}`, 'REMOTE_FAILED');
    if (answer.status >= 400) {
      const code = (answer.body as { error?: { code?: unknown } })?.error?.code;
      throw new ApiError(answer.status, `${message ?? `HTTP ${answer.status}`} (on remote ${this.name})`, typeof code === 'string' ? code : undefined);
    }
  }

  /** /api/sessions/{host/id}/recording: the remote's .cast, streamed, named for the deck's id. */
  private async relayRecording(reply: FastifyReply, remoteId: string): Promise<unknown> {
    const endpoint = this.endpoint!;
    let res;
    try {
      res = await endpoint.stream(`/api/sessions/${encodeURIComponent(remoteId)}/recording`);
    } catch (err) {
      throw this.unreachable(err);
    }
    if (res.statusCode !== 200) {
      let answer: RemoteAnswer;
      try {
        answer = await RemoteEndpoint.collect(res);
      } catch (err) {
        throw this.unreachable(err);
      }
      this.refusal(answer);
      throw new ApiError(502, `Remote ${this.name} answered ${answer.status} for a recording`, 'REMOTE_FAILED');
    }
    const name = `${deckId(this.name, remoteId).replace(/[^A-Za-z0-9_.-]/g, '_')}.cast`;
    const length = res.headers['content-length'];
    reply.type('application/x-asciicast').header('Content-Disposition', `attachment; filename="${name}"`);
    if (typeof length === 'string' && /^\d+$/.test(length)) reply.header('Content-Length', length);
    return reply.send(res);
  }

  /** A summary (or `{session}`, or `{id, ...}`) the remote answered, in the deck's ids. */
  private rewrite(body: unknown, remoteId: string): unknown {
    if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
    const b = body as Record<string, unknown>;
    const fix = (o: Record<string, unknown>): Record<string, unknown> =>
      o.id !== remoteId ? o : typeof o.owner === 'string' ? (this.toDeck(o as unknown as SessionSummary) as unknown as Record<string, unknown>) : { ...o, id: deckId(this.name, remoteId) };
    const out = fix(b);
    if (out.session && typeof out.session === 'object') return { ...out, session: fix(out.session as Record<string, unknown>) };
    // A timeline page ({session, run, events}): its session, and each event's, in the deck's id.
    if (out.session === remoteId) {
      const events = Array.isArray(out.events) ? out.events.map((e: unknown) => (e && typeof e === 'object' && (e as { session?: unknown }).session === remoteId ? { ...e, session: deckId(this.name, remoteId) } : e)) : out.events;
      return { ...out, session: deckId(this.name, remoteId), ...(events === undefined ? {} : { events }) };
    }
    return out;
  }
}
