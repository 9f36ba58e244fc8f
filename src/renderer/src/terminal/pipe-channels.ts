import { OutputChannel } from '../../../shared/types';

/**
 * How a session on pipes shows its channels in the terminal: stdout as the program wrote it, stderr
 * in the theme's red, and ptydeck's transcript (the command line, how it ended) in cyan. Palette
 * colours, so the theme decides the exact shade. Each styled chunk ends with a full reset: the next
 * chunk may come from another channel, or from another command altogether.
 */
const Sgr = { Stderr: '\x1b[0;31m', Transcript: '\x1b[0;36m', Reset: '\x1b[0m' } as const;

export interface ChannelChunk {
  prefix: string;
  data: Uint8Array;
  suffix: string;
}

/** Splits a binary frame of a pipe session (channel byte, then bytes) into what to write, styled. */
export function styleChannelFrame(frame: Uint8Array): ChannelChunk {
  const channel = frame[0];
  const data = frame.subarray(1);
  if (channel === OutputChannel.Stderr) return { prefix: Sgr.Stderr, data, suffix: Sgr.Reset };
  if (channel === OutputChannel.Transcript) return { prefix: Sgr.Transcript, data, suffix: Sgr.Reset };
  return { prefix: '', data, suffix: '' };
}
