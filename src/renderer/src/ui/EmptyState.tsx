import { apiOrigin } from '../api/connection';
import { PlusIcon, TerminalIcon } from './icons';

/** No sessions: say how they come to exist, and offer the person one of their own. */
export function EmptyState({ onOpen, opening }: { onOpen(): void; opening: boolean }) {
  const origin = apiOrigin();
  return (
    <div className="empty-state" data-testid="empty-state">
      <div className="empty-icon">
        <TerminalIcon width={28} height={28} />
      </div>
      <h2>No terminals yet</h2>
      <p>
        When an agent opens a terminal through ptydeck's API it appears here at once, live. You can watch it, type beside the agent, or take over.
      </p>
      <div className="empty-howto">
        <div className="howto-label">An agent opens one with</div>
        <pre className="howto-code">
          {`curl -X POST ${origin}/v2/pty/sessions \\
  -H "Authorization: Bearer $TOKEN" \\
  -H "Content-Type: application/json" -d '{"cwd": "/tmp"}'`}
        </pre>
        <div className="howto-note">
          Any AIO Sandbox client works too. Give each agent its own token: <code>ptydeck token create --name my-agent</code>
        </div>
      </div>
      <button type="button" className="btn btn-primary btn-large" onClick={onOpen} disabled={opening}>
        <PlusIcon />
        Open a terminal
      </button>
    </div>
  );
}
