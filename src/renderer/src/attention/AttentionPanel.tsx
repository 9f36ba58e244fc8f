import type { SessionSummary } from '../../../shared/types';
import { CloseIcon, HandIcon } from '../ui/icons';
import { AnswerBox } from './AnswerBox';
import type { AttentionItem } from './items';

interface AttentionPanelProps {
  items: AttentionItem[];
  sessions: ReadonlyMap<string, SessionSummary>;
  /** The item the person moved to last (F8), highlighted. */
  current: string | null;
  onOpen(item: AttentionItem): void;
  onDismiss(item: AttentionItem): void;
  onTakeOver(sessionId: string): void;
  onClose(): void;
}

const KIND_LABEL: Record<string, string> = {
  waiting: 'Waiting for you',
  approval: 'Approval',
  lease: 'Floor lease',
  failed: 'Failed',
  refused: 'Refused',
};

/**
 * The attention queue: one list of what needs the person, most urgent first. A waiting program can be
 * answered right here; F8 (Shift+F8 back) moves from item to item and opens each one's terminal.
 */
export function AttentionPanel({ items, sessions, current, onOpen, onDismiss, onTakeOver, onClose }: AttentionPanelProps) {
  return (
    <aside className="attention-panel" aria-label="Needs you" data-testid="attention-panel">
      <header className="attention-head">
        <h2>
          Needs you <span className="attention-count">{items.length}</span>
        </h2>
        <span className="attention-hint" title="F8: next item, Shift+F8: previous">
          F8 next
        </span>
        <button type="button" className="icon-btn" aria-label="Hide the queue" title="Hide the queue" onClick={onClose}>
          <CloseIcon />
        </button>
      </header>
      {items.length === 0 ? (
        <p className="attention-empty" data-testid="attention-empty">
          Nothing needs you. Questions, failed commands and refused agents show up here.
        </p>
      ) : (
        <ol className="attention-list">
          {items.map((item) => {
            const s = item.sessionId ? sessions.get(item.sessionId) : undefined;
            return (
              <li key={item.key} className={`attention-item kind-${item.kind}${item.key === current ? ' current' : ''}`} data-testid="attention-item" data-kind={item.kind} data-session-id={item.sessionId ?? ''}>
                {item.render ? (
                  item.render()
                ) : (
                  <>
                    <button type="button" className="attention-open" onClick={() => onOpen(item)} title="Open this terminal">
                      <span className="attention-kind">{KIND_LABEL[item.kind] ?? item.kind}</span>
                      <span className="attention-headline">{item.headline}</span>
                      <span className="attention-detail">{item.detail}</span>
                    </button>
                    {item.kind === 'waiting' && s ? (
                      <div className="attention-actions">
                        <AnswerBox sessionId={s.id} prompt={s.prompt} />
                        {s.floor !== 'takeover' ? (
                          <button type="button" className="btn btn-small" onClick={() => onTakeOver(s.id)} title="Hold the floor: the agent is refused until you release">
                            <HandIcon />
                            Take over
                          </button>
                        ) : null}
                      </div>
                    ) : null}
                    {item.dismissible ? (
                      <button type="button" className="icon-btn attention-dismiss" aria-label="Dismiss" title="Dismiss" onClick={() => onDismiss(item)}>
                        <CloseIcon />
                      </button>
                    ) : null}
                  </>
                )}
              </li>
            );
          })}
        </ol>
      )}
    </aside>
  );
}
