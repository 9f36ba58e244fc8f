import { expect, test } from 'vitest';
import { hostCommand } from './launch';

/** No Electron binary exists here: the choice of how to start the host inside Electron is tested as a choice. */
test('under Electron the host runs on Electron itself as Node; under Node on Node; never with ptydeck secrets', () => {
  const env = { PATH: '/bin', PTYDECK_TOKEN: 'secret', PTYDECK_HOME: '/h', ELECTRON_ENABLE_LOGGING: '1', HOME: '/root', GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' };
  const electron = hostCommand('/h', '/app/out/main/pty-host.js', { execPath: '/opt/ptydeck/ptydeck', versions: { node: '22', electron: '45.5.0' }, env });
  expect(electron.file).toBe('/opt/ptydeck/ptydeck');
  expect(electron.args).toEqual(['/app/out/main/pty-host.js', '--home', '/h']);
  expect(electron.env).toEqual({ PATH: '/bin', HOME: '/root', ELECTRON_RUN_AS_NODE: '1', GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' });

  const node = hostCommand('/h', '/app/out/main/pty-host.js', { execPath: '/usr/bin/node', versions: { node: '20' }, env });
  expect(node.file).toBe('/usr/bin/node');
  expect(node.env).toEqual({ PATH: '/bin', HOME: '/root', GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' });
});
