import { useEffect, useRef } from 'react';

/**
 * Asks before a link from a terminal opens, showing exactly where it goes: the full address and, apart,
 * its host (an OSC 8 hyperlink's visible text may say anything, and a long address can hide its host).
 * Cancel is the default; Escape and a click outside cancel too. Only http and https links may open.
 */
export function LinkConfirm({ uri, onOpen, onCancel }: { uri: string; onOpen(): void; onCancel(): void }) {
  const cancel = useRef<HTMLButtonElement>(null);
  let host = '';
  let openable = false;
  try {
    const u = new URL(uri);
    host = u.host;
    openable = u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    // Not a URL: shown, never opened.
  }
  useEffect(() => {
    cancel.current?.focus();
    const onKey = (ev: KeyboardEvent) => {
      if (ev.key === 'Escape') onCancel();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onCancel]);
  return (
    <div className="modal-backdrop" onMouseDown={onCancel}>
      <div className="modal" role="dialog" aria-modal="true" aria-labelledby="link-confirm-title" onMouseDown={(ev) => ev.stopPropagation()}>
        <h2 id="link-confirm-title">Open a link from the terminal?</h2>
        <p className="modal-lead">The terminal's output asks to open this address in your browser. An agent or a program wrote it; open it only if you expected it.</p>
        <code className="link-target" data-testid="link-target">
          {uri}
        </code>
        {host ? (
          <p className="modal-hint">
            Site: <strong data-testid="link-host">{host}</strong>
          </p>
        ) : null}
        {!openable ? <p className="modal-hint">Only http and https links can be opened from a terminal.</p> : null}
        <div className="modal-actions">
          <button type="button" className="btn" ref={cancel} onClick={onCancel}>
            Cancel
          </button>
          <button type="button" className="btn btn-primary" disabled={!openable} onClick={onOpen}>
            Open link
          </button>
        </div>
      </div>
    </div>
  );
}
