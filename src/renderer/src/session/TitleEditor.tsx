import { useState, type FormEvent } from 'react';
import { TitleLimits, type SessionSummary } from '../../../shared/types';
import { api, ApiError } from '../api/rest';
import type { SessionStore } from '../sessions/session-store';
import { displayTitle, tabTooltip } from '../sessions/describe';
import { EditIcon } from '../ui/icons';
import { useToast } from '../ui/toasts';

/** The session's name in its header, and a way to rename it (the agent may have set it; the person may change it). */
export function TitleEditor({ session, store, disabled }: { session: SessionSummary; store: SessionStore; disabled: boolean }) {
  const toast = useToast();
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState('');
  const start = () => {
    setText(session.titleSource === 'set' ? (session.title ?? '') : '');
    setEditing(true);
  };
  const save = async (ev: FormEvent) => {
    ev.preventDefault();
    try {
      store.upsert(await api.rename(session.id, text));
      setEditing(false);
    } catch (err) {
      toast(`Renaming failed: ${err instanceof ApiError ? err.message : String(err)}`, 'error');
    }
  };
  if (editing) {
    return (
      <form className="title-form" onSubmit={(ev) => void save(ev)}>
        <input
          className="title-input"
          aria-label="Terminal title"
          placeholder={session.title ?? 'Name this terminal'}
          maxLength={TitleLimits.MaxChars}
          autoFocus
          value={text}
          onChange={(ev) => setText(ev.target.value)}
          onKeyDown={(ev) => {
            ev.stopPropagation();
            if (ev.key === 'Escape') setEditing(false);
          }}
          onBlur={() => setEditing(false)}
        />
      </form>
    );
  }
  return (
    <>
      <h2 className="session-name" title={tabTooltip(session)} data-testid="session-title" data-title-source={session.titleSource ?? 'id'}>
        {displayTitle(session)}
      </h2>
      <button type="button" className="icon-btn icon-btn-small" aria-label="Rename this terminal" title="Rename" disabled={disabled} onClick={start}>
        <EditIcon />
      </button>
    </>
  );
}
