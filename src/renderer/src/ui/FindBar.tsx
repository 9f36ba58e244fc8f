import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import type { SearchAddon } from '@xterm/addon-search';
import type { Terminal } from '@xterm/xterm';
import { searchDecorations } from '../terminal/theme';
import { ChevronDownIcon, ChevronUpIcon, CloseIcon } from './icons';

interface FindBarProps {
  search: SearchAddon;
  terminal: Terminal;
  /** Bumped each time Ctrl+Shift+F is pressed, to refocus the field when the bar is already open. */
  focusSignal: number;
  onClose(): void;
}

const options = { decorations: searchDecorations } as const;

/**
 * Find in the terminal's buffer (scrollback included), with every match highlighted. A terminal's
 * newest output is at the bottom and is usually what a person looks for, so a search starts from the
 * newest match and Enter walks back in time (Shift+Enter forward).
 */
export function FindBar({ search, terminal, focusSignal, onClose }: FindBarProps) {
  const input = useRef<HTMLInputElement>(null);
  const [query, setQuery] = useState('');
  const [results, setResults] = useState<{ index: number; count: number } | null>(null);

  useEffect(() => {
    const sub = search.onDidChangeResults((r) => setResults({ index: r.resultIndex, count: r.resultCount }));
    return () => {
      sub.dispose();
      search.clearDecorations();
    };
  }, [search]);

  useEffect(() => {
    input.current?.focus();
    input.current?.select();
  }, [focusSignal]);

  const find = (text: string, older = true) => {
    if (!text) {
      search.clearDecorations();
      setResults(null);
      return;
    }
    if (older) search.findPrevious(text, options);
    else search.findNext(text, options);
  };

  /** A new query: search again from the bottom (with no selection, the search starts at the newest line). */
  const findFromNewest = (text: string) => {
    terminal.clearSelection();
    find(text);
  };

  const onKeyDown = (ev: KeyboardEvent<HTMLInputElement>) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      find(query, !ev.shiftKey);
    } else if (ev.key === 'Escape') {
      ev.preventDefault();
      onClose();
    }
  };

  const count = !query ? '' : !results || results.count === 0 ? 'No results' : results.index < 0 ? `${results.count} found` : `${results.index + 1} of ${results.count}`;

  return (
    <div className="find-bar" role="search" aria-label="Find in terminal" data-testid="find-bar">
      <input
        ref={input}
        className="find-input"
        type="text"
        aria-label="Find in terminal"
        placeholder="Find"
        spellCheck={false}
        value={query}
        onChange={(ev) => {
          setQuery(ev.target.value);
          findFromNewest(ev.target.value);
        }}
        onKeyDown={onKeyDown}
      />
      <span className={`find-count${query && results?.count === 0 ? ' none' : ''}`} data-testid="find-count" aria-live="polite">
        {count}
      </span>
      <button type="button" className="icon-btn" aria-label="Older match" title="Older match, above (Enter)" disabled={!query} onClick={() => find(query, true)}>
        <ChevronUpIcon />
      </button>
      <button type="button" className="icon-btn" aria-label="Newer match" title="Newer match, below (Shift+Enter)" disabled={!query} onClick={() => find(query, false)}>
        <ChevronDownIcon />
      </button>
      <button type="button" className="icon-btn" aria-label="Close find bar" title="Close (Esc)" onClick={onClose}>
        <CloseIcon />
      </button>
    </div>
  );
}
