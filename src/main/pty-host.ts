import { parseArgs } from 'node:util';
import { runHost } from './terminal/host/host-main';

/**
 * The PTY host entry (out/main/pty-host.js): `node pty-host.js --home DIR`. Started detached by a
 * server (launch.ts), under plain Node or Electron's own (ELECTRON_RUN_AS_NODE=1). Never imports electron.
 */
const { values } = parseArgs({ args: process.argv.slice(2), options: { home: { type: 'string' } }, strict: true });
if (!values.home) {
  process.stderr.write('usage: pty-host --home DIR\n');
  process.exit(2);
}
runHost(values.home).catch((err: Error) => {
  process.stderr.write(`ptydeck host: could not start: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
