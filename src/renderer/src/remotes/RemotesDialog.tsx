import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { RemoteKind, RemoteStatus } from '../../../shared/types';
import { ApiError } from '../api/rest';
import { CloseIcon, PlusIcon } from '../ui/icons';
import { remotesApi } from './api';
import { RemoteStateText } from './grouping';
import './remotes.css';

/**
 * The person's remotes: every one with its state, and a form to add one. The token field is a password
 * field that is cleared once sent; the server never sends a token back (only its last characters).
 */
export function RemotesDialog({ remotes, onClose }: { remotes: readonly RemoteStatus[]; onClose(): void }) {
  const dialog = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const onKey = (ev: KeyboardEvent) => {
      if (ev.key === 'Escape') onClose();
    };
    window.addEventListener('keydown', onKey);
    dialog.current?.querySelector<HTMLInputElement>('input')?.focus();
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);
  return (
    <div className="modal-backdrop" onMouseDown={(ev) => ev.target === ev.currentTarget && onClose()}>
      <div className="modal remotes-dialog" role="dialog" aria-modal="true" aria-labelledby="remotes-title" ref={dialog} data-testid="remotes-dialog">
        <header className="modal-header">
          <h2 id="remotes-title">Remotes</h2>
          <span className="modal-sub">Other ptydeck servers and AIO sandboxes whose terminals this deck shows.</span>
          <span className="spacer" />
          <button type="button" className="icon-btn" aria-label="Close" onClick={onClose}>
            <CloseIcon />
          </button>
        </header>
        {remotes.length ? (
          <ul className="remote-list">
            {remotes.map((r) => (
              <RemoteRow key={r.name} remote={r} />
            ))}
          </ul>
        ) : (
          <p className="remote-none">No remotes yet. Add one below, or from a shell: <code>ptydeck remote add NAME URL --token T</code>.</p>
        )}
        <AddRemoteForm taken={remotes.map((r) => r.name)} />
      </div>
    </div>
  );
}

function RemoteRow({ remote: r }: { remote: RemoteStatus }) {
  const [armed, setArmed] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const act = async (what: () => Promise<unknown>) => {
    setError(null);
    try {
      await what();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
  };
  return (
    <li className={`remote-row host-${r.state}`} data-testid="remote-row" data-remote={r.name} data-state={r.state}>
      <div className="remote-main">
        <span className={`host-dot host-dot-${r.state}`} aria-hidden="true" />
        <strong className="remote-name">{r.name}</strong>
        <span className="host-kind">{r.kind}</span>
        <span className={`host-state host-state-${r.state}`}>{RemoteStateText[r.state]}</span>
        <span className="remote-sessions">
          {r.sessions} terminal{r.sessions === 1 ? '' : 's'}
        </span>
        <span className="spacer" />
        {r.state !== 'online' && r.state !== 'connecting' ? (
          <button type="button" className="btn btn-small" onClick={() => void act(() => remotesApi.retry(r.name))}>
            Retry now
          </button>
        ) : null}
        <button
          type="button"
          className={`btn btn-small ${armed ? 'btn-danger' : 'btn-quiet'}`}
          onClick={() => (armed ? void act(() => remotesApi.remove(r.name)) : setArmed(true))}
          onBlur={() => setArmed(false)}
          title="Forget this remote and its token (its terminals keep running there)"
        >
          {armed ? 'Really remove?' : 'Remove'}
        </button>
      </div>
      <div className="remote-detail mono">
        {r.url} · token {r.tokenHint}
        {r.insecure ? <span className="remote-insecure"> · insecure: the token crosses the network in clear</span> : null}
      </div>
      {r.reason && r.state !== 'online' ? <div className="remote-reason">{r.reason}</div> : null}
      {error ? (
        <div className="remote-error" role="alert">
          {error}
        </div>
      ) : null}
    </li>
  );
}

function AddRemoteForm({ taken }: { taken: string[] }) {
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [token, setToken] = useState('');
  const [kind, setKind] = useState<RemoteKind>('ptydeck');
  const [insecure, setInsecure] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const plainOffLoopback = /^http:\/\//i.test(url) && !/^http:\/\/(localhost|127\.[\d.]+|\[::1\])(:|\/|$)/i.test(url);
  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    setSending(true);
    setError(null);
    try {
      await remotesApi.add({ name: name.trim(), url: url.trim(), token: token.trim(), kind, insecure });
      setName('');
      setUrl('');
      setToken('');
      setInsecure(false);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setSending(false);
    }
  };
  return (
    <form className="remote-form" onSubmit={(ev) => void submit(ev)} aria-label="Add a remote" data-testid="add-remote">
      <h3>Add a remote</h3>
      <div className="remote-form-grid">
        <label className="field">
          <span>Name</span>
          <input value={name} onChange={(ev) => setName(ev.target.value.toLowerCase())} placeholder="build-box" spellCheck={false} autoComplete="off" />
        </label>
        <label className="field">
          <span>Kind</span>
          <select value={kind} onChange={(ev) => setKind(ev.target.value as RemoteKind)}>
            <option value="ptydeck">ptydeck (full control)</option>
            <option value="aio">AIO Sandbox (watch and type)</option>
          </select>
        </label>
        <label className="field field-wide">
          <span>URL</span>
          <input value={url} onChange={(ev) => setUrl(ev.target.value)} placeholder="https://build-box.example:8791" spellCheck={false} autoComplete="off" />
        </label>
        <label className="field field-wide">
          <span>{kind === 'ptydeck' ? "Its person (admin) token" : 'Its API key'}</span>
          <input type="password" value={token} onChange={(ev) => setToken(ev.target.value)} placeholder={kind === 'ptydeck' ? 'pdk_admin_…' : 'key'} autoComplete="off" spellCheck={false} />
        </label>
      </div>
      {plainOffLoopback ? (
        <label className="remote-insecure-choice">
          <input type="checkbox" checked={insecure} onChange={(ev) => setInsecure(ev.target.checked)} />
          <span>
            Send the token over plain http anyway (insecure). Better: <code>https://</code>, or an SSH tunnel (<code>ssh -N -L 8792:127.0.0.1:8791 HOST</code>, then <code>http://127.0.0.1:8792</code>).
          </span>
        </label>
      ) : null}
      {taken.includes(name.trim()) ? <p className="remote-hint">A remote named {name.trim()} exists already.</p> : null}
      {error ? (
        <p className="remote-error" role="alert" data-testid="add-remote-error">
          {error}
        </p>
      ) : null}
      <button type="submit" className="btn btn-primary" disabled={sending || !name.trim() || !url.trim() || !token.trim()}>
        <PlusIcon />
        Add remote
      </button>
    </form>
  );
}
