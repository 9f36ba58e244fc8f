import { useState, type FormEvent } from 'react';
import { api, ApiError } from '../api/rest';
import { TerminalIcon } from './icons';

/** What the server said about the `?token=` of the link that brought the person here (viewer-static.ts). */
const LINK_PROBLEMS: Record<string, string> = {
  wrong: "The link's token is not this server's admin token (was the server restarted with a new one?). Paste the admin token below.",
  agent: "The link carried an agent's token. Agents use theirs on the API; the viewer needs the person's admin token.",
};

/** Reads the link's verdict once and takes it out of the address bar, so a reload does not repeat it. */
function linkProblem(): string | null {
  const url = new URL(window.location.href);
  const verdict = url.searchParams.get('login');
  if (!verdict) return null;
  url.searchParams.delete('login');
  window.history.replaceState(null, '', url.pathname + url.search + url.hash);
  return LINK_PROBLEMS[verdict] ?? null;
}

/** The page was opened without the cookie (or the token changed): trade the admin token for one. */
export function LoginForm({ message, onLoggedIn }: { message: string | null; onLoggedIn(): void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(linkProblem);
  const [sending, setSending] = useState(false);
  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    setSending(true);
    setError(null);
    try {
      await api.login(token.trim());
      onLoggedIn();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setSending(false);
    }
  };
  return (
    <main className="login-page">
      <form className="login-card" onSubmit={(ev) => void submit(ev)} aria-labelledby="login-title">
        <div className="brand brand-large">
          <TerminalIcon width={20} height={20} />
          <h1 id="login-title">ptydeck</h1>
        </div>
        <p className="login-lead">Paste the admin token to open the viewer.</p>
        <p className="login-hint">
          It is in the URL <code>ptydeck serve</code> printed at start (<code>?token=…</code>), in <code>runtime.json</code> in ptydeck's home, or from{' '}
          <code>ptydeck url</code>.
        </p>
        {message ? <p className="login-message">{message}</p> : null}
        <label className="field">
          <span>Admin token</span>
          <input type="password" autoComplete="off" spellCheck={false} autoFocus value={token} onChange={(ev) => setToken(ev.target.value)} placeholder="pdk_admin_…" />
        </label>
        {error ? (
          <p className="login-error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" className="btn btn-primary btn-large" disabled={sending || token.trim() === ''}>
          Sign in
        </button>
      </form>
    </main>
  );
}
