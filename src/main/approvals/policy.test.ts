import { describe, expect, test } from 'vitest';
import { CompiledPolicy, DEFAULT_RULE, exactCommandRule, HOOK_RULE, parsePolicy, PolicyConstants, PolicyError, SLOW_RULE } from './policy';

const compile = (raw: unknown) => new CompiledPolicy(parsePolicy(raw));

describe('the policy', () => {
  test('first match wins; a rule for one agent does not apply to another; the default applies when nothing matches', () => {
    const p = compile({
      default: 'ask',
      rules: [
        { pattern: '^git status$', action: 'allow' },
        { pattern: '^git ', action: 'deny', agent: 'claude' },
        { pattern: '^git ', action: 'allow' },
      ],
    });
    expect(p.decide('git status', 'claude')).toMatchObject({ action: 'allow', rule: 0, start: 0, end: 10 });
    expect(p.decide('git push', 'claude')).toMatchObject({ action: 'deny', rule: 1, pattern: '^git ' });
    expect(p.decide('git push', 'codex')).toMatchObject({ action: 'allow', rule: 2 });
    expect(p.decide('ls', 'codex')).toMatchObject({ action: 'ask', rule: DEFAULT_RULE, pattern: null });
  });

  test('canStop says whether any command of an agent could be held or refused', () => {
    expect(compile({ default: 'allow', rules: [] }).canStop('a')).toBe(false);
    expect(compile({ default: 'allow', rules: [{ pattern: 'x', action: 'allow' }] }).canStop('a')).toBe(false);
    expect(compile({ default: 'allow', rules: [{ pattern: 'x', action: 'ask', agent: 'b' }] }).canStop('a')).toBe(false);
    expect(compile({ default: 'allow', rules: [{ pattern: 'x', action: 'deny', agent: 'a' }] }).canStop('a')).toBe(true);
    expect(compile({ default: 'ask', rules: [] }).canStop('a')).toBe(true);
  });

  test('quotes and backslashes are looked through by rules that stop commands, never by allow rules', () => {
    const p = compile({ default: 'allow', rules: [{ pattern: '^echo safe$', action: 'allow' }, { pattern: '\\brm\\s+-rf', action: 'ask' }] });
    expect(p.decide(`r''m -rf /`, 'a')).toMatchObject({ action: 'ask', rule: 1, start: null });
    expect(p.decide(`"rm" -rf /`, 'a')).toMatchObject({ action: 'ask', rule: 1 });
    expect(p.decide(`\\rm -rf /`, 'a')).toMatchObject({ action: 'ask', rule: 1 });
    // `e"cho" safe` is not `echo safe` to the allow rule: it falls to the default, not to "allow by rule 1".
    expect(p.decide(`e"cho" safe`, 'a')).toMatchObject({ action: 'allow', rule: DEFAULT_RULE });
  });

  test("commands that would switch off ptydeck's hook are always asked about", () => {
    const p = compile({ default: 'allow', rules: [{ pattern: '.*', action: 'allow' }] });
    for (const c of ['trap - DEBUG', 'trap "" DEBUG', 'shopt -u extdebug', 'set +T', 'set +o functrace', 'enable -n read', 'unset __ptydeck_gate_fd', 'declare -p __ptydeck_nonce']) {
      expect(p.decide(c, 'a'), c).toMatchObject({ action: 'ask', rule: HOOK_RULE });
    }
    expect(p.decide('trap "echo bye" EXIT', 'a')).toMatchObject({ action: 'allow', rule: 0 });
  });

  test('a pattern that would take forever on the agent\'s text is cut off and the command asked about', () => {
    // Without the budget this match takes about 2^40 steps: the test would hit its own timeout instead.
    const p = compile({ default: 'allow', rules: [{ pattern: '^(a+)+$', action: 'deny' }] });
    expect(p.decide(`${'a'.repeat(40)}b`, 'x')).toMatchObject({ action: 'ask', rule: SLOW_RULE });
  });

  test('"Always allow" matches exactly that command and nothing longer', () => {
    const cmd = 'touch /tmp/a.txt (1) [x] $HOME *';
    const rule = exactCommandRule(cmd, 'claude');
    const p = compile({ default: 'ask', rules: [rule] });
    expect(p.decide(cmd, 'claude')).toMatchObject({ action: 'allow', rule: 0 });
    expect(p.decide(`${cmd}; rm -rf /`, 'claude')).toMatchObject({ action: 'ask', rule: DEFAULT_RULE });
    expect(p.decide(`true\n${cmd}`, 'claude')).toMatchObject({ action: 'ask', rule: DEFAULT_RULE });
    expect(p.decide(cmd, 'codex')).toMatchObject({ action: 'ask', rule: DEFAULT_RULE });
  });

  test('what cannot be used is refused with the rule named', () => {
    const bad: [unknown, RegExp][] = [
      [{ rules: [{ pattern: '(', action: 'ask' }] }, /^rules\[0\] \(rule 1\): pattern "\(" is not a valid regular expression/],
      [{ rules: [{ pattern: 'a', action: 'ask' }, { pattern: 'b', action: 'never' }] }, /^rules\[1\] \(rule 2\): action must be/],
      [{ rules: [{ pattern: 'x'.repeat(PolicyConstants.MaxPatternChars + 1), action: 'ask' }] }, /pattern is longer than/],
      [{ rules: Array.from({ length: PolicyConstants.MaxRules + 1 }, () => ({ pattern: 'a', action: 'ask' })) }, /at most 500 rules/],
      [{ default: 'deny' }, /^default must be "allow" or "ask"/],
      ['rules', /must be a JSON object/],
    ];
    for (const [raw, message] of bad) {
      expect(() => parsePolicy(raw)).toThrow(PolicyError);
      expect(() => parsePolicy(raw)).toThrow(message);
    }
    // Unknown fields are dropped; a missing default is allow.
    expect(parsePolicy({ rules: [{ pattern: 'a', action: 'ask', extra: 1 }], other: true })).toEqual({ default: 'allow', rules: [{ pattern: 'a', action: 'ask' }] });
  });
});
