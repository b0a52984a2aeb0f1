import { describe, expect, it } from 'vitest';
import {
  findWildcardHolders,
  judgeWildcardHolders,
  type RbacRule,
  wildcardGrants,
} from '../../src/doctor/rbacWildcards.js';

const G = 'promotions.kpromo.dev';

describe('wildcardGrants: the kpromo verbs a rule grants through a wildcard', () => {
  const rows: Array<[string, RbacRule, string[]]> = [
    [
      'verbs * on plans',
      { apiGroups: [G], resources: ['promotionplans'], verbs: ['*'] },
      ['approve', 'rollback', 'override-freeze', 'continue'],
    ],
    [
      'verbs * on environments',
      { apiGroups: [G], resources: ['environments'], verbs: ['*'] },
      ['approve', 'rollback', 'override-freeze', 'continue', 'govern'],
    ],
    [
      'everything everywhere',
      { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
      ['approve', 'rollback', 'override-freeze', 'continue', 'govern'],
    ],
    ['approve named, resources *', { apiGroups: [G], resources: ['*'], verbs: ['approve'] }, ['approve']],
    [
      'rollback named, apiGroups *',
      { apiGroups: ['*'], resources: ['promotionplans'], verbs: ['rollback'] },
      ['rollback'],
    ],
    // automate no longer makes anyone the controller (admission knows it by its username).
    ['automate named, apiGroups *', { apiGroups: ['*'], resources: ['promotionplans'], verbs: ['automate'] }, []],
    [
      'explicit grant: on purpose, not listed',
      { apiGroups: [G], resources: ['promotionplans'], verbs: ['approve'] },
      [],
    ],
    ['verbs * on another group', { apiGroups: ['apps'], resources: ['*'], verbs: ['*'] }, []],
    ['verbs * on a kpromo kind no verb is asked on', { apiGroups: [G], resources: ['linestops'], verbs: ['*'] }, []],
    ['ordinary verbs on everything', { apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'patch'] }, []],
    ['plan status only', { apiGroups: [G], resources: ['promotionplans/status'], verbs: ['*'] }, []],
  ];
  it.each(rows)('%s', (_t, rule, want) => {
    expect(wildcardGrants(rule)).toEqual(want);
  });
});

const role = (name: string, rules: RbacRule[], namespace?: string) => ({ metadata: { name, namespace }, rules });
const everythingOnPlans = { apiGroups: [G], resources: ['promotionplans', 'environments'], verbs: ['*'] };

describe('findWildcardHolders', () => {
  it('attack: a namespace admin Role with verbs ["*"] on promotionplans grants a developer approve; the doctor names role, binding and subject', () => {
    const holders = findWildcardHolders({
      namespaces: ['team-a'],
      roles: [role('plans-admin', [everythingOnPlans], 'team-a')],
      clusterRoles: [],
      roleBindings: [
        {
          metadata: { name: 'devs', namespace: 'team-a' },
          roleRef: { kind: 'Role', name: 'plans-admin' },
          subjects: [{ kind: 'User', name: 'dev@example.com' }],
        },
      ],
      clusterRoleBindings: [],
    });
    const [r] = judgeWildcardHolders(holders, 'namespace team-a');
    expect(r).toMatchObject({ status: 'warn', subject: 'RoleBinding team-a/devs (Role team-a/plans-admin)' });
    expect(r.message).toBe(
      'User dev@example.com holds approve, rollback (approve rollbacks), override-freeze, continue, govern (change release policy) in namespace team-a through verbs: ["*"]',
    );
    expect(r.fix).toContain('instead of "*"');
  });

  it('finds ClusterRoles through RoleBindings and ClusterRoleBindings, only in the namespaces given, and leaves out the controller and system:masters', () => {
    const holders = findWildcardHolders({
      namespaces: ['team-a'],
      roles: [],
      clusterRoles: [
        role('cluster-admin', [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }]),
        role('ns-admin', [everythingOnPlans]),
        role('viewer', [{ apiGroups: [G], resources: ['*'], verbs: ['get', 'list'] }]),
      ],
      roleBindings: [
        {
          metadata: { name: 'admins', namespace: 'team-a' },
          roleRef: { kind: 'ClusterRole', name: 'ns-admin' },
          subjects: [
            { kind: 'Group', name: 'team-a-admins' },
            { kind: 'ServiceAccount', name: 'kpromo-controller', namespace: 'kpromo' },
          ],
        },
        // Not a reconciled namespace: out of scope.
        {
          metadata: { name: 'admins', namespace: 'team-b' },
          roleRef: { kind: 'ClusterRole', name: 'ns-admin' },
          subjects: [{ kind: 'Group', name: 'team-b-admins' }],
        },
        {
          metadata: { name: 'view', namespace: 'team-a' },
          roleRef: { kind: 'ClusterRole', name: 'viewer' },
          subjects: [{ kind: 'Group', name: 'everyone' }],
        },
        {
          metadata: { name: 'ctl', namespace: 'team-a' },
          roleRef: { kind: 'ClusterRole', name: 'ns-admin' },
          subjects: [{ kind: 'User', name: 'system:serviceaccount:kpromo:kpromo-controller' }],
        },
      ],
      clusterRoleBindings: [
        {
          metadata: { name: 'cluster-admin' },
          roleRef: { kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ kind: 'Group', name: 'system:masters' }],
        },
        {
          metadata: { name: 'ops-admin' },
          roleRef: { kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ kind: 'ServiceAccount', name: 'ci', namespace: 'ops' }],
        },
      ],
      controller: { namespace: 'kpromo', name: 'kpromo-controller' },
    });
    expect(holders.map((h) => [h.binding, h.role, h.subjects, h.wildcards])).toEqual([
      [
        'ClusterRoleBinding ops-admin',
        'ClusterRole cluster-admin',
        ['ServiceAccount ops/ci'],
        ['verbs: ["*"]', 'resources: ["*"]', 'apiGroups: ["*"]'],
      ],
      ['RoleBinding team-a/admins', 'ClusterRole ns-admin', ['Group team-a-admins'], ['verbs: ["*"]']],
    ]);
    expect(judgeWildcardHolders(holders, 'namespace team-a')[0].message).toContain('in every namespace');
  });

  it('passes, naming where it looked, when nobody holds them through a wildcard', () => {
    expect(judgeWildcardHolders([], 'namespaces team-a, team-b')).toEqual([
      expect.objectContaining({
        status: 'pass',
        subject: 'RBAC in namespaces team-a, team-b and cluster-wide',
      }),
    ]);
  });
});
