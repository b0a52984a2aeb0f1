// One list of what is governed (GOVERNED_FIELDS, packages/api/src/governance.ts): the admission
// policies' CEL lists must be it, and every spec field of the CRDs must be classified in it.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  AgentPolicySpec,
  ApplicationSpec,
  EnvironmentSpec,
  GOVERNED_FIELDS,
  type GovernedKind,
  PromotionFlowSpec,
  UNGOVERNED_FIELDS,
} from '@kpromo/api';
import { describe, expect, it } from 'vitest';

const root = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));
const POLICY_FILES = ['examples/deploy/admission-policy.yaml', 'deploy/helm/kpromo/templates/admission-policy.yaml'];
const CEL_LISTS: Record<GovernedKind, string> = {
  PromotionFlow: 'flowFields',
  Environment: 'envFields',
  Application: 'appFields',
  AgentPolicy: 'agentFields',
};

/** Every string list of a CEL variable `name` in an admission policy file (comments above it allowed). */
function celLists(text: string, name: string): string[][] {
  const re = new RegExp(`- name: ${name}\\n(?:\\s*#.*\\n)*\\s*expression: "\\[([^\\]]*)\\]"`, 'g');
  return [...text.matchAll(re)].map((m) => [...m[1]!.matchAll(/'([^']*)'/g)].map((x) => x[1]!));
}

/** How many policies declare the CEL variable: kpromo-governance has all three, kpromo-application-release appFields. */
const DECLARED: Record<GovernedKind, number> = { PromotionFlow: 1, Environment: 1, Application: 2, AgentPolicy: 1 };

describe('the governed fields are one list', () => {
  for (const file of POLICY_FILES)
    it(`${file}: the admission lists are GOVERNED_FIELDS (edit packages/api/src/governance.ts and copy them)`, () => {
      const text = readFileSync(root(file), 'utf8');
      for (const kind of Object.keys(CEL_LISTS) as GovernedKind[])
        expect(celLists(text, CEL_LISTS[kind]), `${file} ${CEL_LISTS[kind]}`).toEqual(
          Array.from({ length: DECLARED[kind] }, () => [...GOVERNED_FIELDS[kind]]),
        );
    });

  it('every spec field of PromotionFlow, Environment, Application and AgentPolicy is governed, or says why not', () => {
    const specs: Record<GovernedKind, { properties: Record<string, unknown> }> = {
      AgentPolicy: AgentPolicySpec,
      PromotionFlow: PromotionFlowSpec,
      Environment: EnvironmentSpec,
      Application: ApplicationSpec,
    };
    for (const kind of Object.keys(specs) as GovernedKind[]) {
      const governed = GOVERNED_FIELDS[kind].filter((f) => !f.startsWith('metadata.'));
      const ungoverned = Object.keys(UNGOVERNED_FIELDS[kind]);
      expect(
        governed.filter((f) => ungoverned.includes(f)),
        `${kind}: both governed and not`,
      ).toEqual([]);
      expect([...governed, ...ungoverned].sort(), kind).toEqual(Object.keys(specs[kind].properties).sort());
      for (const [f, why] of Object.entries(UNGOVERNED_FIELDS[kind]))
        expect(why.length, `${kind}.${f}`).toBeGreaterThan(10);
    }
  });
});
