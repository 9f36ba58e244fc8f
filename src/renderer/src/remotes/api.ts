import type { RemoteKind, RemoteStatus } from '../../../shared/types';
import { request } from '../api/rest';

/** The person's remotes (`/api/remotes`). A token goes out once, with add, and never comes back. */
export interface NewRemote {
  name: string;
  url: string;
  token: string;
  kind: RemoteKind;
  insecure: boolean;
}

export const remotesApi = {
  list: () => request<{ remotes: RemoteStatus[] }>('GET', '/api/remotes'),
  add: (r: NewRemote) => request<{ remote: RemoteStatus }>('POST', '/api/remotes', r),
  remove: (name: string) => request<{ name: string; removed: boolean }>('DELETE', `/api/remotes/${encodeURIComponent(name)}`),
  retry: (name: string) => request<{ remote: RemoteStatus }>('POST', `/api/remotes/${encodeURIComponent(name)}/retry`),
};
