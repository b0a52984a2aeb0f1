// The controller with exactly the rights examples/deploy/controller.yaml (and the chart, which
// test/helm.int.test.ts holds equal to it) gives its ServiceAccount, on the real control plane with
// the admission policies installed: a release runs end to end through its API, it records the
// people its doors authenticated, and its own credentials open no escalation path (no
// impersonation, so no system:masters by proxy). The workload cluster (stable) is reached with the
// harness admin kubeconfig, as a kubeconfig Secret would reach it: this test is about the control
// cluster identity.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PromotionPlan } from '@kpromo/api';
import { kubeConfigFor, loadYaml, REPO_ROOT, waitFor } from '@kpromo/test-harness';
import {
  callApi,
  deploymentImage,
  grantRole,
  rejection,
  trustControllerUsername,
  twoStageWorld,
  waitPlan,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { KubeRest } from '../src/kube/rest.js';
import type { Running } from '../src/runtime.js';

const kubeconfig = inject('kubeconfig');
const world = twoStageWorld('lp', { kubeconfig, registries: inject('registries'), apps: ['web', 'api'] });
const { ns: NS, appsNs: APPS_NS, run: RUN, dev, stable } = world;
const SA = 'kpromo-controller';
const GROUP = 'promotions.kpromo.dev';
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const CLUSTER_ROLES = [`kpromo-lp-${RUN}-auth`, `kpromo-lp-${RUN}-crd-watch`];

const rita = world.user('rita', ['release-managers']);
const mallory = world.user('mallory', ['shop-developers']);

let ctl: Running;
let untrust: (() => Promise<void>) | undefined;
let saToken = '';
let devDigest: Record<string, string> = {};

const example = loadYaml(join(REPO_ROOT, 'examples/deploy/controller.yaml'));
const rulesOf = (kind: string, name: string) => {
  const d = example.find((x) => x.kind === kind && x.metadata?.name === name) as { rules?: object[] } | undefined;
  if (!d?.rules) throw new Error(`examples/deploy/controller.yaml has no ${kind} ${name}`);
  return d.rules;
};
const saSubject = [{ kind: 'ServiceAccount', name: SA, namespace: NS }];

/** The harness kubeconfig with the dev (control) context's user replaced by the ServiceAccount token. */
function kubeconfigAsServiceAccount(token: string): string {
  const kc = parse(readFileSync(kubeconfig, 'utf8')) as {
    contexts: Array<{ name: string; context: { user: string } }>;
    users: Array<{ name: string; user: object }>;
  };
  const devUser = kc.contexts.find((c) => c.name === 'dev')?.context;
  if (!devUser) throw new Error('harness kubeconfig has no dev context');
  kc.users.push({ name: `sa-${RUN}`, user: { token } });
  devUser.user = `sa-${RUN}`;
  const file = join(mkdtempSync(join(tmpdir(), 'kpromo-lp-')), 'kubeconfig');
  writeFileSync(file, stringify(kc));
  return file;
}

beforeAll(async () => {
  await world.seed();
  ({ devDigest } = world);
  // The example manifests' grants, to a ServiceAccount in the test namespace.
  await dev.create(`/api/v1/namespaces/${NS}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: SA, namespace: NS },
  });
  const bind = async (kind: 'Role' | 'ClusterRole', name: string, rules: object[], ns?: string) => {
    const at = ns ? `${RBAC}/namespaces/${ns}` : RBAC;
    await dev.create(`${at}/${kind === 'Role' ? 'roles' : 'clusterroles'}`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind,
      metadata: { name, ...(ns ? { namespace: ns } : {}) },
      rules,
    });
    await dev.create(`${at}/${kind === 'Role' ? 'rolebindings' : 'clusterrolebindings'}`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: kind === 'Role' ? 'RoleBinding' : 'ClusterRoleBinding',
      metadata: { name, ...(ns ? { namespace: ns } : {}) },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name },
      subjects: saSubject,
    });
  };
  await bind('Role', 'kpromo-controller', rulesOf('Role', 'kpromo-controller'), NS);
  await bind('Role', 'kpromo-workloads', rulesOf('ClusterRole', 'kpromo-workloads'), APPS_NS);
  await bind('ClusterRole', CLUSTER_ROLES[0], rulesOf('ClusterRole', 'kpromo-mcp-auth'));
  await bind('ClusterRole', CLUSTER_ROLES[1], rulesOf('ClusterRole', 'kpromo-crd-watch'));
  const tr = await dev.create<{ status: { token: string } }>(`/api/v1/namespaces/${NS}/serviceaccounts/${SA}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  saToken = tr.status.token;
  // People: rita may create and approve plans (kpromo-release-manager); mallory may create and
  // patch plans and may not approve.
  const read = { apiGroups: [GROUP], resources: ['*'], verbs: ['get', 'list', 'watch'] };
  await grantRole(
    dev,
    NS,
    'rm',
    [read, { apiGroups: [GROUP], resources: ['promotionplans'], verbs: ['create', 'patch', 'approve', 'rollback'] }],
    [rita],
  );
  await grantRole(
    dev,
    NS,
    'dev',
    [read, { apiGroups: [GROUP], resources: ['promotionplans'], verbs: ['create', 'patch'] }],
    [mallory],
  );
  // Admission recognises the controller by its username: this one is the ServiceAccount's.
  untrust = await trustControllerUsername(
    dev,
    `lp-${RUN}`,
    `system:serviceaccount:${NS}:${SA}`,
    new KubeRest(kubeConfigFor('dev', kubeconfigAsServiceAccount(saToken)), 'dev'),
    `/apis/${GROUP}/v1alpha1/namespaces/${NS}/applications/web/status`,
  );
  ctl = await world.start(
    {
      kubeconfig: kubeconfigAsServiceAccount(saToken),
      // Its Lease in its own namespace, as the example Role grants (get/update on kpromo-controller).
      leaderElection: { enabled: true, namespace: NS, name: 'kpromo-controller' },
    },
    [rita, mallory],
  );
}, 240_000);

afterAll(async () => {
  await world.stop();
  await untrust?.();
  for (const name of CLUSTER_ROLES) {
    await dev.delete(`${RBAC}/clusterrolebindings/${name}`).catch(() => undefined);
    await dev.delete(`${RBAC}/clusterroles/${name}`).catch(() => undefined);
  }
});

describe('the controller with only its ServiceAccount’s rights', () => {
  it('its own token cannot act as system:masters, as another user or as a service account (no impersonate grant)', async () => {
    const asSa = new KubeRest(kubeConfigFor('dev', kubeconfigAsServiceAccount(saToken)), 'dev');
    for (const target of [
      { username: 'admin', groups: ['system:masters'] },
      { username: `system:serviceaccount:kube-system:default`, groups: [] },
      { username: rita.username, groups: rita.groups ?? [] },
    ]) {
      const refused = await rejection(asSa.as(target).get(`/api/v1/namespaces/kube-system/secrets`));
      expect(refused.status, JSON.stringify(target)).toBe(403);
      expect(refused.message).toMatch(/cannot impersonate/);
    }
    // Nor write RBAC itself.
    const crb = await rejection(
      asSa.create(`${RBAC}/clusterrolebindings`, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: `lp-${RUN}-escalate` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: saSubject,
      }),
    );
    expect(crb.status).toBe(403);
  });

  it('mallory (create and patch, no approve) gets no approval through the controller, nor by naming rita herself', async () => {
    const created = await callApi(ctl.port, '/api/v1/plans', {
      method: 'POST',
      token: mallory.token,
      body: { namespace: NS, from: 'dev', to: 'stable', name: 'sneaky', applications: ['api'] },
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const plan = ((await created.json()) as { plan: PromotionPlan }).plan;
    expect(plan.spec.requestedBy).toBe(mallory.username);
    const r = await callApi(ctl.port, `/api/v1/plans/${NS}/sneaky/approve`, {
      method: 'POST',
      token: mallory.token,
      body: { uid: plan.metadata.uid },
    });
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error: string }).error).toMatch(/may not approve/);
    // Written by her directly (kubectl --as mallory), an approval in rita's name: the exemption for
    // recorded actors is the controller's alone.
    const forged = await rejection(
      dev
        .as({ username: mallory.username, groups: mallory.groups ?? [] })
        .create(`/apis/${GROUP}/v1alpha1/namespaces/${NS}/promotionplans`, {
          apiVersion: `${GROUP}/v1alpha1`,
          kind: 'PromotionPlan',
          metadata: { name: 'forged', namespace: NS },
          spec: {
            flow: 'main',
            from: 'dev',
            to: 'stable',
            candidates: [],
            requestedBy: rita.username,
            approvals: [{ user: rita.username }],
          },
        }),
    );
    expect(forged.status).toBe(403);
    expect(forged.message).toMatch(/must name the requesting user|requestedBy must be the creating user/);
    expect(await deploymentImage(stable, APPS_NS, 'api')).not.toContain(devDigest.api);
  });

  it('releases run through its API: rita approves mallory’s plan and creates and approves her own; recorded as them, delivered', async () => {
    const sneaky = (await (
      await callApi(ctl.port, `/api/v1/plans/${NS}/sneaky`, { token: rita.token })
    ).json()) as PromotionPlan;
    const approved = await callApi(ctl.port, `/api/v1/plans/${NS}/sneaky/approve`, {
      method: 'POST',
      token: rita.token,
      body: { uid: sneaky.metadata.uid },
    });
    expect(approved.status, await approved.clone().text()).toBe(200);
    expect(((await approved.json()) as PromotionPlan).spec.approvals).toEqual([
      { user: rita.username, groups: ['release-managers'], planUID: sneaky.metadata.uid },
    ]);
    const created = await callApi(ctl.port, '/api/v1/plans', {
      method: 'POST',
      token: rita.token,
      body: await withShown(
        ctl.port,
        { namespace: NS, from: 'dev', to: 'stable', name: 'release', applications: ['web'], approve: true },
        rita.token,
      ),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const plan = ((await created.json()) as { plan: PromotionPlan }).plan;
    expect(plan.spec.requestedBy).toBe(rita.username);
    expect(plan.spec.approvals).toEqual([{ user: rita.username, groups: ['release-managers'] }]);
    for (const [name, app] of [
      ['sneaky', 'api'],
      ['release', 'web'],
    ]) {
      const done = await waitPlan(dev, NS, name, (p) =>
        ['Complete', 'Incomplete', 'Failed'].includes(p.status?.phase ?? ''),
      );
      expect(done.status?.phase, JSON.stringify(done.status?.conditions)).toBe('Complete');
      expect(await deploymentImage(stable, APPS_NS, app)).toContain(devDigest[app]);
    }
  });

  it('the release history it wrote cannot be rewritten by someone who may write ConfigMaps (kpromo-history-writers)', async () => {
    const cms = await waitFor('history ConfigMap written by the controller', async () => {
      const l = await dev.get<{ items: Array<{ metadata: { name: string } }> }>(
        `/api/v1/namespaces/${NS}/configmaps?labelSelector=${encodeURIComponent('promotions.kpromo.dev/history')}`,
      );
      return l.items.length > 0 && l.items;
    });
    await grantRole(
      dev,
      NS,
      'cm-editor',
      [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] }],
      [mallory],
    );
    const asMallory = dev.as({ username: mallory.username, groups: mallory.groups ?? [] });
    const cmPath = `/api/v1/namespaces/${NS}/configmaps`;
    const name = cms[0].metadata.name;
    // Thunks: each attempt starts only when awaited (an eager rejection would go unhandled).
    for (const attempt of [
      () => asMallory.mergePatch(`${cmPath}/${name}`, { data: { forged: 'true' } }),
      () =>
        asMallory.mergePatch(`${cmPath}/${name}`, { metadata: { labels: { 'promotions.kpromo.dev/history': null } } }),
      () => asMallory.delete(`${cmPath}/${name}`),
      () =>
        asMallory.create(cmPath, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'history-forged', namespace: NS, labels: { 'promotions.kpromo.dev/history': 'stable' } },
          data: {},
        }),
    ]) {
      const refused = await rejection(attempt());
      expect(refused.status).toBe(403);
      expect(refused.message).toMatch(/only the kpromo controller writes release history/);
    }
    // Her other ConfigMaps are hers to write.
    await asMallory.create(cmPath, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'unrelated', namespace: NS },
      data: { a: 'b' },
    });
  });
});
