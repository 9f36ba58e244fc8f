import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { bashGateHook, bashGateSeal, GATE_REARM, type GateHookOptions } from './line-gate-hook';

/**
 * How a shell tells us where a command starts and ends: an invisible OSC 633 marker carrying a
 * per-session nonce, printed by the shell's own prompt machinery (never by scraping the prompt):
 *
 *   ESC ] 633 ; D ; <exit code> ; <nonce> BEL   the previous command finished (and the prompt is next)
 *   ESC ] 633 ; C ; <nonce> BEL                 a command line was accepted; its output starts here (bash's PS0)
 *   ESC ] 633 ; B ; <nonce> BEL                 the prompt is fully drawn; the shell waits for a line
 *   ESC ] 633 ; X ; <exit status> ; <nonce> BEL  the shell is exiting (bash's EXIT trap)
 *
 * bash gets D from PROMPT_COMMAND, C from PS0 and B from the end of PS1. A POSIX sh (dash) expands `$?`
 * in PS1, so PS1 itself carries D and B; it has no C, so a command's output starts after its echo.
 * Program output cannot fake a marker without the nonce, which lives only in unexported shell variables.
 */
export type ShellKind = 'bash' | 'posix';

export interface ShellLaunch {
  kind: ShellKind;
  file: string;
  args: string[];
  env: Record<string, string>;
  nonce: string;
}

export interface EncodedCommand {
  /** What to type at the prompt, Enter included. */
  text: string;
  /** How many lines the terminal echoes for it (used to find where output begins when there is no C marker). */
  echoLines: number;
  /** A script file to remove once the command has finished, when the command was too long to type. */
  scriptFile?: string;
}

/** Above this many bytes a command is written to a file and sourced instead of typed (readline redraws long lines slowly). */
const TypeAtMostBytes = 4000;

export function findShell(preferred?: string): { file: string; kind: ShellKind } {
  if (preferred) return { file: preferred, kind: /(^|\/)bash$/.test(preferred) ? 'bash' : 'posix' };
  for (const file of ['/bin/bash', '/usr/bin/bash', '/usr/local/bin/bash', '/opt/homebrew/bin/bash']) {
    if (existsSync(file)) return { file, kind: 'bash' };
  }
  return { file: '/bin/sh', kind: 'posix' };
}

export interface LaunchOptions {
  shell?: string;
  /** Source the user's ~/.bashrc first (the person's own terminals); agents get a clean shell. */
  loadUserRc?: boolean;
  baseEnv: Record<string, string | undefined>;
  extraEnv?: Record<string, string>;
  /** Ask before running each line (line-gate-hook.ts); bash only, other shells are gated at the door. */
  lineGate?: GateHookOptions;
}

export function prepareShell(opts: LaunchOptions): ShellLaunch {
  const { file, kind } = findShell(opts.shell);
  const nonce = randomBytes(12).toString('hex');
  const env = childEnvironment(opts.baseEnv, opts.extraEnv);
  const osc = (body: string): string => `\x1b]633;${body};${nonce}\x07`;
  if (kind === 'bash') {
    const dir = mkdtempSync(join(tmpdir(), 'ptydeck-rc-'));
    const rc = join(dir, 'bashrc');
    // A gated shell keeps the directory (0700, its own) for the hook's scratch files; it goes with the session.
    const gate = opts.lineGate ? { ...opts.lineGate, scratchDir: dir } : undefined;
    writeFileSync(rc, bashRc(nonce, opts.loadUserRc === true, gate), { mode: 0o600 });
    return {
      kind,
      file,
      args: ['--noprofile', '--rcfile', rc, '-i'],
      env: { ...env, [RcDirVariable]: dir },
      nonce,
    };
  }
  return {
    kind,
    file,
    args: ['-i'],
    // dash expands parameters in PS1 at each prompt: `$?` there is the last exit status.
    env: { ...env, PS1: `${osc('D;$?')}$ ${osc('B')}`, PS2: '' },
    nonce,
  };
}

/** The rc directory prepareShell made for a shell, from that shell's spawn environment. */
export function shellRcDirOf(env: Record<string, string | undefined>): string | undefined {
  return env[RcDirVariable];
}

/**
 * Removes a shell's rc directory, for whoever sees the shell end when the server that made it may be
 * gone: a gated shell keeps its directory for the gate's scratch files, and a durable session outlives
 * a server that crashed (the PTY host, or the server that adopts the session, removes it). Only a
 * directory of prepareShell's own naming, in the temporary directory, is touched.
 */
export function removeShellRcDir(dir: string | undefined): void {
  if (!dir || dirname(dir) !== tmpdir() || !/^ptydeck-rc-[A-Za-z0-9]{6}$/.test(basename(dir))) return;
  try {
    // (Not followed if it is a link: fs.rm removes the link.)
    rmSync(dir, { recursive: true, force: true });
  } catch {
    // Someone else's by now (the name was free again once removed): not ours to remove, and no reason to fail a close.
  }
}

const RcDirVariable = 'PTYDECK_RC_DIR';

function bashRc(nonce: string, loadUserRc: boolean, gate?: GateHookOptions): string {
  // With a gate, the prompt hook first removes the trap (so its own commands are not asked about) and
  // puts it back last; the D marker keeps the status of the line that ended.
  // It also puts the C and B markers back when a command replaced PS0 or PS1 (`PS1='$ '`, `source
  // ~/.bashrc`): without them a prompt would not say where it ends, nor a line that it runs.
  const repair = `[[ \${PS1-} == *"633;B;$__ptydeck_nonce"* ]] || PS1="\${PS1-}\\[\\033]633;B;$__ptydeck_nonce\\007\\]"; [[ \${PS0-} == *"633;C;$__ptydeck_nonce"* ]] || PS0="\${PS0-}"$'\\033]633;C;'"$__ptydeck_nonce"$'\\007'`;
  const precmd = gate
    ? `__ptydeck_precmd() { builtin local s=$?; builtin trap - DEBUG; builtin printf '\\033]633;D;%s;%s\\007' "$s" "$__ptydeck_nonce"; ${repair}; ${GATE_REARM}; return $s; }`
    : `__ptydeck_precmd() { builtin local s=$?; builtin printf '\\033]633;D;%s;%s\\007' "$s" "$__ptydeck_nonce"; ${repair}; return $s; }`;
  return [
    '# ptydeck shell integration (this file removes itself once read)',
    gate ? 'command rm -f -- "$PTYDECK_RC_DIR/bashrc" 2>/dev/null; builtin unset PTYDECK_RC_DIR' : 'command rm -rf -- "$PTYDECK_RC_DIR" 2>/dev/null; builtin unset PTYDECK_RC_DIR',
    loadUserRc ? '[ -f ~/.bashrc ] && . ~/.bashrc' : '',
    'set +H', // history expansion would rewrite an agent's `!` inside commands
    'builtin unset HISTFILE',
    `__ptydeck_nonce=${nonce}`,
    precmd,
    'PROMPT_COMMAND="__ptydeck_precmd${PROMPT_COMMAND:+;$PROMPT_COMMAND}"',
    // The shell reports its own exit status: tmux does not always record a dead pane's status.
    `__ptydeck_exit() { builtin printf '\\033]633;X;%s;%s\\007' "$?" "$__ptydeck_nonce"; }`,
    "trap '__ptydeck_exit' EXIT",
    `PS0=$'\\033]633;C;${nonce}\\007'`,
    loadUserRc ? `PS1="\${PS1:-\\w \\$ }"` : `PS1='\\w \\$ '`,
    `PS1="$PS1\\[\\033]633;B;${nonce}\\007\\]"`,
    "PS2='> '",
    gate ? bashGateHook(gate) : '',
    gate ? bashGateSeal() : '',
    '',
  ].join('\n');
}

/**
 * The server's environment without what must never reach a process ptydeck starts (a shell, the PTY
 * host): our credentials and settings (PTYDECK_*), Electron's switches, and prompt hooks.
 */
export function sanitizedEnvironment(base: Record<string, string | undefined>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (v === undefined) continue;
    if (k.startsWith('PTYDECK_') || k.startsWith('ELECTRON_') || k === 'PROMPT_COMMAND' || k === 'PS1' || k === 'PS0') continue;
    env[k] = v;
  }
  return env;
}

/** The environment every shell starts with: the server's, sanitized, plus terminal basics. */
export function childEnvironment(base: Record<string, string | undefined>, extra: Record<string, string> = {}): Record<string, string> {
  const env = sanitizedEnvironment(base);
  env.TERM = 'xterm-256color';
  env.COLORTERM = 'truecolor';
  env.PAGER = 'cat';
  env.GIT_PAGER = 'cat';
  if (!env.LANG && !env.LC_ALL) env.LANG = 'C.UTF-8';
  for (const [k, v] of Object.entries(extra)) env[k] = v;
  return env;
}

/**
 * Turns a command into keystrokes for the shell's prompt. A line that bash would split into several
 * prompts (newlines) or that readline would interpret (TAB completes) goes through `eval $'...'`, so
 * one command is always one prompt cycle and one pair of markers.
 */
export function encodeCommand(kind: ShellKind, command: string, scriptDirFor: () => string | null): EncodedCommand {
  // ^E^U (bash) or ^U (sh, the tty's kill character) clear whatever a person left half-typed at the prompt.
  const clear = kind === 'bash' ? '\x05\x15' : '\x15';
  // The directory is made only for a command that needs it: most sessions never type a long one.
  const scriptDir = Buffer.byteLength(command) > TypeAtMostBytes ? scriptDirFor() : null;
  if (scriptDir) {
    const scriptFile = join(scriptDir, `cmd-${randomBytes(6).toString('hex')}.sh`);
    writeFileSync(scriptFile, command + '\n', { mode: 0o600 });
    return { text: `${clear}. ${shellQuote(scriptFile)}\r`, echoLines: 1, scriptFile };
  }
  if (kind === 'bash') {
    // eslint-disable-next-line no-control-regex
    if (!/[\x00-\x1f\x7f]/.test(command)) return { text: `${clear}${command}\r`, echoLines: 1 };
    return { text: `${clear}eval ${ansiCQuote(command)}\r`, echoLines: 1 };
  }
  // dash has no $'...' and no line editor: newlines are typed, PS2 is empty, and each line echoes once.
  const lines = command.split('\n');
  if (lines.length === 1) return { text: `${clear}${command}\r`, echoLines: 1 };
  return { text: `${clear}eval ${shellQuote(command)}\r`, echoLines: lines.length };
}

export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** bash's $'...' quoting: every byte survives, and the typed line holds no control character. */
export function ansiCQuote(s: string): string {
  let out = "$'";
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === "'") out += "\\'";
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (c < 0x20 || c === 0x7f) out += '\\x' + c.toString(16).padStart(2, '0');
    else out += ch;
  }
  return out + "'";
}
