// Types for scripts/build.mjs, which the tests import.
export const root: string;
export const BUILD_INPUTS: string[];
export function fingerprint(base?: string, inputs?: string[]): string;
export function isStale(base?: string): boolean;
export function build(opts: { quiet: boolean }): boolean;
export function ensureBuilt(): boolean;
