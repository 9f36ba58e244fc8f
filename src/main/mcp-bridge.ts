import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
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
  const say = (line: string) => process.stderr.write(`ptydeck mcp: ${line}\n`);
  upstream.onerror = (err) => say(explainUpstreamError(err, opts.url));
  local.onerror = (err) => say(`stdio: ${err.message}`);
  upstream.onmessage = (m: JSONRPCMessage) => void local.send(m).catch((err: Error) => say(`stdio: ${err.message}`));
  local.onmessage = (m: JSONRPCMessage) =>
    void upstream.send(m).catch((err: Error) => {
      // (the transport's onerror has said it on stderr already)
      // Answer the request so the client is not left waiting for ever, saying what really happened.
      if ('id' in m && m.id !== undefined && 'method' in m) {
        void local.send({ jsonrpc: '2.0', id: m.id, error: { code: -32603, message: explainUpstreamError(err, opts.url) } });
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

/**
 * What went wrong between the bridge and the server, in words an agent (or its person) can act on: a
 * server that answered with a refusal did answer, and says why.
 */
export function explainUpstreamError(err: Error, url: string): string {
  if (err instanceof StreamableHTTPError && typeof err.code === 'number' && err.code > 0) {
    const why = serverMessage(err.message);
    if (err.code === 401) {
      return (
        `the ptydeck server at ${url} refused the credential (HTTP 401: ${why}). ` +
        'The token was revoked, or the server now has another one: set PTYDECK_AGENT_TOKEN to a current agent token (`ptydeck token create --name NAME`), or, without one, restart the bridge so it reads the running server\'s runtime file again'
      );
    }
    if (err.code === 403) return `the ptydeck server at ${url} refused the request (HTTP 403: ${why})`;
    return `the ptydeck server at ${url} answered HTTP ${err.code}: ${why}`;
  }
  return `the ptydeck server at ${url} did not answer (${err.message}): is it running? \`ptydeck list\` checks`;
}

/** The `message` of our error body inside the SDK's "Error POSTing to endpoint: {...}", else the text as it is. */
function serverMessage(text: string): string {
  const json = text.slice(text.indexOf('{'));
  try {
    const body = JSON.parse(json) as { error?: { message?: string } | string; message?: string };
    const m = typeof body.error === 'object' ? body.error?.message : (body.message ?? body.error);
    if (m) return m;
  } catch {
    // not our JSON
  }
  return text.replace(/^Streamable HTTP error: (Error POSTing to endpoint: )?/, '');
}
