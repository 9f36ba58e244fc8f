import type { BulkResult, FloorMode, PauseState, SessionSummary } from '../../../shared/types';
import { authHeaders, httpUrl, setViewerKey } from './connection';

/** A refusal from the server (`{error: {code, message}}`), or status 0 when it could not be reached. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** ptydeck's own `{error: {code, message}}`, or AIO's `{success: false, message}` (the answer box uses AIO's input route). */
interface ErrorBody {
  error?: { code?: string; message?: string };
  message?: string;
}

/** One call to the server's REST API with the viewer's credential; refusals become ApiError. */
export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(httpUrl(path), {
      method,
      headers: { ...authHeaders(), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'UNREACHABLE', 'The ptydeck server cannot be reached');
  }
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // A proxy's HTML error page, say: fall through to the status line.
  }
  if (!res.ok) {
    const body = parsed as ErrorBody | null;
    const err = body?.error;
    throw new ApiError(res.status, err?.code ?? `HTTP_${res.status}`, err?.message ?? body?.message ?? `${res.status} ${res.statusText}`);
  }
  return parsed as T;
}

const sessionPath = (id: string, rest = ''): string => `/api/sessions/${encodeURIComponent(id)}${rest}`;

export const api = {
  /** Whether this page's credential is accepted (always a 200: a fresh browser is not an error). */
  loginState: () => request<{ signedIn: false } | { signedIn: true; principal: string; kind: 'admin' | 'agent' }>('GET', '/api/login'),
  /** Signs in with a login link's code or the admin token; keeps the viewer session's key. */
  login: async (credential: { code: string } | { token: string }) => {
    const { key } = await request<{ ok: true; key: string }>('POST', '/api/login', credential);
    setViewerKey(key);
  },
  logout: async () => {
    try {
      await request<{ ok: true }>('POST', '/api/logout', {});
    } finally {
      setViewerKey(null);
    }
  },
  createSession: (opts: { cwd?: string; cols?: number; rows?: number } = {}) =>
    request<{ created: boolean; session: SessionSummary }>('POST', '/api/sessions', opts),
  closeSession: (id: string) => request<{ id: string; closed: boolean }>('DELETE', sessionPath(id)),
  setFloor: (id: string, mode: FloorMode) => request<SessionSummary>('POST', sessionPath(id, '/floor'), { mode }),
  takeover: (id: string) => request<SessionSummary>('POST', sessionPath(id, '/takeover')),
  release: (id: string) => request<SessionSummary>('POST', sessionPath(id, '/release')),
  interrupt: (id: string) => request<{ id: string; sent: string }>('POST', sessionPath(id, '/interrupt')),
  rename: (id: string, title: string) => request<SessionSummary>('PATCH', sessionPath(id), { title }),
  /** Types a line as the person (AIO's input route: the person's credential is never refused by the floor). */
  answer: (id: string, text: string) => request<unknown>('POST', `/v2/pty/sessions/${encodeURIComponent(id)}/input`, { input: text, press_enter: true }),
  pause: (agent: string | null) => request<BulkResult>('POST', '/api/pause', agent ? { agent } : {}),
  resume: (agent: string | null) => request<BulkResult>('POST', '/api/resume', agent ? { agent } : {}),
  interruptAgent: (agent: string | null) => request<BulkResult>('POST', '/api/interrupt', agent ? { agent } : {}),
  pauseState: () => request<PauseState>('GET', '/api/pause'),
  tokens: () => request<{ tokens: { name: string; createdAt: string }[] }>('GET', '/api/tokens'),
  revokeToken: (name: string) => request<{ name: string; revoked: boolean }>('DELETE', `/api/tokens/${encodeURIComponent(name)}`),
};
