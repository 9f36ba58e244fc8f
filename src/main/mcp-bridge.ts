import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * `ptydeck mcp`: an MCP server on stdio for agents that spawn their tools, which forwards every message
 * to the running ptydeck's /mcp endpoint. The terminals live in the server (so they persist and a person
 * sees them), not in this process; the tools are defined once, in api/mcp.ts.
 *
 * stdout belongs to the protocol: everything human goes to stderr.
 */
export interface BridgeOptions {
  url: string;
  token: string;
  /** With the admin token: open sessions under this agent name (X-Ptydeck-Agent). */
  agent?: string;
}

export async function runMcpBridge(opts: BridgeOptions): Promise<void> {
  const headers: Record<string, string> = { Authorization: `Bearer ${opts.token}` };
  if (opts.agent) headers['X-Ptydeck-Agent'] = opts.agent;
  const upstream = new StreamableHTTPClientTransport(new URL('/mcp', opts.url), { requestInit: { headers } });
  const local = new StdioServerTransport();
  const fail = (where: string) => (err: Error) => process.stderr.write(`ptydeck mcp: ${where}: ${err.message}\n`);
  upstream.onerror = fail('server');
  local.onerror = fail('stdio');
  upstream.onmessage = (m: JSONRPCMessage) => void local.send(m).catch(fail('stdio'));
  local.onmessage = (m: JSONRPCMessage) =>
    void upstream.send(m).catch((err: Error) => {
      fail('server')(err);
      // Answer the request so the client is not left waiting for ever.
      if ('id' in m && m.id !== undefined && 'method' in m) {
        void local.send({ jsonrpc: '2.0', id: m.id, error: { code: -32603, message: `ptydeck server at ${opts.url} did not answer: ${err.message}` } });
      }
    });
  const closed = new Promise<void>((resolve) => {
    local.onclose = () => resolve();
  });
  await upstream.start();
  await local.start();
  await closed;
  await upstream.close();
}
