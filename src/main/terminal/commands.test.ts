import { expect, test } from 'vitest';
import { CommandTracker, type CommandHost } from './commands';
import { MarkerScanner } from './marker-scanner';
import { OutputLog } from './output-log';

/**
 * The command tracker follows the shell's markers as the output scanner finds them: C when a line
 * starts running, D (with its status) when it ended, B at the end of each prompt.
 */
const nonce = 'n0nce';
const osc = (body: string): string => `\x1b]633;${body};${nonce}\x07`;

function shell(): { tracker: CommandTracker; print: (text: string) => void } {
  const log = new OutputLog(1024 * 1024);
  const host: CommandHost = {
    log,
    shellKind: 'bash',
    scriptDir: () => null,
    isAlive: () => true,
    typeKeys: () => undefined,
    signalForeground: () => false,
    lastOutputAt: () => Date.now(),
    heldMs: () => 0,
    isHeld: () => false,
    changed: () => undefined,
  };
  const tracker = new CommandTracker(host);
  const scanner = new MarkerScanner(nonce, (m) => tracker.onMarker(m), () => undefined);
  const print = (text: string): void => {
    const bytes = Buffer.from(text);
    const at = log.end;
    log.append(bytes);
    scanner.feed(bytes, at);
  };
  print(`/tmp $ ${osc('B')}`);
  return { tracker, print };
}

test('a line ends at its D marker, with the status the marker carries', () => {
  const { tracker, print } = shell();
  print(`echo hi\r\n${osc('C')}hi\r\n${osc('D;3')}/tmp $ ${osc('B')}`);
  expect(tracker.current).toBeNull();
  expect(tracker.last).toMatchObject({ command: 'echo hi', status: 'completed', exitCode: 3 });
  expect(tracker.console.at(-1)?.output).toBe('hi');
  expect(tracker.state).toBe('prompt');
});

test('a line whose D marker was garbled (echoed bytes inside it) ends at the next prompt, its status unknown, its output without the prompt', () => {
  const { tracker, print } = shell();
  print(`yes\r\n${osc('C')}y\r\ny\r\n`);
  expect(tracker.state).toBe('busy');
  // The terminal echoed an answer into the middle of the marker: the scanner cannot take it.
  print(`\x1b]633;D;0;n0^[[24;1Rnce\x07/tmp $ ${osc('B')}`);
  expect(tracker.current).toBeNull();
  expect(tracker.last).toMatchObject({ command: 'yes', status: 'completed', exitCode: null });
  expect(tracker.console.at(-1)?.output).toBe('y\ny');
  expect(tracker.state).toBe('prompt');
});

test('a prompt that comes before the line said it runs (no C yet) does not end it', () => {
  const { tracker, print } = shell();
  const rec = tracker.begin('sleep 1');
  print(`/tmp $ ${osc('B')}`);
  expect(tracker.current).toBe(rec);
  expect(rec.status).toBe('running');
});
