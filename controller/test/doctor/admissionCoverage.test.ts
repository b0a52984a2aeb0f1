import { describe, expect, it } from 'vitest';
import { ADMISSION_POLICIES, judgeAdmission } from '../../src/doctor/admission.js';
import { type LabelSelector, selectorMatches } from '../../src/doctor/namespaces.js';

describe('selectorMatches: a LabelSelector as the apiserver applies it', () => {
  const labels = { 'kubernetes.io/metadata.name': 'team-a', tier: 'prod' };
  const rows: Array<[string, LabelSelector | undefined, boolean]> = [
    ['absent selects all', undefined, true],
    ['empty selects all', {}, true],
    ['matchLabels equal', { matchLabels: { tier: 'prod' } }, true],
    ['matchLabels differ', { matchLabels: { tier: 'dev' } }, false],
    [
      'In',
      { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a', 'x'] }] },
      true,
    ],
    [
      'In, not listed',
      { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['x'] }] },
      false,
    ],
    ['In, key absent', { matchExpressions: [{ key: 'team', operator: 'In', values: ['a'] }] }, false],
    ['NotIn, key absent', { matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['a'] }] }, true],
    ['NotIn, listed', { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['prod'] }] }, false],
    ['Exists', { matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, true],
    ['DoesNotExist', { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, false],
    ['unknown operator selects nothing', { matchExpressions: [{ key: 'tier', operator: 'Gt', values: ['1'] }] }, false],
    [
      'all terms must hold',
      { matchLabels: { tier: 'prod' }, matchExpressions: [{ key: 'team', operator: 'Exists' }] },
      false,
    ],
  ];
  it.each(rows)('%s', (_t, sel, want) => {
    expect(selectorMatches(sel, labels)).toBe(want);
  });
});

const ns = (name: string, labels: Record<string, string> = {}) => ({
  metadata: { name, labels: { 'kubernetes.io/metadata.name': name, ...labels } },
});
const policies = ADMISSION_POLICIES.map((p) => ({ metadata: { name: `kpromo-${p.suffix}` } }));
const binding = (suffix: string, namespaceSelector?: LabelSelector, validationActions = ['Deny']) => ({
  metadata: { name: `kpromo-${suffix}` },
  spec: {
    policyName: `kpromo-${suffix}`,
    validationActions,
    ...(namespaceSelector ? { matchResources: { namespaceSelector } } : {}),
  },
});
const only = (names: string[]): LabelSelector => ({
  matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: names }],
});

describe('judgeAdmission: kpromo policies bound with Deny in every reconciled namespace', () => {
  it('passes bindings without a selector', () => {
    const r = judgeAdmission(
      policies,
      ADMISSION_POLICIES.map((p) => binding(p.suffix)),
      [ns('team-a'), ns('team-b')],
    );
    expect(r.map((x) => x.status)).toEqual(ADMISSION_POLICIES.map(() => 'pass'));
  });

  it('attack: a binding whose namespaceSelector leaves out a reconciled namespace fails, naming the binding and the namespace', () => {
    const r = judgeAdmission(
      policies,
      ADMISSION_POLICIES.map((p) => binding(p.suffix, p.suffix === 'plan-approvals' ? only(['team-a']) : undefined)),
      [ns('team-a'), ns('team-b')],
    );
    expect(r.filter((x) => x.status === 'fail')).toEqual([
      expect.objectContaining({
        subject: 'ValidatingAdmissionPolicyBinding kpromo-plan-approvals',
        message:
          'its matchResources.namespaceSelector leaves out namespace team-b, which the controller reconciles: nothing enforces who may approve, and that approvals name themselves there',
      }),
    ]);
    expect(r.filter((x) => x.status === 'pass')).toHaveLength(ADMISSION_POLICIES.length - 1);
  });

  it('a second Deny binding covering the namespace suffices; an Audit-only one does not', () => {
    const approvals = [binding('plan-approvals', only(['team-a'])), { ...binding('plan-approvals', only(['team-b'])) }];
    approvals[1].metadata = { name: 'kpromo-plan-approvals-b' };
    const rest = ADMISSION_POLICIES.filter((p) => p.suffix !== 'plan-approvals').map((p) => binding(p.suffix));
    expect(judgeAdmission(policies, [...approvals, ...rest], [ns('team-a'), ns('team-b')])[0].status).toBe('pass');
    approvals[1].spec.validationActions = ['Audit'];
    expect(judgeAdmission(policies, [...approvals, ...rest], [ns('team-a'), ns('team-b')])[0]).toMatchObject({
      status: 'fail',
      subject: 'ValidatingAdmissionPolicyBinding kpromo-plan-approvals',
    });
  });

  it('fails a policy whose own matchConstraints.namespaceSelector leaves out a reconciled namespace', () => {
    const own = policies.map((p) =>
      p.metadata.name === 'kpromo-governance'
        ? { ...p, spec: { matchConstraints: { namespaceSelector: { matchLabels: { governed: 'yes' } } } } }
        : p,
    );
    const r = judgeAdmission(
      own,
      ADMISSION_POLICIES.map((p) => binding(p.suffix)),
      [ns('team-a', { governed: 'yes' }), ns('team-b')],
    );
    expect(r.filter((x) => x.status === 'fail')).toEqual([
      expect.objectContaining({
        subject: 'ValidatingAdmissionPolicy kpromo-governance',
        message: expect.stringContaining('matchConstraints.namespaceSelector leaves out namespace team-b'),
      }),
    ]);
  });

  it('attack: a binding whose objectSelector lets the writer opt out by a label of their own fails', () => {
    const r = judgeAdmission(
      policies,
      ADMISSION_POLICIES.map((p) =>
        p.suffix === 'status-writers'
          ? {
              ...binding(p.suffix),
              spec: {
                ...binding(p.suffix).spec,
                matchResources: {
                  objectSelector: { matchExpressions: [{ key: 'skip-kpromo', operator: 'DoesNotExist' }] },
                },
              },
            }
          : binding(p.suffix),
      ),
      [ns('team-a')],
    );
    expect(r.filter((x) => x.status === 'fail')).toEqual([
      expect.objectContaining({
        subject: 'ValidatingAdmissionPolicyBinding kpromo-status-writers',
        message: expect.stringContaining(
          'matchResources.objectSelector (the labels the writer sets decide) let requests past the policy',
        ),
      }),
    ]);
  });

  it('fails a binding that narrows the policy with resourceRules or excludeResourceRules', () => {
    const narrowed = {
      ...binding('governance'),
      spec: {
        ...binding('governance').spec,
        matchResources: {
          excludeResourceRules: [
            {
              apiGroups: ['promotions.kpromo.dev'],
              apiVersions: ['*'],
              operations: ['*'],
              resources: ['environments'],
            },
          ],
        },
      },
    };
    const r = judgeAdmission(
      policies,
      ADMISSION_POLICIES.map((p) => (p.suffix === 'governance' ? narrowed : binding(p.suffix))),
      [ns('team-a')],
    );
    expect(r.filter((x) => x.status === 'fail').map((x) => x.message)).toEqual([
      expect.stringMatching(/^its matchResources.excludeResourceRules let requests past the policy/),
    ]);
  });
});
