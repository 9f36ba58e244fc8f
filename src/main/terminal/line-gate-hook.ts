/**
 * The bash half of "ask before running a line" (line-gate.ts): rc code that shell-integration.ts adds
 * to an agent's bash when a gate is registered.
 *
 * How it works:
 *   - bash's DEBUG trap runs before every simple command; with `extdebug`, a trap that returns non-zero
 *     skips the command, and subshells, functions and command substitutions inherit the trap.
 *   - The first command of each line (a line is told apart by a counter the prompt hook advances: it runs
 *     once between any two lines; bash's own command number does not always advance after ^C) asks
 *     about the whole line as history recorded it (`history 1`: every continuation line, heredoc body
 *     and `;`-joined command of it, exactly as read) and about the command itself as bash parsed it
 *     (`$BASH_COMMAND`, aliases expanded).
 *   - The answer says whether the rest of the line needs asking. Usually it does not (the person typed
 *     the line, or no rule can apply to this agent): the trap removes itself for the rest of the line
 *     and the prompt hook puts it back, so an ungated line costs one trap run and one round trip, and
 *     shell loops run at full speed. Otherwise every further command whose text has not been asked
 *     about in this line is asked about: what `eval`, `source`, an alias or a function body runs.
 *   - Questions go over a TCP connection to ptydeck's loopback gate port (bash's /dev/tcp), authenticated
 *     by the session's marker nonce; the shell waits in `read` on that socket, never on the terminal, so
 *     keys typed meanwhile (by anyone) stay queued for the next prompt. The top-level shell keeps one
 *     connection; a subshell opens its own, so concurrent subshells never read each other's answers.
 *     Every question carries a sequence number and the answer echoes it: an answer to a question the
 *     shell gave up on (^C) is skipped. ^C ends the wait (and the line); the prompt hook that runs next
 *     withdraws the question on the same connection.
 *   - A refused line prints one line saying why, then the shell interrupts itself (SIGINT to its own
 *     pid): the whole line is abandoned, including loops, and the prompt comes back.
 *   - If the gate cannot be reached (ptydeck stopped), a line that had to be asked about is refused.
 *   - The hook's functions and the variables it depends on are read-only, and history settings that
 *     would hide a line from `history 1` (HISTCONTROL, HISTIGNORE, HISTSIZE) are fixed; the prompt hook
 *     switches history, extdebug and the trap back on at every prompt.
 * What it cannot see is listed in docs/SECURITY.md (programs that run commands themselves, words built
 * at run time, deliberate tampering with the hook by a command the policy let run).
 */
export interface GateHookOptions {
  /** A file holding the gate's TCP port: read at each (re)connection, so a restarted ptydeck is found. */
  portFile: string;
  /** A directory only this shell uses (0700, removed with the session), for the hook's scratch files. */
  scratchDir?: string;
}

/** The name of the prompt hook's extra step; shell-integration.ts calls it from __ptydeck_precmd. */
export const GATE_REARM = '__ptydeck_gate_rearm';

/** Functions defined here; made read-only once the prompt hook (which calls one) is defined too. */
export const GATE_FUNCTIONS = ['__ptydeck_gate', '__ptydeck_gate_ask', '__ptydeck_gate_history', '__ptydeck_gate_connect', '__ptydeck_gate_hear', '__ptydeck_gate_refuse', GATE_REARM];

export function bashGateHook(opts: GateHookOptions): string {
  return `
# --- ptydeck: ask before running a line (src/main/terminal/line-gate-hook.ts) ---
__ptydeck_gate_port_file=${bashSingleQuote(opts.portFile)}
__ptydeck_gate_scratch=${bashSingleQuote(opts.scratchDir ?? '/nonexistent')}
__ptydeck_gate_fd=
__ptydeck_gate_seq=0
__ptydeck_gate_line=
__ptydeck_gate_hist=
__ptydeck_gate_denied=
__ptydeck_gate_says=
__ptydeck_gate_why=
__ptydeck_gate_rest=
__ptydeck_gate_asking=
__ptydeck_gate_gen=0
__ptydeck_gate_wants_line=0
declare -A __ptydeck_gate_ok=()
HISTCONTROL= HISTIGNORE= HISTTIMEFORMAT= HISTSIZE=1000
set -o history

__ptydeck_gate_connect() {
  builtin local port
  if [[ -n $__ptydeck_gate_fd ]]; then { builtin exec {__ptydeck_gate_fd}>&-; } 2>/dev/null; fi
  __ptydeck_gate_fd=
  builtin read -r port <"$__ptydeck_gate_port_file" 2>/dev/null || return 1
  { builtin exec {__ptydeck_gate_fd}<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || { __ptydeck_gate_fd=; return 1; }
}

# Reads what is already there (answers to questions given up on) without waiting; 1 if the server went away.
__ptydeck_gate_hear() {
  builtin local w
  while builtin read -t 0 -u "$1" 2>/dev/null; do
    builtin read -r -u "$1" w 2>/dev/null || return 1
  done
  return 0
}

# $1 line|command, $2 the command as bash parsed it, $3 the line number. Sets says/why/rest.
# (Its stderr goes to /dev/null once, for the whole call: one redirection per builtin would cost a
# system call each.)
__ptydeck_gate_ask() {
  # (Assignments after \`builtin local\` are split into words unless quoted.)
  builtin local kind="$1" text="$2" num="$3" fd= own= pend=1 seq port w s r h=0 hist=
  seq=$((++__ptydeck_gate_seq))
  # Keys still queued on the terminal mean this line may not be the last thing typed.
  { builtin read -t 0 || pend=0; } </dev/tty
  __ptydeck_gate_says=deny
  __ptydeck_gate_why='ptydeck: the approval gate cannot be reached, so this line was not run'
  __ptydeck_gate_rest=
  # A write to a connection ptydeck closed must not kill the shell with SIGPIPE.
  builtin trap '' PIPE
  if [[ $BASHPID == "$$" ]]; then
    if [[ -z $__ptydeck_gate_fd ]] || ! __ptydeck_gate_hear "$__ptydeck_gate_fd"; then __ptydeck_gate_connect; fi
    fd=$__ptydeck_gate_fd
  else
    own=1
    builtin read -r port <"$__ptydeck_gate_port_file" && builtin exec {fd}<>"/dev/tcp/127.0.0.1/$port" || fd=
  fi
  if [[ -n $fd ]]; then
    if [[ $kind == line && $HISTCMD != 0 && $HISTCMD != "$__ptydeck_gate_hist" ]]; then
      # History recorded the line. It is sent at once when the last line needed it (a rule could stop
      # this agent), else only if the server answers "more": a line let through costs one small write.
      h=2
      if [[ $__ptydeck_gate_wants_line == 1 ]]; then __ptydeck_gate_history; h=1; fi
    fi
    [[ $kind == line ]] && __ptydeck_gate_hist=$HISTCMD
    builtin printf 'ask\\0%s\\0%s\\0%s\\0%s\\0%s\\0%s\\0%s\\0%s\\0%s\\0%s\\0' "$__ptydeck_nonce" "$seq" "$BASHPID" "$num" "$kind" "$pend" "$PWD" "$h" "$text" "$hist" >&"$fd"
    # If ^C ends the wait, the prompt hook finds this set and withdraws the question.
    [[ -n $own ]] || __ptydeck_gate_asking=$seq
    while builtin read -r -u "$fd" w s r; do
      [[ $s == "$seq" ]] || continue
      case $w in
        more)
          __ptydeck_gate_wants_line=1
          __ptydeck_gate_history
          builtin printf 'ask\\0%s\\0%s\\0%s\\0%s\\0%s\\0%s\\0%s\\0%s\\0%s\\0%s\\0' "$__ptydeck_nonce" "$seq" "$BASHPID" "$num" "$kind" "$pend" "$PWD" 1 "$text" "$hist" >&"$fd"
          ;;
        allow)
          __ptydeck_gate_says=allow __ptydeck_gate_rest=$r
          [[ $kind == line && $r == line ]] && __ptydeck_gate_wants_line=0
          break
          ;;
        deny) __ptydeck_gate_says=deny __ptydeck_gate_why=$r; break ;;
      esac
    done
    __ptydeck_gate_asking=
    if [[ -n $own ]]; then builtin exec {fd}>&-; fi
  fi
  builtin trap - PIPE
  [[ $__ptydeck_gate_says == allow ]]
} 2>/dev/null

# The line from history into $hist, without a fork (capturing output would fork): through a file in
# the session's own directory, so that the question goes out as one write.
__ptydeck_gate_history() {
  builtin history 1 >|"$__ptydeck_gate_scratch/h.$BASHPID"
  IFS= builtin read -r -d '' hist <"$__ptydeck_gate_scratch/h.$BASHPID"
}

# Says once why the line does not run, then abandons the whole line (loops included).
__ptydeck_gate_refuse() {
  if [[ $__ptydeck_gate_denied != "$1" ]]; then
    __ptydeck_gate_denied=$1
    # No newline of our own: the interrupt below makes bash end the line (the echoed Enter began it).
    builtin printf '%s' "$__ptydeck_gate_why" >/dev/tty 2>/dev/null
  fi
  [[ $BASHPID == "$$" ]] || builtin kill -INT "$$" 2>/dev/null
  builtin kill -INT "$BASHPID" 2>/dev/null
  return 1
}

# The DEBUG trap. "$1" is the $_ of the command about to run, given back as the trap's last word.
__ptydeck_gate() {
  builtin local -
  builtin set +euxv
  builtin local num=$__ptydeck_gate_gen text="$BASH_COMMAND" w
  # The prompt hook's own commands (it removes the trap first thing and puts it back last).
  if [[ $text == __ptydeck_precmd || \${FUNCNAME[1]-} == __ptydeck_precmd ]]; then return 0; fi
  if [[ $num == "$__ptydeck_gate_denied" ]]; then __ptydeck_gate_refuse "$num"; return 1; fi
  w=\${text%%[[:space:]]*}
  if [[ -n $w && -n \${BASH_ALIASES[$w]+x} ]]; then text=\${BASH_ALIASES[$w]}\${text:\${#w}}; fi
  if [[ $num != "$__ptydeck_gate_line" ]]; then
    __ptydeck_gate_line=$num
    __ptydeck_gate_ok=()
    __ptydeck_gate_ask line "$text" "$num" || { __ptydeck_gate_refuse "$num"; return 1; }
    if [[ $__ptydeck_gate_rest == line ]]; then builtin trap - DEBUG; return 0; fi
    __ptydeck_gate_ok[$text]=1
    return 0
  fi
  [[ -n \${__ptydeck_gate_ok[$text]+x} ]] && return 0
  __ptydeck_gate_ask command "$text" "$num" || { __ptydeck_gate_refuse "$num"; return 1; }
  __ptydeck_gate_ok[$text]=1
  return 0
}

${GATE_REARM}() {
  # A question ^C interrupted is withdrawn, so no card waits for a line the shell gave up on.
  if [[ -n $__ptydeck_gate_asking && -n $__ptydeck_gate_fd ]]; then
    builtin trap '' PIPE
    builtin printf 'cancel\\0%s\\0%s\\0\\0\\0\\0\\0\\0\\0\\0\\0' "$__ptydeck_nonce" "$__ptydeck_gate_asking" >&"$__ptydeck_gate_fd" 2>/dev/null
    builtin trap - PIPE
  fi
  __ptydeck_gate_asking=
  ((++__ptydeck_gate_gen))
  builtin set -o history
  builtin shopt -s extdebug cmdhist
  builtin trap '__ptydeck_gate "$_"' DEBUG
}
`;
}

/** What the rc runs last, after the prompt hook exists: freeze the hook and the settings it relies on. */
export function bashGateSeal(): string {
  return [
    `builtin readonly -f ${[...GATE_FUNCTIONS, '__ptydeck_precmd'].join(' ')}`,
    'builtin readonly __ptydeck_nonce __ptydeck_gate_port_file __ptydeck_gate_scratch PROMPT_COMMAND HISTCONTROL HISTIGNORE HISTTIMEFORMAT HISTSIZE',
  ].join('\n');
}

function bashSingleQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
