import { readRuntimeFile, runtimeFilePath, type RuntimeInfo } from './home';
import { probeServerLock } from './server-lock';

/**
 * The server running on a home, as the CLI and the desktop app find it: its runtime file, believed only
 * while the home's server lock is held (a server that crashed leaves its runtime file behind).
 */
export type RunningServerLookup = { found: true; info: RuntimeInfo } | { found: false; why: string };

const HowToStart = 'start one with `npm start` or `npm run serve` (an installed ptydeck: `ptydeck serve`)';

export async function findRunningServer(home: string): Promise<RunningServerLookup> {
  const info = readRuntimeFile(home);
  const lock = await probeServerLock(home);
  if (lock.state === 'free') {
    if (info) return { found: false, why: `no server is running on ${home}: ${runtimeFilePath(home)} was left by pid ${info.pid}, which is gone; ${HowToStart}` };
    return { found: false, why: `no server is running on ${home} (PTYDECK_HOME); ${HowToStart}` };
  }
  if (!info) {
    const who = lock.holder ? ` (pid ${lock.holder.pid})` : '';
    return { found: false, why: `a server${who} holds ${home} but has not written ${runtimeFilePath(home)} yet: it is still starting; try again in a moment` };
  }
  return { found: true, info };
}
