/**
 * The one place that decides what of the server's environment a child may inherit. Every process that
 * runs what an agent asks for is spawned with it, directly (shells, tmux) or through a process that was
 * itself spawned with it (a PTY host): an agent's shell can read its own environment and, through
 * /proc/$PPID/environ, its parent's, so nothing secret may be in either.
 */

/** ptydeck's own settings and credentials, and Electron's switches (they would change how a child Electron app runs). */
export function isServerOnlyVariable(name: string): boolean {
  return name.startsWith('PTYDECK_') || name.startsWith('ELECTRON_');
}

/** The server's environment without its own variables: what a child process of the server starts from. */
export function sanitizedEnvironment(base: Record<string, string | undefined> = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (v === undefined || isServerOnlyVariable(k)) continue;
    env[k] = v;
  }
  return env;
}
