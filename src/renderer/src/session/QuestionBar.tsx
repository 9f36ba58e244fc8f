import type { SessionSummary } from '../../../shared/types';
import { AnswerBox } from '../attention/AnswerBox';
import { HandIcon } from '../ui/icons';

/** Above a terminal whose program waits: the question it asks, an answer box, or take over. */
export function QuestionBar({ session, onTakeOver }: { session: SessionSummary; onTakeOver(): void }) {
  return (
    <div className="question-bar" data-testid="question-bar" role="status">
      <span className="question-label">Waiting for you</span>
      <code className="question-prompt" data-testid="question-prompt" title={session.prompt ?? undefined}>
        {session.prompt ?? `${session.command?.command ?? 'The program'} waits for input`}
      </code>
      <AnswerBox sessionId={session.id} prompt={session.prompt} />
      {session.floor !== 'takeover' ? (
        <button type="button" className="btn btn-small" onClick={onTakeOver} title="Hold the floor: the agent is refused until you release">
          <HandIcon />
          Take over
        </button>
      ) : null}
    </div>
  );
}
