import type { RecordingInfo, TimelinePage } from '../../../shared/timeline';
import { authHeaders, httpUrl } from '../api/connection';
import { ApiError } from '../api/rest';

/** The timeline's and recordings' routes (src/main/timeline/timeline-routes.ts), as the viewer calls them. */
export type TimelineSource = { kind: 'session'; id: string } | { kind: 'recording'; key: string };

export interface SessionTimeline extends TimelinePage {
  session: string;
  /** The recording key of this life of the session. */
  run: string;
  live: boolean;
}

async function get(path: string): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(httpUrl(path), { headers: authHeaders() });
  } catch {
    throw new ApiError(0, 'UNREACHABLE', 'The ptydeck server cannot be reached');
  }
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      message = ((await res.json()) as { error?: { message?: string } }).error?.message ?? message;
    } catch {
      // not JSON
    }
    throw new ApiError(res.status, `HTTP_${res.status}`, message);
  }
  return res;
}

const base = (s: TimelineSource): string => (s.kind === 'session' ? `/api/sessions/${encodeURIComponent(s.id)}` : `/api/recordings/${encodeURIComponent(s.key)}`);

export const timelineApi = {
  timeline: async (s: TimelineSource, since = 0): Promise<SessionTimeline> => (await get(`${base(s)}/timeline?since=${since}`)).json(),
  /** The .cast text; for a session, its newest life's. */
  cast: async (s: TimelineSource): Promise<string> => (await get(s.kind === 'session' ? `${base(s)}/recording` : base(s))).text(),
  recordings: async (): Promise<{ recording: boolean; recordings: RecordingInfo[] }> => (await get('/api/recordings')).json(),
  deleteRecording: async (key: string): Promise<void> => {
    const res = await fetch(httpUrl(`/api/recordings/${encodeURIComponent(key)}`), { method: 'DELETE', headers: authHeaders() });
    if (!res.ok) throw new ApiError(res.status, `HTTP_${res.status}`, ((await res.json().catch(() => null)) as { error?: { message?: string } } | null)?.error?.message ?? `${res.status}`);
  },
};

/** Saves the .cast as a file (fetched with the credential, then handed to the browser as a download). */
export async function exportCast(s: TimelineSource, fileName: string): Promise<void> {
  const text = await timelineApi.cast(s);
  const url = URL.createObjectURL(new Blob([text], { type: 'application/x-asciicast' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = fileName.endsWith('.cast') ? fileName : `${fileName}.cast`;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
