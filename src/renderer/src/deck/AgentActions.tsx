import { useRef } from 'react';
import type { SessionSummary } from '../../../shared/types';
import { api, ApiError } from '../api/rest';
import { ArmedButton } from '../ui/ArmedButton';
import { InterruptIcon, KeyOffIcon, PauseIcon, PlayIcon } from '../ui/icons';
import { useToast } from '../ui/toasts';

interface AgentActionsProps {
  agent: string;
  sessions: SessionSummary[];
  paused: boolean;
  /** The agent has a token of its own (it can be revoked). */
  hasToken: boolean;
  online: boolean;
  onTokensChanged(): void;
  /** In the sidebar: behind a menu button. In the overview: inline. */
  compact?: boolean;
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/**
 * Acting on all of one agent at once: pause it (take over every terminal it has, and those it opens
 * while paused) and resume it; interrupt every command it is running; revoke its token.
 */
export function AgentActions({ agent, sessions, paused, hasToken, online, onTokensChanged, compact = false }: AgentActionsProps) {
  const toast = useToast();
  const menu = useRef<HTMLDetailsElement>(null);
  const running = sessions.filter((s) => s.shellState === 'busy').length;
  const act = async (what: string, call: () => Promise<string>) => {
    if (menu.current) menu.current.open = false;
    try {
      // The events socket brings the new floors; the answer only says how many.
      toast(await call());
    } catch (err) {
      toast(`${what} failed: ${err instanceof ApiError ? err.message : String(err)}`, 'error');
    }
  };
  const pause = () => act(`Pausing ${agent}`, async () => `Paused ${agent}: ${plural((await api.pause(agent)).sessions.length, 'terminal')} taken over; new ones are too until you resume.`);
  const resume = () => act(`Resuming ${agent}`, async () => `Resumed ${agent}: ${plural((await api.resume(agent)).sessions.length, 'terminal')} handed back.`);
  const interrupt = () => act(`Interrupting ${agent}`, async () => `Sent Ctrl-C, as you, to ${plural((await api.interruptAgent(agent)).sessions.length, 'running command')} of ${agent}.`);
  const revoke = () =>
    act(`Revoking ${agent}'s token`, async () => {
      await api.revokeToken(agent);
      onTokensChanged();
      return `${agent}'s token is revoked: its sockets are closed and its calls are refused. Its terminals stay until you close them.`;
    });

  const buttons = (
    <div className={`agent-actions${compact ? ' agent-actions-menu' : ''}`} data-testid="agent-actions" data-agent={agent}>
      {paused ? (
        <button type="button" className="btn btn-small btn-resume" disabled={!online} onClick={() => void resume()} title={`Hand every terminal of ${agent} back to it`}>
          <PlayIcon />
          Resume {agent}
        </button>
      ) : (
        <button type="button" className="btn btn-small" disabled={!online} onClick={() => void pause()} title={`Take over every terminal of ${agent} (and the ones it opens) until you resume it`}>
          <PauseIcon />
          Pause {agent}
        </button>
      )}
      <ArmedButton
        needsConfirm
        className="btn-small btn-danger-outline"
        armedClassName="btn-small btn-danger"
        disabled={!online || running === 0}
        onConfirm={() => void interrupt()}
        title={running ? `Send Ctrl-C to the ${plural(running, 'command')} ${agent} is running` : `${agent} runs no command now`}
        label={
          <>
            <InterruptIcon />
            Interrupt all{running ? ` (${running})` : ''}
          </>
        }
        armedLabel={
          <>
            <InterruptIcon />
            Stop {plural(running, 'command')}?
          </>
        }
      />
      {hasToken ? (
        <ArmedButton
          needsConfirm
          className="btn-small btn-quiet"
          armedClassName="btn-small btn-danger"
          disabled={!online}
          onConfirm={() => void revoke()}
          title={`Revoke ${agent}'s token: it can no longer call ptydeck`}
          label={
            <>
              <KeyOffIcon />
              Revoke token
            </>
          }
          armedLabel={
            <>
              <KeyOffIcon />
              Revoke {agent}'s token?
            </>
          }
        />
      ) : null}
    </div>
  );
  if (!compact) return buttons;
  return (
    <details className="agent-menu" ref={menu}>
      <summary className="icon-btn icon-btn-small" aria-label={`Actions for ${agent}`} title={`Pause, interrupt or revoke ${agent}`}>
        <span aria-hidden="true">⋯</span>
      </summary>
      {buttons}
    </details>
  );
}
