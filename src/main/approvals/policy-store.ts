import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Policy } from '../../shared/approvals';
import { writeSecretFile } from '../home';
import { CompiledPolicy, DEFAULT_POLICY, parsePolicy, PolicyError } from './policy';

const FILE = 'approvals-policy.json';

/**
 * The policy as the person last saved it, kept in PTYDECK_HOME (0600) across restarts. A file that
 * exists but cannot be read as a policy is not silently replaced by "allow everything": ptydeck starts
 * with every agent command asked about, and says why.
 */
export class PolicyStore {
  readonly path: string;
  private current: CompiledPolicy;

  constructor(home: string) {
    this.path = join(home, FILE);
    this.current = new CompiledPolicy(this.load());
  }

  get policy(): Policy {
    return this.current.policy;
  }

  get compiled(): CompiledPolicy {
    return this.current;
  }

  /** Validates (PolicyError names the rule), saves, and takes effect for the next command asked about. */
  replace(raw: unknown): Policy {
    const next = new CompiledPolicy(parsePolicy(raw));
    writeSecretFile(this.path, JSON.stringify(next.policy, null, 2) + '\n');
    this.current = next;
    return next.policy;
  }

  private load(): Policy {
    if (!existsSync(this.path)) return DEFAULT_POLICY;
    try {
      return parsePolicy(JSON.parse(readFileSync(this.path, 'utf8')));
    } catch (err) {
      const why = err instanceof PolicyError ? err.message : (err as Error).message;
      console.error(`ptydeck: ${this.path} is not a usable approval policy (${why}); every agent command will be asked about until a policy is saved`);
      return { default: 'ask', rules: [] };
    }
  }
}
