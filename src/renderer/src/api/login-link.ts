import { hasBridgeToken } from './connection';
import { api, ApiError } from './rest';

/**
 * A login link (`/?login=CODE`, printed at start or by `ptydeck url`) carries a one-time code. The page
 * takes it out of the address bar at once and trades it for a viewer session. Done once per page load,
 * however often the store starts.
 */
let redeeming: Promise<string | null> | null = null;

/** Resolves to null when there was no code or it signed in; else to the server's reason for refusing it. */
export function redeemLoginLink(): Promise<string | null> {
  redeeming ??= (async () => {
    const url = new URL(window.location.href);
    const code = url.searchParams.get('login');
    if (code === null) return null;
    url.searchParams.delete('login');
    window.history.replaceState(window.history.state, '', url.pathname + url.search + url.hash);
    if (hasBridgeToken()) return null;
    try {
      await api.login({ code });
      return null;
    } catch (err) {
      return err instanceof ApiError ? err.message : String(err);
    }
  })();
  return redeeming;
}
