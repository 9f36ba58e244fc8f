import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import type { SearchAddon } from '@xterm/addon-search';
import { searchDecorations } from '../terminal/theme';
import { ChevronDownIcon, ChevronUpIcon, CloseIcon } from './icons';

interface FindBarProps {
  search: SearchAddon;
  /** Bumped each time Ctrl+Shift+F is pressed, to refocus the field when the bar is already open. */
  focusSignal: number;
  onClose(): void;
}

const options = { decorations: searchDecorations } as const;

/** Find in the terminal's buffer (scrollback included), with every match highlighted. */
export function FindBar({ search, focusSignal, onClose }: FindBarProps) {
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

  const find = (text: string, backwards = false, incremental = false) => {
    if (!text) {
      search.clearDecorations();
      setResults(null);
      return;
    }
    if (backwards) search.findPrevious(text, options);
    else search.findNext(text, { ...options, incremental });
  };

  const onKeyDown = (ev: KeyboardEvent<HTMLInputElement>) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      find(query, ev.shiftKey);
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
          find(ev.target.value, false, true);
        }}
        onKeyDown={onKeyDown}
      />
      <span className={`find-count${query && results?.count === 0 ? ' none' : ''}`} data-testid="find-count" aria-live="polite">
        {count}
      </span>
      <button type="button" className="icon-btn" aria-label="Previous match" title="Previous match (Shift+Enter)" disabled={!query} onClick={() => find(query, true)}>
        <ChevronUpIcon />
      </button>
      <button type="button" className="icon-btn" aria-label="Next match" title="Next match (Enter)" disabled={!query} onClick={() => find(query)}>
        <ChevronDownIcon />
      </button>
      <button type="button" className="icon-btn" aria-label="Close find bar" title="Close (Esc)" onClick={onClose}>
        <CloseIcon />
      </button>
    </div>
  );
}
