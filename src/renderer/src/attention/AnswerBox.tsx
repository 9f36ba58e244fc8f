import { useState, type FormEvent } from 'react';
import { api, ApiError } from '../api/rest';
import { useToast } from '../ui/toasts';

/**
 * Answers the question a program waits on, typed as the person (a line, then Enter), without opening
 * the terminal. The floor does not matter: the person's own keys are never refused.
 */
export function AnswerBox({ sessionId, prompt, autoFocus = false }: { sessionId: string; prompt: string | null; autoFocus?: boolean }) {
  const toast = useToast();
  const [text, setText] = useState('');
  const [sending, setSending] = useState(false);
  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    setSending(true);
    try {
      await api.answer(sessionId, text);
      setText('');
    } catch (err) {
      toast(`The answer was not sent: ${err instanceof ApiError ? err.message : String(err)}`, 'error');
    } finally {
      setSending(false);
    }
  };
  return (
    <form className="answer-box" onSubmit={(ev) => void submit(ev)} data-testid="answer-box">
      <input
        type="text"
        aria-label={prompt ? `Answer: ${prompt}` : 'Answer'}
        placeholder="Type an answer, Enter sends it"
        spellCheck={false}
        autoComplete="off"
        autoFocus={autoFocus}
        value={text}
        onChange={(ev) => setText(ev.target.value)}
        // The page's shortcuts must not fire while typing here; F8 (next in the queue) still does.
        onKeyDown={(ev) => {
          if (ev.key !== 'F8') ev.stopPropagation();
        }}
      />
      <button type="submit" className="btn btn-small btn-primary" disabled={sending}>
        Send
      </button>
    </form>
  );
}
