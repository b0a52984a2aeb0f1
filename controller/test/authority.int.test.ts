// Authority on the real control plane: every door authenticates, approvals are RBAC verbs checked by
// the controller and by the ValidatingAdmissionPolicy (installed by applyCrds), and approval policies
// (required approvers, freeze windows and their overrides, soak time, automatic stages and their
// cooldown) hold or run plans.
import {
  OVERRIDE_REASON_REQUIRED,
  OVERRIDE_REASON_TOO_SHORT,
  OVERRIDE_REASON_WITHOUT_OVERRIDE,
  type PromotionPlan,
  type StageCooldown,
} from '@kpromo/api';
import type { HistoryEntry } from '@kpromo/contract';
import { waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  callApi,
  controllerConfig,
  eventReasons,
  getPlan,
  grantRole,
  pushTestImage,
  rejection,
  TEST_ADMIN,
  type TestUser,
  twoStageWorld,
  uidOf,
  waitPlan,
  waitReady,
} from '@kpromo/test-harness/controller';
import { call, httpClient, text } from '@kpromo/test-harness/mcpClient';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EXIT } from '../../cli/src/exitCodes.js';
import { runKpromo } from '../../cli/test/inProcess.js';
import { HISTORY_LABEL } from '../src/history/segments.js';
import type { KubeRest } from '../src/kube/rest.js';
import { createLogger } from '../src/observability/logger.js';
import { type Running, startController } from '../src/runtime.js';

const APPS = ['alpha', 'beta', 'gamma', 'delta', 'eps', 'zeta'];
const kubeconfig = inject('kubeconfig');
// Each app here is governed into stable by a flow of its own (below): no flow "main", which would
// govern them too (the controller refuses an app that two flows govern).
const world = twoStageWorld('authz', { kubeconfig, registries: inject('registries'), apps: APPS, flow: false });
const { ns: NS, run: RUN, dev, user, flowOf } = world;

const alice = user('alice', ['developers']); // may approve into stable only (environments/stable)
const bob = user('bob', ['release-managers']); // approve, rollback, override-freeze namespace-wide
const carol = user('carol', ['release-managers']);
const dave = user('dave', ['release-managers']);
const mallory = user('mallory', ['developers']); // reads, creates plans, holds no kpromo verb
const erin = user('erin', ['qa', `approvers-${RUN}`]); // may approve only through her second group
const planPath = (name: string) => `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans/${name}`;

let ctl: Running;
const digests: Record<string, string> = {};

const post = (path: string, who: TestUser | null, body: unknown = {}) =>
  callApi(ctl.port, path, { method: 'POST', body, token: who ? who.token : null });
const errorOf = async (r: Response) => ((await r.json()) as { error: string }).error;

async function createPlan(who: TestUser, flow: string, app: string, name: string): Promise<PromotionPlan> {
  const r = await post('/api/v1/plans', who, {
    namespace: NS,
    flow,
    from: 'dev',
    to: 'stable',
    name,
    applications: [app],
  });
  expect(r.status, await r.clone().text()).toBe(201);
  return ((await r.json()) as { plan: PromotionPlan }).plan;
}

/** A direct write as `who`, like `kubectl --as <user> --as-group <group>`: RBAC and admission judge them. */
const as = (who: TestUser | { username: string; groups: string[] }): KubeRest =>
  dev.as({ username: who.username, groups: who.groups ?? [] });

const ready = (p: PromotionPlan) => p.status?.conditions?.find((c) => c.type === 'Ready');
const done = (p: PromotionPlan) => ['Complete', 'Incomplete', 'Failed'].includes(p.status?.phase ?? '');

const grant = (name: string, rules: object[], subjects: TestUser[]) => grantRole(dev, NS, name, rules, subjects);

/** Applies a dev -> stable flow for one app and waits until the controller's cache has this version. */
async function flow(name: string, app: string, stable: Record<string, unknown>) {
  const applied = (await applyCr(dev, flowOf(name, [app], stable))) as { metadata: { generation?: number } };
  await waitFor(`flow ${name} cached`, async () =>
    (ctl.controller.cache.getFlow(NS, name)?.metadata.generation ?? 0) >= (applied.metadata.generation ?? 1)
      ? true
      : undefined,
  );
}

beforeAll(async () => {
  await world.seed();
  Object.assign(digests, world.devDigest);
  const everyone = [alice, bob, carol, dave, mallory, erin];
  await grant(
    'readers',
    [
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['applications', 'environments', 'promotionflows', 'promotionplans'],
        verbs: ['get', 'list'],
      },
      { apiGroups: ['promotions.kpromo.dev'], resources: ['promotionplans'], verbs: ['create', 'patch'] },
    ],
    everyone,
  );
  await grant(
    'stable-approvers',
    [
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['environments'],
        resourceNames: ['stable'],
        verbs: ['approve'],
      },
    ],
    [alice],
  );
  await grant(
    'release-managers',
    [
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['promotionplans'],
        verbs: ['approve', 'rollback', 'override-freeze'],
      },
    ],
    [bob, carol, dave],
  );
  // The MCP door too (write mode), for the override refused there.
  ctl = await world.start({ mcp: { enabled: true, host: '127.0.0.1', port: 0, write: true } }, [
    alice,
    bob,
    carol,
    dave,
    mallory,
    erin,
  ]);
}, 240_000);

afterAll(() => world.stop());

describe('every door authenticates and authorises as the caller', () => {
  it('answers 401 without a token and 403 for a token without the verb; a body approvedBy is ignored', async () => {
    await flow('plain', 'alpha', {});
    const plan = await createPlan(TEST_ADMIN, 'plain', 'alpha', 'plain-1');
    expect(plan.spec.requestedBy).toBe(TEST_ADMIN.username);
    // The two curl lines, without credentials.
    const rb = await post(`/api/v1/plans/${NS}/plain-1/rollback`, null, { approvedBy: 'mallory' });
    expect(rb.status).toBe(401);
    expect(rb.headers.get('www-authenticate')).toMatch(/^Bearer realm="kpromo"/);
    const ap = await post(`/api/v1/plans/${NS}/plain-1/approve`, null, { approvedBy: 'mallory' });
    expect(ap.status).toBe(401);
    expect(await errorOf(ap)).toMatch(/missing bearer token/);
    expect((await callApi(ctl.port, '/api/v1/plans', { token: 'forged-token-0123456789' })).status).toBe(401);
    // Reads too; only /healthz and /readyz are anonymous, /metrics needs RBAC on the URL.
    expect((await callApi(ctl.port, `/api/v1/applications?namespace=${NS}`, { token: null })).status).toBe(401);
    expect((await callApi(ctl.port, '/metrics', { token: null })).status).toBe(401);
    expect((await callApi(ctl.port, '/metrics', { token: mallory.token })).status).toBe(403);
    expect((await callApi(ctl.port, '/metrics')).status).toBe(200);
    expect((await callApi(ctl.port, '/healthz', { token: null })).status).toBe(200);
    // With a token that lacks the verb: 403, and nothing is written.
    const denied = await post(`/api/v1/plans/${NS}/plain-1/approve`, mallory, {
      uid: await uidOf(dev, NS, 'plain-1'),
      approvedBy: TEST_ADMIN.username,
    });
    expect(denied.status).toBe(403);
    expect(await errorOf(denied)).toBe(
      `forbidden: ${mallory.username} may not approve plans into environment stable in namespace ${NS} (Kubernetes RBAC: needs verb approve on environments/stable or on promotionplans)`,
    );
    expect((await getPlan(dev, NS, 'plain-1')).spec.approvals).toBeUndefined();
    const awaiting = await waitPlan(dev, NS, 'plain-1', (p) => ready(p)?.reason === 'AwaitingApproval');
    expect(awaiting.status?.phase).toBe('Pending');
    expect(awaiting.status?.gate).toMatchObject({ approved: false, required: 1, waitingFor: '1 more approval' });
  });

  it('reads are filtered: a denied read answers like a missing object', async () => {
    const outsider = await post('/api/v1/plans', null, {});
    expect(outsider.status).toBe(401);
    // TEST_ADMIN sees the plan; a user without any RBAC in the namespace gets the same 404 as for a
    // plan that does not exist, and empty lists.
    const nobody = user('nobody', []);
    const ctl2 = await startController(
      controllerConfig(kubeconfig, NS, { leaderElection: { enabled: false } }, [nobody]),
      {
        serve: true,
        log: createLogger({ level: 'silent' }),
      },
    );
    try {
      const hidden = await callApi(ctl2.port, `/api/v1/plans/${NS}/plain-1`, { token: nobody.token });
      const missing = await callApi(ctl2.port, `/api/v1/plans/${NS}/no-such-plan`, { token: nobody.token });
      expect(hidden.status).toBe(404);
      expect(missing.status).toBe(404);
      expect(await errorOf(hidden)).toBe(`PromotionPlan ${NS}/plain-1 not found`);
      const list = await callApi(ctl2.port, '/api/v1/plans', { token: nobody.token });
      expect(((await list.json()) as { items: unknown[] }).items).toEqual([]);
    } finally {
      await ctl2.stop();
    }
  });

  it('approval per target environment: alice approves into stable and is recorded as the approver', async () => {
    const r = await post(`/api/v1/plans/${NS}/plain-1/approve`, alice, {
      uid: await uidOf(dev, NS, 'plain-1'),
      approvedBy: 'someone-else',
    });
    expect(r.status, await r.clone().text()).toBe(200);
    const approved = (await r.json()) as PromotionPlan;
    expect(approved.spec.approvals).toEqual([
      { user: alice.username, groups: ['developers'], planUID: approved.metadata.uid },
    ]);
    const p = await waitPlan(dev, NS, 'plain-1', done);
    expect(p.status?.phase).toBe('Complete');
    expect(p.status?.gate).toMatchObject({ approved: true, approvers: [{ user: alice.username, counted: true }] });
    expect(p.status?.conditions?.find((c) => c.type === 'Approved')?.message).toBe(`approved by ${alice.username}`);
    // alice's grant names environment stable only: a plan into dev is refused for her.
    await applyCr(dev, {
      kind: 'PromotionPlan',
      metadata: { name: 'into-dev', namespace: NS },
      spec: { flow: 'plain', from: 'stable', to: 'dev', candidates: [] },
    } as never);
    const intoDev = await post(`/api/v1/plans/${NS}/into-dev/approve`, alice, {
      uid: await uidOf(dev, NS, 'into-dev'),
    });
    expect(intoDev.status).toBe(403);
    expect(await errorOf(intoDev)).toMatch(`may not approve plans into environment dev`);
  });
});

describe('groups', () => {
  it("RBAC granted to the second of a caller's groups applies (one Impersonate-Group line per group)", async () => {
    await dev.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'approvers-group', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'release-managers' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: `approvers-${RUN}` }],
    });
    await applyCr(dev, {
      kind: 'PromotionPlan',
      metadata: { name: 'by-group', namespace: NS },
      spec: { flow: 'plain', from: 'dev', to: 'stable', candidates: [] },
    } as never);
    const r = await waitFor(
      'group binding effective',
      async () => {
        const x = await post(`/api/v1/plans/${NS}/by-group/approve`, erin, { uid: await uidOf(dev, NS, 'by-group') });
        return x.status === 200 ? x : undefined;
      },
      20_000,
    );
    // Written to the apiserver as erin with both groups; admission checked them against hers.
    const approved = (await r.json()) as PromotionPlan;
    expect(approved.spec.approvals).toEqual([
      { user: erin.username, groups: ['qa', `approvers-${RUN}`], planUID: approved.metadata.uid },
    ]);
  });
});

describe('the admission policy judges direct writes (kubectl) by the same rules', () => {
  it('refuses approvals without the verb, in another name, with foreign groups, and by the controller account', async () => {
    await createPlan(TEST_ADMIN, 'plain', 'alpha', 'plain-2').catch(() => undefined);
    const direct = (await applyCr(dev, {
      kind: 'PromotionPlan',
      metadata: { name: 'direct', namespace: NS },
      spec: { flow: 'plain', from: 'dev', to: 'stable', candidates: [] },
    } as never)) as PromotionPlan;
    const planUID = direct.metadata.uid;
    const add = (approval: object) => [{ op: 'add', path: '/spec/approvals', value: [{ planUID, ...approval }] }];
    const noVerb = await rejection(as(mallory).jsonPatch(planPath('direct'), add({ user: mallory.username })));
    expect(noVerb.status).toBe(403);
    expect(noVerb.message).toContain(
      `user ${mallory.username} may not approve plans into environment stable in namespace ${NS} (RBAC: needs verb approve on environments/stable or on promotionplans)`,
    );
    const otherName = await rejection(as(alice).jsonPatch(planPath('direct'), add({ user: bob.username })));
    expect(otherName.message).toContain(`an approval must name the requesting user ${alice.username}`);
    const foreignGroup = await rejection(
      as(alice).jsonPatch(planPath('direct'), add({ user: alice.username, groups: ['release-managers'] })),
    );
    expect(foreignGroup.message).toContain(`approval groups must be groups of ${alice.username}`);
    const override = await rejection(
      as(alice).jsonPatch(
        planPath('direct'),
        add({ user: alice.username, overrideFreeze: true, overrideReason: 'INC-9: the fix must ship now' }),
      ),
    );
    expect(override.message).toContain(`user ${alice.username} may not override freeze windows of environment stable`);
    // The reason comes only with the override, so only who may override writes one.
    const reasonOnly = await rejection(
      as(alice).jsonPatch(
        planPath('direct'),
        add({ user: alice.username, overrideReason: 'INC-9: the fix must ship now' }),
      ),
    );
    expect(reasonOnly.message).toContain(`overrideReason ${OVERRIDE_REASON_WITHOUT_OVERRIDE}`);
    // The controller's ServiceAccount (deploy manifests give it no approve verb) cannot approve at all.
    const sa = { username: `system:serviceaccount:${NS}:kpromo-controller`, groups: ['system:serviceaccounts'] };
    await grant(
      'controller-like',
      [
        {
          apiGroups: ['promotions.kpromo.dev'],
          resources: ['promotionplans'],
          verbs: ['get', 'list', 'create', 'patch'],
        },
      ],
      [],
    );
    const bySa = await rejection(as(sa).jsonPatch(planPath('direct'), add({ user: sa.username })));
    expect(bySa.message).toMatch(/may not approve plans into environment stable|cannot patch resource/);
    const forAlice = await rejection(as(sa).jsonPatch(planPath('direct'), add({ user: alice.username })));
    expect(forAlice.status).toBe(403);
    // requestedBy must be the creating user.
    const forged = await rejection(
      as(mallory).create(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans`, {
        apiVersion: 'promotions.kpromo.dev/v1alpha1',
        kind: 'PromotionPlan',
        metadata: { name: 'forged', namespace: NS },
        spec: { flow: 'plain', from: 'dev', to: 'stable', candidates: [], requestedBy: alice.username },
      }),
    );
    expect(forged.message).toContain(`spec.requestedBy must be the creating user ${mallory.username}`);
    // With the verb, in her own name: accepted, and then the spec is frozen for everyone.
    const approved = await as(alice).jsonPatch<PromotionPlan>(planPath('direct'), add({ user: alice.username }));
    expect(approved.spec.approvals).toEqual([{ user: alice.username, planUID }]);
    const edit = await rejection(
      as(alice).jsonPatch(planPath('direct'), [{ op: 'replace', path: '/spec/to', value: 'dev' }]),
    );
    expect(edit.message).toContain(
      'the content of a plan (flow, from, to, action, rollbackOf, applications, candidates, requestedBy, requestedByAgent) is fixed at creation',
    );
    // A second approver appends; nobody removes or rewrites an approval.
    const appended = await as(bob).jsonPatch<PromotionPlan>(planPath('direct'), [
      { op: 'add', path: '/spec/approvals/-', value: { user: bob.username, planUID } },
    ]);
    expect(appended.spec.approvals?.map((a) => a.user)).toEqual([alice.username, bob.username]);
    const removed = await rejection(
      as(bob).jsonPatch(planPath('direct'), [{ op: 'remove', path: '/spec/approvals/0' }]),
    );
    expect(removed.message).toContain('approvals can only be appended');
  });
});

describe('approval policies', () => {
  it('required approvers: two distinct release managers, and the creator does not count', async () => {
    await flow('strict', 'beta', {
      approvers: { groups: ['release-managers'], count: 2, forbidSelfApproval: true },
    });
    await createPlan(bob, 'strict', 'beta', 'strict-1');
    expect(
      (await post(`/api/v1/plans/${NS}/strict-1/approve`, bob, { uid: await uidOf(dev, NS, 'strict-1') })).status,
    ).toBe(200);
    // alice may approve into stable (RBAC) but is not a release manager: recorded, not counted.
    expect(
      (await post(`/api/v1/plans/${NS}/strict-1/approve`, alice, { uid: await uidOf(dev, NS, 'strict-1') })).status,
    ).toBe(200);
    expect(
      (await post(`/api/v1/plans/${NS}/strict-1/approve`, carol, { uid: await uidOf(dev, NS, 'strict-1') })).status,
    ).toBe(200);
    const waiting = await waitPlan(dev, NS, 'strict-1', (p) => (p.status?.gate?.approvers ?? []).length === 3);
    expect(waiting.status?.phase).toBe('Pending');
    expect(ready(waiting)).toMatchObject({ status: 'False', reason: 'AwaitingApproval' });
    expect(waiting.status?.gate?.approved).toBe(false);
    expect(waiting.status?.gate?.waitingFor).toMatch(/^1 more approval .*release-managers/);
    expect(
      Object.fromEntries((waiting.status?.gate?.approvers ?? []).map((a) => [a.user.split('-')[0], a.counted])),
    ).toEqual({ bob: false, alice: false, carol: true });
    expect(
      (await post(`/api/v1/plans/${NS}/strict-1/approve`, dave, { uid: await uidOf(dev, NS, 'strict-1') })).status,
    ).toBe(200);
    const p = await waitPlan(dev, NS, 'strict-1', done);
    expect(p.status?.phase).toBe('Complete');
    expect(p.status?.conditions?.find((c) => c.type === 'Approved')?.message).toBe(
      `approved by ${carol.username}, ${dave.username}`,
    );
  });

  it('a freeze window holds an approved plan Pending (Frozen, until); override-freeze with its reason lets it run and is recorded', async () => {
    const start = new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    const end = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    await flow('frozen', 'gamma', { freezeWindows: [{ name: 'incident', start, end, reason: 'incident 42' }] });
    await createPlan(alice, 'frozen', 'gamma', 'frozen-1');
    const noOverride = await post(`/api/v1/plans/${NS}/frozen-1/approve`, alice, {
      uid: await uidOf(dev, NS, 'frozen-1'),
      overrideFreeze: true,
      overrideReason: 'INC-42: checkout 5xx, gamma carries the fix',
    });
    expect(noOverride.status).toBe(403);
    expect(await errorOf(noOverride)).toMatch(/may not override-freeze plans into environment stable/);
    expect(
      (await post(`/api/v1/plans/${NS}/frozen-1/approve`, alice, { uid: await uidOf(dev, NS, 'frozen-1') })).status,
    ).toBe(200);
    const held = await waitPlan(dev, NS, 'frozen-1', (p) => ready(p)?.reason === 'Frozen');
    expect(held.status?.phase).toBe('Pending');
    expect(held.status?.gate?.approved).toBe(true);
    expect(held.status?.gate?.frozen).toMatchObject({ window: 'incident', reason: 'incident 42', until: end });
    expect(ready(held)?.message).toContain(`until ${end}`);
    // Events are recorded in the background, after the status write the wait above saw.
    await waitFor('Frozen event on frozen-1', async () => (await eventReasons(dev, NS, 'frozen-1')).includes('Frozen'));
    // Already approved by alice; bob, a release manager, overrides. Without a reason of a sentence at
    // least, every door refuses it naming the field, and nothing is written.
    const uid = await uidOf(dev, NS, 'frozen-1');
    const noReason = await post(`/api/v1/plans/${NS}/frozen-1/approve`, bob, { uid, overrideFreeze: true });
    expect(noReason.status).toBe(400);
    expect(await errorOf(noReason)).toBe(`invalid request body: overrideReason: ${OVERRIDE_REASON_REQUIRED}`);
    const short = await post(`/api/v1/plans/${NS}/frozen-1/approve`, bob, {
      uid,
      overrideFreeze: true,
      overrideReason: 'hotfix',
    });
    expect(short.status).toBe(400);
    expect(await errorOf(short)).toBe(`invalid request body: overrideReason: ${OVERRIDE_REASON_TOO_SHORT}`);
    const cli = await runKpromo([
      ...['--kubeconfig', kubeconfig, '--context', 'dev', '-n', NS],
      ...['plan', 'approve', 'frozen-1', '--uid', uid, '--override-freeze'],
    ]);
    expect(cli).toMatchObject({
      code: EXIT.USAGE,
      err: `invalid arguments: overrideReason: ${OVERRIDE_REASON_REQUIRED}`,
    });
    const mcp = await httpClient(ctl.mcp!.url, bob.token);
    try {
      const r = await call(mcp, 'promote', { namespace: NS, plan: 'frozen-1', uid, overrideFreeze: true });
      expect(r.isError).toBe(true);
      expect(text(r)).toContain(`PromotionPlan ${NS}/frozen-1: overrideReason ${OVERRIDE_REASON_REQUIRED}`);
    } finally {
      await mcp.close();
    }
    // kubectl writes are judged by the CRD itself (its CEL rules).
    const direct = await rejection(
      as(bob).jsonPatch(planPath('frozen-1'), [
        { op: 'add', path: '/spec/approvals/-', value: { user: bob.username, planUID: uid, overrideFreeze: true } },
      ]),
    );
    expect(direct.status).toBe(422);
    expect(direct.message).toContain(`overrideReason ${OVERRIDE_REASON_REQUIRED}`);
    expect((await getPlan(dev, NS, 'frozen-1')).spec.approvals?.map((a) => a.user)).toEqual([alice.username]);

    // With its reason: recorded trimmed with the approver the API authenticated (bob's token).
    const why = 'INC-42: checkout 5xx, gamma carries the fix';
    const ov = await post(`/api/v1/plans/${NS}/frozen-1/approve`, bob, {
      uid,
      overrideFreeze: true,
      overrideReason: `  ${why} `,
      comment: 'hotfix',
    });
    expect(ov.status, await ov.clone().text()).toBe(200);
    const p = await waitPlan(dev, NS, 'frozen-1', done);
    expect(p.status?.phase).toBe('Complete');
    expect(p.status?.gate?.frozen?.overriddenBy).toBe(bob.username);
    expect(p.spec.approvals?.[1]).toEqual({
      user: bob.username,
      groups: ['release-managers'],
      overrideFreeze: true,
      overrideReason: why,
      comment: 'hotfix',
      planUID: p.metadata.uid,
    });
    // The reason is part of the approval: nobody rewrites it afterwards, not even its author.
    const rewritten = await rejection(
      as(bob).jsonPatch(planPath('frozen-1'), [
        { op: 'replace', path: '/spec/approvals/1/overrideReason', value: 'a better story told afterwards' },
      ]),
    );
    expect(rewritten.message).toContain('approvals can only be appended');
    // The controller's Approved Event says who overrode and why; the history keeps it after the plan.
    const approvedEvent = await waitFor('Approved event on frozen-1', async () => {
      const l = await dev.get<{ items: Array<{ reason: string; message: string }> }>(
        `/api/v1/namespaces/${NS}/events?fieldSelector=involvedObject.name=frozen-1`,
      );
      return l.items.find((e) => e.reason === 'Approved');
    });
    expect(approvedEvent.message).toContain(`overriding freeze windows and line stops: ${bob.username}: ${why}`);
    const entry = await waitFor(
      'history entry of frozen-1',
      async () => {
        const l = await dev.get<{ items: Array<{ data?: Record<string, string> }> }>(
          `/api/v1/namespaces/${NS}/configmaps?labelSelector=${HISTORY_LABEL}%3Dtrue`,
        );
        return l.items
          .flatMap((cm) => Object.values(cm.data ?? {}).map((v) => JSON.parse(v) as HistoryEntry))
          .find((e) => e.plan === 'frozen-1');
      },
      60_000,
    );
    expect(entry).toMatchObject({
      application: 'gamma',
      approvedBy: [alice.username, bob.username],
      overriddenBy: bob.username,
      overrideReason: why,
    });
  });

  it('soak time: a candidate waits until it has run Healthy in the source long enough (eligible at …)', async () => {
    // The controller has recorded since when delta runs Healthy in dev.
    await waitFor(
      'delta healthySince',
      async () =>
        ctl.controller.cache.getApplication(NS, 'delta')?.status?.versions?.find((v) => v.environment === 'dev')
          ?.healthySince,
    );
    await flow('soak', 'delta', { requiredSoakTime: '2h' });
    await createPlan(alice, 'soak', 'delta', 'soak-1');
    const soakApprove = await post(`/api/v1/plans/${NS}/soak-1/approve`, alice, {
      uid: await uidOf(dev, NS, 'soak-1'),
    });
    expect(soakApprove.status, await soakApprove.clone().text()).toBe(200);
    const soaking = await waitPlan(dev, NS, 'soak-1', (p) => ready(p)?.reason === 'Soaking');
    const app = ctl.controller.cache.getApplication(NS, 'delta');
    const since = app?.status?.versions?.find((v) => v.environment === 'dev')?.healthySince;
    expect(since).toBeDefined();
    expect(soaking.status?.gate?.eligibleAt).toBe(
      new Date(Date.parse(since!) + 2 * 3_600_000).toISOString().replace(/\.000Z$/, 'Z'),
    );
    expect(ready(soaking)?.message).toMatch(/candidates must run Healthy in dev for 2h first: delta soaking until/);
    // Shortening the soak time re-checks the waiting plan at once.
    await flow('soak', 'delta', { requiredSoakTime: '1s' });
    const p = await waitPlan(dev, NS, 'soak-1', done);
    expect(p.status?.phase).toBe('Complete');
  });

  it('auto: the controller creates and runs a plan for new candidates, not while paused', async () => {
    await flow('auto', 'eps', { approval: 'auto', autoPromotion: { paused: true, debounce: '1s' } });
    const autoPlans = () =>
      ctl.controller.cache
        .plans(NS)
        .filter((p) => p.metadata.labels?.['promotions.kpromo.dev/auto'] === 'true' && p.spec.flow === 'auto');
    await new Promise((r) => setTimeout(r, 4_000));
    expect(autoPlans()).toEqual([]);
    await flow('auto', 'eps', { approval: 'auto', autoPromotion: { debounce: '1s' } });
    const created = await waitFor('automatic plan', async () => autoPlans()[0], 60_000);
    expect(created.spec.candidates.map((c) => [c.application, c.from.digest])).toEqual([['eps', digests.eps]]);
    expect(created.spec.approvals).toBeUndefined();
    const p = await waitPlan(dev, NS, created.metadata.name, done);
    expect(p.status?.phase).toBe('Complete');
    expect(p.status?.gate).toMatchObject({ approved: true, required: 0 });
    expect(p.status?.conditions?.find((c) => c.type === 'Approved')?.message).toBe(
      'approved by policy (automatic stage)',
    );
    // One plan: the candidates are gone once promoted.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(autoPlans()).toHaveLength(1);
    // Nobody else may create an automatic (approval-free) plan; theirs need approval.
    const forged = await rejection(
      as(alice).create(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans`, {
        apiVersion: 'promotions.kpromo.dev/v1alpha1',
        kind: 'PromotionPlan',
        metadata: { name: 'forged-auto', namespace: NS, labels: { 'promotions.kpromo.dev/auto': 'true' } },
        spec: { flow: 'auto', from: 'dev', to: 'stable', candidates: [] },
      }),
    );
    expect(forged.message).toContain('only the controller labels plans promotions.kpromo.dev/auto');
    await as(alice).create(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans`, {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'PromotionPlan',
      metadata: { name: 'manual-into-auto', namespace: NS },
      spec: {
        flow: 'auto',
        from: 'dev',
        to: 'stable',
        candidates: [{ application: 'eps', from: { tag: 'v2.0.0', digest: digests.eps } }],
      },
    });
    const manual = await waitPlan(dev, NS, 'manual-into-auto', (x) => ready(x)?.reason === 'AwaitingApproval');
    expect(manual.status?.gate).toMatchObject({ approved: false, required: 1 });
  });

  it('cooldown: a burst of versions in dev gives one automatic plan once dev was quiet, taking the newest', async () => {
    const autoPlans = () =>
      ctl.controller.cache
        .plans(NS)
        .filter((p) => p.metadata.labels?.['promotions.kpromo.dev/auto'] === 'true' && p.spec.flow === 'cooldown');
    // Longer than the 15 s in which a flow's status follows workload churn, so a reconcile falls inside
    // the wait after the burst and the doors show it.
    await flow('cooldown', 'zeta', { approval: 'auto', autoPromotion: { cooldown: '20s', debounce: '1s' } });
    // dev has been quiet since the release was seeded: its v2.0.0 goes first.
    const first = await waitFor('automatic plan of the seeded version', async () => autoPlans()[0], 60_000);
    expect(first.spec.candidates.map((c) => c.from.digest)).toEqual([digests.zeta]);
    expect((await waitPlan(dev, NS, first.metadata.name, done)).status?.phase).toBe('Complete');
    // What the doors show meanwhile (GET /environments reads the flow status), collected as it comes.
    const seen: StageCooldown[] = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const r = await callApi(ctl.port, `/api/v1/environments?namespace=${NS}`);
        const envs = (await r.json()) as {
          items: Array<{ name: string; cooldowns?: Array<StageCooldown & { flow: string }> }>;
        };
        seen.push(
          ...(envs.items.find((e) => e.name === 'stable')?.cooldowns ?? []).filter((c) => c.flow === 'cooldown'),
        );
        await new Promise((res) => setTimeout(res, 250));
      }
    })();
    // The burst: five versions, each running Healthy in dev about 6 s (longer than the debounce, far
    // shorter than the cooldown), over two flow reconcile windows (15 s each): without the cooldown,
    // a version of the middle of the burst is promoted.
    const tags = ['v2.1.0', 'v2.2.0', 'v2.3.0', 'v2.4.0', 'v2.5.0'];
    const burst: string[] = [];
    try {
      for (const tag of tags)
        burst.push(
          (
            await pushTestImage({
              host: world.source,
              repository: `${world.repo}/zeta`,
              tag,
              seed: `${NS}-burst-${tag}`,
            })
          ).digest,
        );
      for (const [i, tag] of tags.entries()) {
        await applyDeployment(dev, world.appsNs, 'zeta', `${world.source}/${world.repo}/zeta:${tag}@${burst[i]}`);
        await waitReady(dev, world.appsNs, 'zeta');
        await new Promise((res) => setTimeout(res, 5_000));
      }
      await expect.poll(() => autoPlans().length, { timeout: 90_000, interval: 500 }).toBe(2);
    } finally {
      watching = false;
      await watch;
    }
    const plans = autoPlans().filter((p) => p.metadata.name !== first.metadata.name);
    // One plan for the whole burst, with its newest version.
    expect(plans.map((p) => p.spec.candidates.map((c) => [c.application, c.from.tag, c.from.digest]))).toEqual([
      [['zeta', 'v2.5.0', burst[4]]],
    ]);
    expect((await waitPlan(dev, NS, plans[0]!.metadata.name, done)).status?.phase).toBe('Complete');
    expect(autoPlans()).toHaveLength(2);
    // While it waited, the stage said so; last with the version the plan then took.
    expect(seen.at(-1)?.takes).toEqual([{ application: 'zeta', tag: 'v2.5.0', digest: burst[4] }]);
    for (const c of seen)
      expect(c.message).toMatch(
        /^cooldown: waiting until \d\d:\d\d:\d\d UTC for dev to be quiet for 20s; will take zeta v2\.[1-5]\.0$/,
      );
    await expect.poll(() => ctl.controller.cache.getFlow(NS, 'cooldown')?.status?.cooldowns).toBeUndefined();
  });
});
