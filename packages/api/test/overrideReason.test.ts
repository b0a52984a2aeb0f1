import { describe, expect, it } from 'vitest';
import {
  crdManifest,
  OVERRIDE_REASON_PATTERNS,
  OVERRIDE_REASON_REQUIRED,
  OVERRIDE_REASON_TOO_SHORT,
  OVERRIDE_REASON_WITHOUT_OVERRIDE,
  overrideReasonProblem,
  RESOURCES,
} from '../src/index.js';

// The emergency lane's one rule: an override carries a written reason of at least a sentence.
type Row = [string, { overrideFreeze?: boolean; overrideReason?: string }, string | undefined];
const rows: Row[] = [
  ['no override, no reason', {}, undefined],
  ['an override without a reason', { overrideFreeze: true }, OVERRIDE_REASON_REQUIRED],
  ['an override with an empty reason', { overrideFreeze: true, overrideReason: '' }, OVERRIDE_REASON_REQUIRED],
  ['an override with only spaces', { overrideFreeze: true, overrideReason: '   \n\t ' }, OVERRIDE_REASON_REQUIRED],
  ['one word', { overrideFreeze: true, overrideReason: 'hotfix' }, OVERRIDE_REASON_TOO_SHORT],
  ['one long word', { overrideFreeze: true, overrideReason: 'x'.repeat(40) }, OVERRIDE_REASON_TOO_SHORT],
  [
    'three words, 19 characters',
    { overrideFreeze: true, overrideReason: 'fix INC-7 checkouts' },
    OVERRIDE_REASON_TOO_SHORT,
  ],
  [
    'two words of 20 characters',
    { overrideFreeze: true, overrideReason: 'hotfix INC7-checkout' },
    OVERRIDE_REASON_TOO_SHORT,
  ],
  [
    '20 characters only with the padding around them',
    { overrideFreeze: true, overrideReason: '   fix INC-7 cart   ' },
    OVERRIDE_REASON_TOO_SHORT,
  ],
  ['three words, 20 characters', { overrideFreeze: true, overrideReason: 'fix INC-42 checkouts' }, undefined],
  [
    'a sentence over lines and tabs',
    { overrideFreeze: true, overrideReason: 'INC-42:\tcheckout 5xx,\nrolling the fix forward' },
    undefined,
  ],
  ['a sentence, padded', { overrideFreeze: true, overrideReason: '  payments down, hotfix v1.1.1  ' }, undefined],
  [
    'a reason without the override',
    { overrideFreeze: false, overrideReason: 'payments down, hotfix v1.1.1' },
    OVERRIDE_REASON_WITHOUT_OVERRIDE,
  ],
];

describe('overrideReasonProblem', () => {
  it.each(rows)('%s', (_title, approval, want) => {
    expect(overrideReasonProblem(approval)).toBe(want);
  });
});

describe("the CRD's rules for an approval", () => {
  type Rule = { rule: string; message: string };
  const crd = crdManifest(RESOURCES.PromotionPlan) as {
    spec: { versions: Array<{ schema: { openAPIV3Schema: Record<string, never> } }> };
  };
  // biome-ignore lint/suspicious/noExplicitAny: walking the generated schema
  const approval = (crd.spec.versions[0].schema.openAPIV3Schema as any).properties.spec.properties.approvals.items;
  const rules = approval['x-kubernetes-validations'] as Rule[];

  it('name the field and say what the operation layer says', () => {
    expect(rules.map((r) => r.message)).toEqual([
      `overrideReason ${OVERRIDE_REASON_REQUIRED}`,
      `overrideReason ${OVERRIDE_REASON_TOO_SHORT}`,
      `overrideReason ${OVERRIDE_REASON_WITHOUT_OVERRIDE}`,
    ]);
    expect(approval.properties.overrideReason.maxLength).toBe(1024);
  });

  it('match the same patterns (CEL string literals read back)', () => {
    const literals = [...rules[1].rule.matchAll(/matches\('((?:[^'\\]|\\.)*)'\)/g)].map((m) =>
      m[1].replace(/\\(.)/g, '$1'),
    );
    expect(literals).toEqual([...OVERRIDE_REASON_PATTERNS]);
  });
});
