import { WsClient } from './ws-client';

/** An execd client that remembers every payload byte with its offset (replay frames carry theirs). */
export class ResumingClient {
  bytes: Buffer[] = [];
  offset = 0;
  gaps: string[] = [];
  ws!: WsClient;

  async connect(url: string, token: string, id: string): Promise<void> {
    this.ws = await WsClient.open(`${url.replace(/^http/, 'ws')}/pty/${id}/ws?since=${this.offset}`, { 'X-EXECD-ACCESS-TOKEN': token });
    // The replay may come in the same read as the upgrade's answer, before `open` resolves: the frames
    // the socket already recorded are taken first (missing them lost exactly the replayed bytes, with
    // no gap to see, on a loaded machine), then every later one, in order.
    for (const f of this.ws.frames) if (f.binary) this.take(f.binary);
    this.ws.ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) this.take(data);
    });
  }

  private take(data: Buffer): void {
    let payload: Buffer;
    if (data[0] === 0x03) {
      const at = Number(data.readBigUInt64BE(1));
      if (at !== this.offset) this.gaps.push(`replay at ${at}, expected ${this.offset}`);
      payload = data.subarray(9);
    } else payload = data.subarray(1);
    this.bytes.push(Buffer.from(payload));
    this.offset += payload.length;
  }

  text(): string {
    return Buffer.concat(this.bytes).toString('utf8');
  }
}
