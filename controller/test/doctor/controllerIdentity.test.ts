import { describe, expect, it } from 'vitest';
import {
  ADMISSION_POLICIES,
  CONTROLLER_IDENTITY_LABEL,
  type IdentityConfigMap,
  identityParamRefs,
  judgeControllerIdentity,
} from '../../src/doctor/admission.js';

const SA = 'system:serviceaccount:kpromo:kpromo-controller';
const REF = { name: 'kpromo-controller-identity', namespace: 'kpromo', parameterNotFoundAction: 'Deny' };
const KEY = 'kpromo/kpromo-controller-identity';
const IDENTITY = ADMISSION_POLICIES.filter((p) => p.identity).map((p) => p.suffix);
const BOUND = IDENTITY.map((s) => `kpromo-${s}`).join(', ');

const policy = (suffix: string, paramKind: object | null = { apiVersion: 'v1', kind: 'ConfigMap' }) => ({
  metadata: { name: `kpromo-${suffix}` },
  spec: { paramKind },
});
const binding = (suffix: string, paramRef: object | null = REF) => ({
  metadata: { name: `kpromo-${suffix}` },
  spec: { policyName: `kpromo-${suffix}`, validationActions: ['Deny'], paramRef },
});
const cm = (
  data: Record<string, string>,
  labels: Record<string, string> = { [CONTROLLER_IDENTITY_LABEL]: 'true' },
) => ({
  metadata: { labels },
  data,
});
const policies = ADMISSION_POLICIES.map((p) => policy(p.suffix, p.identity ? undefined : null));
const bindings = ADMISSION_POLICIES.map((p) => binding(p.suffix, p.identity ? REF : null));

describe('judgeControllerIdentity: the policies recognise the controller by its username, and that is the controller', () => {
  const rows: Array<
    [
      string,
      {
        policies?: typeof policies;
        bindings?: typeof bindings;
        configMap?: IdentityConfigMap;
        controller?: string;
      },
      Array<[status: string, subject: string, says: string]>,
    ]
  > = [
    [
      'the example install, the controller given: pass',
      { configMap: cm({ controller: SA }), controller: SA },
      [
        [
          'pass',
          `ConfigMap ${KEY}`,
          `the controller identity of ${BOUND}: ${SA} (the controller’s ServiceAccount among them)`,
        ],
      ],
    ],
    [
      'no --controller-service-account: pass, listing whom they trust',
      { configMap: cm({ controller: SA, 'extra-0': 'system:serviceaccount:kpromo:green' }) },
      [['pass', `ConfigMap ${KEY}`, `${SA}, system:serviceaccount:kpromo:green`]],
    ],
    [
      'attack: the ConfigMap names someone else than the controller’s ServiceAccount',
      { configMap: cm({ controller: 'system:serviceaccount:team-a:admin' }), controller: SA },
      [
        [
          'fail',
          `ConfigMap ${KEY}`,
          `lists system:serviceaccount:team-a:admin, not ${SA}, the ServiceAccount the controller runs as`,
        ],
      ],
    ],
    [
      'missing: every request refused',
      { configMap: undefined },
      [['fail', `ConfigMap ${KEY}`, 'missing: kpromo-plan-approvals']],
    ],
    [
      'unlabelled: trusts nobody',
      { configMap: cm({ controller: SA }, {}) },
      [['fail', `ConfigMap ${KEY}`, `is not labelled ${CONTROLLER_IDENTITY_LABEL}`]],
    ],
    ['empty', { configMap: cm({}) }, [['fail', `ConfigMap ${KEY}`, 'lists no username']]],
    [
      'unreadable',
      { configMap: { error: 'forbidden' } },
      [['fail', `ConfigMap ${KEY}`, 'could not read it: forbidden']],
    ],
    [
      'attack: an older policy that asks for the verb automate (no paramKind)',
      {
        policies: policies.map((p) =>
          p.metadata.name === 'kpromo-status-writers' ? policy('status-writers', null) : p,
        ),
        configMap: cm({ controller: SA }),
      },
      [
        ['fail', 'ValidatingAdmissionPolicy kpromo-status-writers', 'an older version asks for the RBAC verb automate'],
        ['pass', `ConfigMap ${KEY}`, 'the controller identity of kpromo-plan-approvals, kpromo-history-writers'],
      ],
    ],
    [
      'a binding that lets everything past without its ConfigMap (parameterNotFoundAction: Allow)',
      {
        bindings: bindings.map((b) =>
          b.metadata.name === 'kpromo-line-stops'
            ? binding('line-stops', { ...REF, parameterNotFoundAction: 'Allow' })
            : b,
        ),
        configMap: cm({ controller: SA }),
      },
      [
        ['fail', 'ValidatingAdmissionPolicyBinding kpromo-line-stops', 'paramRef.parameterNotFoundAction is Allow'],
        ['pass', `ConfigMap ${KEY}`, 'the controller identity of'],
      ],
    ],
    [
      'a binding without paramRef',
      {
        bindings: bindings.map((b) =>
          b.metadata.name === 'kpromo-plan-approvals' ? binding('plan-approvals', null) : b,
        ),
        configMap: cm({ controller: SA }),
      },
      [
        ['fail', 'ValidatingAdmissionPolicyBinding kpromo-plan-approvals', 'names no controller identity ConfigMap'],
        ['pass', `ConfigMap ${KEY}`, 'the controller identity of'],
      ],
    ],
    ['nothing installed: nothing to say', { policies: [], bindings: [], configMap: undefined }, []],
  ];
  it.each(rows)('%s', (_t, o, want) => {
    const r = judgeControllerIdentity(
      o.policies ?? policies,
      o.bindings ?? bindings,
      { [KEY]: o.configMap },
      o.controller,
    );
    expect(r.map((x) => [x.status, x.subject])).toEqual(want.map(([status, subject]) => [status, subject]));
    for (const [i, [, , says]] of want.entries()) expect(r[i].message).toContain(says);
    for (const x of r.filter((y) => y.status === 'fail')) expect(x.fix).toBeTruthy();
  });

  it('identityParamRefs: the ConfigMaps the Deny bindings of the identity policies name, once each', () => {
    expect(identityParamRefs(policies, bindings)).toEqual([KEY]);
    expect(identityParamRefs([], bindings)).toEqual([]);
  });
});
