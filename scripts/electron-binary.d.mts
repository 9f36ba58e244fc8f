// Types for scripts/electron-binary.mjs, which the tests import.
export function resolveElectronBinary(electronDir: string, env?: NodeJS.ProcessEnv): { found: true; path: string } | { found: false; why: string; installable: boolean };
