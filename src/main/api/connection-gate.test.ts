import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { expect, test } from 'vitest';
import { ConnectionGate } from './connection-gate';

/** Just what the gate uses of a socket: its peer, `close`, and `destroy`. */
function fakeSocket(port: number): Socket & { destroyedByGate: boolean } {
  const s = new EventEmitter() as unknown as Socket & { destroyedByGate: boolean };
  Object.assign(s, { remoteAddress: '127.0.0.1', remotePort: port, destroyedByGate: false });
  (s as unknown as { destroy: () => void }).destroy = () => {
    s.destroyedByGate = true;
    s.emit('close');
  };
  return s;
}

test('a TLS socket takes its raw socket’s place: the raw one no longer counts, and is never the one closed for it', () => {
  const gate = new ConnectionGate(2);
  const rawA = fakeSocket(40001);
  const rawB = fakeSocket(40002);
  gate.opened(rawA);
  gate.opened(rawB);
  // A's handshake finished: its TLS socket stands in for rawA (same peer), so two are counted, not three.
  const tlsA = fakeSocket(40001);
  gate.replaced(tlsA);
  expect([rawA, rawB, tlsA].map((s) => s.destroyedByGate)).toEqual([false, false, false]);
  // A third connection is one too many: the oldest still counted is rawB (a silent handshake).
  const rawC = fakeSocket(40003);
  gate.opened(rawC);
  expect([rawA, rawB, tlsA, rawC].map((s) => s.destroyedByGate)).toEqual([false, true, false, false]);
});
