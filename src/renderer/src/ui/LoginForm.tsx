import { useState, type FormEvent } from 'react';
import { api, ApiError } from '../api/rest';
import { TerminalIcon } from './icons';

/** The page has no viewer session (or it ended): sign in with the admin token, or a fresh login link. */
export function LoginForm({ message, onLoggedIn }: { message: string | null; onLoggedIn(): void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    setSending(true);
    setError(null);
    try {
      await api.login({ token: token.trim() });
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
        <p className="login-lead">Open a login link, or paste the admin token.</p>
        <p className="login-hint">
          <code>ptydeck url</code> prints a login link that works once, within a minute. The admin token is in <code>runtime.json</code> in ptydeck's home.
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
