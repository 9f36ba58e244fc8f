import { useEffect, useRef, useState } from 'react';
import type { Policy, PolicyAction, PolicyRule } from '../../../shared/approvals';
import { ApiError } from '../api/rest';

/**
 * The policy, editable: what happens by default, then rules tried in order (first match wins). The
 * server checks it; a refusal names the rule (`rules[2]: ...`), which is then marked here.
 */
export function PolicyEditor({ policy, onSave, onClose }: { policy: Policy; onSave(p: Policy): Promise<void>; onClose(): void }) {
  const [draft, setDraft] = useState<Policy>(() => ({ default: policy.default, rules: policy.rules.map((r) => ({ ...r })) }));
  const [error, setError] = useState<{ message: string; rule: number | null } | null>(null);
  const [saving, setSaving] = useState(false);
  const dialog = useRef<HTMLDivElement>(null);
  useEffect(() => {
    dialog.current?.querySelector<HTMLElement>('select, input')?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') onClose();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);

  const setRule = (i: number, patch: Partial<PolicyRule>) => setDraft((d) => ({ ...d, rules: d.rules.map((r, j) => (j === i ? { ...r, ...patch } : r)) }));
  const move = (i: number, by: number) =>
    setDraft((d) => {
      const rules = [...d.rules];
      const j = i + by;
      if (j < 0 || j >= rules.length) return d;
      [rules[i], rules[j]] = [rules[j], rules[i]];
      return { ...d, rules };
    });
  const remove = (i: number) => setDraft((d) => ({ ...d, rules: d.rules.filter((_, j) => j !== i) }));
  const add = () => setDraft((d) => ({ ...d, rules: [...d.rules, { pattern: '', action: 'ask' }] }));

  const save = async () => {
    setSaving(true);
    setError(null);
    try {
      const clean: Policy = { default: draft.default, rules: draft.rules.map((r) => (r.agent ? r : { pattern: r.pattern, action: r.action })) };
      await onSave(clean);
      onClose();
    } catch (err) {
      const message = err instanceof ApiError ? err.message : String(err);
      const m = /rules\[(\d+)\]/.exec(message);
      setError({ message, rule: m ? Number(m[1]) : null });
    } finally {
      setSaving(false);
    }
  };

  return (
    <div className="policy-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div className="policy-dialog" role="dialog" aria-modal="true" aria-label="Approval policy" ref={dialog} data-testid="policy-editor">
        <header className="policy-head">
          <h2>Approval policy</h2>
          <p className="policy-lead">Which agent commands wait for you. Rules are regular expressions, tried in order on the whole command line and on each command in it; the first that matches decides.</p>
        </header>
        <label className="policy-default">
          <span>When no rule matches</span>
          <select value={draft.default} onChange={(e) => setDraft((d) => ({ ...d, default: e.target.value as Policy['default'] }))} aria-label="Default">
            <option value="allow">allow it</option>
            <option value="ask">ask me</option>
          </select>
        </label>
        <ol className="policy-rules">
          {draft.rules.map((r, i) => (
            <li key={i} className={`policy-rule${error?.rule === i ? ' policy-rule-error' : ''}`} data-testid="policy-rule">
              <span className="policy-rule-n">{i + 1}</span>
              <input className="policy-pattern mono" aria-label={`Rule ${i + 1} pattern`} placeholder="regular expression, e.g. \brm\s+-rf" value={r.pattern} onChange={(e) => setRule(i, { pattern: e.target.value })} />
              <select aria-label={`Rule ${i + 1} action`} value={r.action} onChange={(e) => setRule(i, { action: e.target.value as PolicyAction })}>
                <option value="ask">ask me</option>
                <option value="deny">deny</option>
                <option value="allow">allow</option>
              </select>
              <input className="policy-agent" aria-label={`Rule ${i + 1} agent`} placeholder="any agent" value={r.agent ?? ''} onChange={(e) => setRule(i, { agent: e.target.value || undefined })} />
              <button type="button" className="icon-btn" aria-label={`Move rule ${i + 1} up`} disabled={i === 0} onClick={() => move(i, -1)}>
                ↑
              </button>
              <button type="button" className="icon-btn" aria-label={`Move rule ${i + 1} down`} disabled={i === draft.rules.length - 1} onClick={() => move(i, 1)}>
                ↓
              </button>
              <button type="button" className="icon-btn" aria-label={`Remove rule ${i + 1}`} onClick={() => remove(i)}>
                ×
              </button>
            </li>
          ))}
        </ol>
        <button type="button" className="btn btn-small" onClick={add}>
          Add rule
        </button>
        {error ? (
          <p className="policy-error" role="alert" data-testid="policy-error">
            {error.message}
          </p>
        ) : null}
        <footer className="policy-foot">
          <span className="spacer" />
          <button type="button" className="btn btn-quiet" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="btn btn-primary" onClick={() => void save()} disabled={saving}>
            Save policy
          </button>
        </footer>
      </div>
    </div>
  );
}
