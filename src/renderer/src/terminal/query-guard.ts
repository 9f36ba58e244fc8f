import type { IDisposable, Terminal } from '@xterm/xterm';

/**
 * The server's headless terminal already answers the PTY's queries (cursor position, device
 * attributes, modes, colours). If this viewer answered too, a program would read two replies, and with
 * several viewers open, several. So every sequence that makes xterm.js reply is swallowed here:
 * returning true marks it handled, and xterm's own (replying) handler never runs.
 */
export function swallowTerminalQueries(term: Terminal): IDisposable {
  const p = term.parser;
  const handled = (): boolean => true;
  const colourQuery = (data: string): boolean => data.includes('?');
  const disposables: IDisposable[] = [
    // DSR: status (5n) and cursor position (6n), and their DEC private forms.
    p.registerCsiHandler({ final: 'n' }, handled),
    p.registerCsiHandler({ prefix: '?', final: 'n' }, handled),
    // DA1, DA2, DA3.
    p.registerCsiHandler({ final: 'c' }, handled),
    p.registerCsiHandler({ prefix: '>', final: 'c' }, handled),
    p.registerCsiHandler({ prefix: '=', final: 'c' }, handled),
    // DECRQM: mode reports, ANSI and DEC private.
    p.registerCsiHandler({ intermediates: '$', final: 'p' }, handled),
    p.registerCsiHandler({ prefix: '?', intermediates: '$', final: 'p' }, handled),
    // DECRQSS.
    p.registerDcsHandler({ intermediates: '$', final: 'q' }, handled),
    // Colour queries (`OSC 11 ; ? ST`); setting a colour still goes through.
    ...[4, 10, 11, 12].map((osc) => p.registerOscHandler(osc, colourQuery)),
  ];
  return { dispose: () => disposables.forEach((d) => d.dispose()) };
}
