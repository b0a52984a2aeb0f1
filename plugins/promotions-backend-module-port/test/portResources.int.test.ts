// Port self-service actions on a discovered CRD, end to end on the real control plane: the action
// definitions the exporter makes (crdToPortActions), a signed Port webhook delivery to the real
// promotions backend plugin, the real controller's POST /api/v1/resources (kind allow-list,
// SubjectAccessReview, impersonated write) and the real kube-apiserver.
//
// Port itself cannot run here, so this test plays Port's part: it renders the action's webhook body
// template ({{ jq }} leaves, evaluated with jq over the run context as Port does), signs it with the
// client secret and receives the run reports in the spec-validating Port stand-in.
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestBackend } from '@backstage/backend-test-utils';
import { CONTROLLER_API } from '@kpromo/contract';
import { responseChecker } from '@kpromo/contract/testing';
import { loadConfig, type Running, startController } from '@kpromo/controller';
import { type Crd, crdToPortActions, type PortAction, runJq } from '@kpromo/exporter';
import { promotionsPlugin } from '@kpromo/plugin-promotions-backend';
import { waitFor } from '@kpromo/test-harness';
import { startBackstageTestBackend } from '@kpromo/test-harness/backstage';
import { deleteNs, ensureNs, restFor } from '@kpromo/test-harness/controller';
import { PortStandIn } from '@kpromo/test-harness/port';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { promotionsModulePort } from '../src/index.js';

const RUN = Math.random().toString(36).slice(2, 7);
const NS = `bsr-${RUN}`;
const GROUP = `bsr-${RUN}.kpromo.test`;
const TOKEN = `bsr-backend-${RUN}-0123456789abcdef`;
const BACKEND_USER = `bsr-backend-${RUN}`;
const PORT_ID = `bsr-client-${RUN}`;
const PORT_SECRET = `bsr-secret-${RUN}`;
/** May create, patch and delete gizmos in NS. */
const ALICE = 'alice@example.com';
/** May only read gizmos. */
const MALLORY = 'mallory@example.com';
const WEBHOOK_PATH = '/api/promotions/port/webhook';
const rbac = '/apis/rbac.authorization.k8s.io/v1';

const kubeconfig = inject('kubeconfig');
const dev = restFor(kubeconfig, 'dev');
const standIn = new PortStandIn(PORT_ID, PORT_SECRET);
const check = responseChecker(CONTROLLER_API);
let ctl: Running;
let backend: TestBackend;
let base = '';
let actions: Record<string, PortAction>;

const gizmoCrd = (plural: string, kind: string): Crd & { apiVersion: string; kind: string } => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${plural}.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { kind, plural, singular: kind.toLowerCase() },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: { size: { type: 'integer' }, color: { type: 'string' } },
                required: ['size'],
              },
            },
          },
        },
      },
    ],
  },
});

/** Port's template rendering: every `{{ expr }}` string leaf becomes expr's value over the run context. */
async function render(tree: unknown, ctx: object): Promise<unknown> {
  if (typeof tree === 'string') {
    const m = /^\{\{(.*)\}\}$/s.exec(tree.trim());
    return m ? runJq(ctx, m[1]) : tree;
  }
  if (Array.isArray(tree)) return Promise.all(tree.map((t) => render(t, ctx)));
  if (tree && typeof tree === 'object')
    return Object.fromEntries(await Promise.all(Object.entries(tree).map(async ([k, v]) => [k, await render(v, ctx)])));
  return tree;
}

/** Plays Port running `action` for `email`: renders its webhook body, signs it, delivers it, waits for the run's end. */
async function runAction(
  action: string,
  email: string,
  ctx: { inputs?: object; entity?: object },
): Promise<{ status: string; summary: string }> {
  const runId = `r_${action}_${Math.random().toString(36).slice(2, 9)}`;
  const a = actions[action];
  const body = await render((a.invocationMethod as { body: object }).body, {
    run: { id: runId },
    action: { identifier: a.identifier },
    trigger: { by: { user: { email } } },
    inputs: ctx.inputs ?? {},
    entity: ctx.entity ?? {},
  });
  const raw = JSON.stringify(body);
  const ts = String(Date.now());
  const res = await fetch(`${base}${WEBHOOK_PATH}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-port-timestamp': ts,
      'x-port-signature': `v1,${createHmac('sha256', PORT_SECRET).update(`${ts}.${raw}`).digest('base64')}`,
    },
    body: raw,
  });
  expect(res.status, await res.clone().text()).toBe(202);
  const done = await waitFor(
    `Port run ${runId} reported`,
    async () => standIn.runs.get(runId)?.patches.find((p) => p.status),
    30_000,
  );
  return done as { status: string; summary: string };
}

const gizmoPath = (name = '') => `/apis/${GROUP}/v1/namespaces/${NS}/gizmos${name ? `/${name}` : ''}`;

beforeAll(async () => {
  const tokensFile = join(tmpdir(), `bsr-tokens-${RUN}.yaml`);
  writeFileSync(tokensFile, `tokens:\n  - token: ${TOKEN}\n    username: ${BACKEND_USER}\n`);
  await ensureNs(dev, NS);
  for (const [plural, kind] of [
    ['gizmos', 'Gizmo'],
    ['gadgets', 'Gadget'],
  ])
    await dev.create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', gizmoCrd(plural, kind));
  await waitFor(
    'CRDs established',
    async () => {
      for (const p of ['gizmos', 'gadgets']) {
        const c = await dev.get<{ status?: { conditions?: Array<{ type: string; status: string }> } }>(
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${p}.${GROUP}`,
        );
        if (!c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True')) return false;
      }
      return true;
    },
    30_000,
  );
  // The backend's token user may only impersonate the Port identities; their RBAC then decides.
  const roleRef = (kind: string, name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind, name });
  const user = (name: string) => ({ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name });
  await dev.create(`${rbac}/clusterroles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: BACKEND_USER },
    rules: [
      {
        apiGroups: [''],
        resources: ['users'],
        verbs: ['impersonate'],
        resourceNames: [`port:${ALICE}`, `port:${MALLORY}`],
      },
    ],
  });
  await dev.create(`${rbac}/clusterrolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: BACKEND_USER },
    roleRef: roleRef('ClusterRole', BACKEND_USER),
    subjects: [user(BACKEND_USER)],
  });
  const role = async (name: string, verbs: string[], who: string) => {
    await dev.create(`${rbac}/namespaces/${NS}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace: NS },
      rules: [{ apiGroups: [GROUP], resources: ['gizmos', 'gadgets'], verbs }],
    });
    await dev.create(`${rbac}/namespaces/${NS}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace: NS },
      roleRef: roleRef('Role', name),
      subjects: [user(who)],
    });
  };
  await role('gizmo-editor', ['get', 'list', 'create', 'patch', 'delete'], `port:${ALICE}`);
  await role('gizmo-reader', ['get', 'list'], `port:${MALLORY}`);

  ctl = await startController(
    loadConfig({
      env: {},
      flags: {
        kubeconfig,
        context: 'dev',
        namespaces: [NS],
        defaultNamespace: NS,
        logLevel: 'warn',
        server: { host: '127.0.0.1', port: 0 },
        leaderElection: { enabled: false },
        auth: { staticTokensFile: tokensFile, tokenReview: false },
        // Gizmos only: gadgets are not open to resource actions, whatever RBAC says.
        resourceKinds: [`gizmos.${GROUP}`],
      },
    }),
  );
  await standIn.start();
  ({ backend, base } = await startBackstageTestBackend({
    features: [promotionsPlugin, promotionsModulePort],
    controller: { baseUrl: `http://127.0.0.1:${ctl.port}`, token: TOKEN, defaultNamespace: NS },
    promotions: {
      port: {
        baseUrl: standIn.url,
        clientId: PORT_ID,
        clientSecret: PORT_SECRET,
        namespaces: [NS],
        resourceActions: [
          { blueprint: 'gizmo', apiVersion: `${GROUP}/v1`, plural: 'gizmos' },
          { blueprint: 'gadget', apiVersion: `${GROUP}/v1`, plural: 'gadgets' },
        ],
      },
    },
  }));
  // The definitions the exporter creates in Port for these CRDs (Port exporter config: blueprint = singular).
  const url = `${base}${WEBHOOK_PATH}`;
  actions = Object.fromEntries(
    [gizmoCrd('gizmos', 'Gizmo'), gizmoCrd('gadgets', 'Gadget')]
      .flatMap((c) => crdToPortActions(c, { webhookUrl: url, dialect: 'port-k8s-exporter' }))
      .map((a) => [a.identifier, a]),
  );
}, 120_000);

afterAll(async () => {
  await backend?.stop().catch(() => undefined);
  await standIn.stop().catch(() => undefined);
  await ctl?.stop().catch(() => undefined);
  for (const p of ['gizmos', 'gadgets'])
    await dev.delete(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${p}.${GROUP}`).catch(() => undefined);
  await dev.delete(`${rbac}/clusterrolebindings/${BACKEND_USER}`).catch(() => undefined);
  await dev.delete(`${rbac}/clusterroles/${BACKEND_USER}`).catch(() => undefined);
  await deleteNs(dev, NS);
});

describe('Port resource actions through the promotions backend and the controller', () => {
  it('creates, updates (merging spec) and deletes a custom resource as port:<email>, reporting each run', async () => {
    const created = await runAction('create_gizmo', ALICE, {
      inputs: { name: 'g1', namespace: NS, size: 3, color: 'red' },
    });
    expect(created).toMatchObject({ status: 'SUCCESS', summary: `Gizmo ${NS}/g1 created by port:${ALICE}` });
    const g1 = await dev.get<{
      spec: object;
      metadata: { labels?: object; managedFields?: Array<{ manager: string }> };
    }>(gizmoPath('g1'));
    expect(g1.spec).toEqual({ size: 3, color: 'red' });

    // Port fills update inputs from the entity (exporter mapping: identifier .metadata.name, "*": .spec).
    const entity = { identifier: 'g1', properties: { namespace: NS, size: 3, color: 'red' } };
    const updated = await runAction('update_gizmo', ALICE, { entity, inputs: { size: 5 } });
    expect(updated).toMatchObject({ status: 'SUCCESS', summary: `Gizmo ${NS}/g1 updated by port:${ALICE}` });
    expect((await dev.get<{ spec: object }>(gizmoPath('g1'))).spec).toEqual({ size: 5, color: 'red' });

    const deleted = await runAction('delete_gizmo', ALICE, { entity });
    expect(deleted).toMatchObject({ status: 'SUCCESS', summary: `Gizmo ${NS}/g1 deleted by port:${ALICE}` });
    await waitFor('g1 gone', async () => !(await dev.getOrUndefined(gizmoPath('g1'))), 10_000);
    expect(standIn.violations).toEqual([]);
  });

  it("refuses what the Port user's RBAC does not allow, and kinds the controller does not open", async () => {
    const denied = await runAction('create_gizmo', MALLORY, { inputs: { name: 'm1', namespace: NS, size: 1 } });
    expect(denied.status).toBe('FAILURE');
    // The controller names who asked, and through which proxy.
    expect(denied.summary).toContain(
      `forbidden: port:${MALLORY} (via ${BACKEND_USER}) may not create gizmos in namespace ${NS} (Kubernetes RBAC)`,
    );
    expect(await dev.getOrUndefined(gizmoPath('m1'))).toBeUndefined();

    // Alice's RBAC allows gadgets, the backend maps the action, but the controller does not open the kind.
    const closed = await runAction('create_gadget', ALICE, { inputs: { name: 'x1', namespace: NS, size: 1 } });
    expect(closed.status).toBe('FAILURE');
    expect(closed.summary).toMatch(`gadgets.${GROUP} is not open to resource actions`);
    expect(await dev.getOrUndefined(`/apis/${GROUP}/v1/namespaces/${NS}/gadgets/x1`)).toBeUndefined();
    expect(standIn.violations).toEqual([]);
  });

  it("the controller route answers as its contract says, and never with the backend's own rights", async () => {
    const call = async (headers: Record<string, string>, body: object) => {
      const r = await fetch(`http://127.0.0.1:${ctl.port}/api/v1/resources`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, ...headers },
        body: JSON.stringify(body),
      });
      const json = await r.json();
      expect(check('POST', '/resources', r.status, json), `${r.status} ${JSON.stringify(json)}`).toEqual([]);
      return { status: r.status, json };
    };
    const body = { operation: 'create', group: GROUP, version: 'v1', plural: 'gizmos', namespace: NS, name: 'c1' };
    // The backend's token user itself holds no rights on gizmos.
    const own = await call({}, { ...body, spec: { size: 1 } });
    expect(own.status).toBe(403);
    expect(own.json.error).toMatch(`${BACKEND_USER} may not create gizmos`);
    const asAlice = await call({ 'x-kpromo-user': `port:${ALICE}` }, { ...body, spec: { size: 1 } });
    expect(asAlice).toMatchObject({ status: 200, json: { kind: 'Gizmo', name: 'c1', apiVersion: `${GROUP}/v1` } });
    // The apiserver validates the spec (schema) as for any write: a string size is refused with its reason.
    const invalid = await call({ 'x-kpromo-user': `port:${ALICE}` }, { ...body, name: 'c2', spec: { size: 'big' } });
    expect(invalid.status).toBe(400);
    expect(invalid.json.error).toMatch(/spec.size/);
    const again = await call({ 'x-kpromo-user': `port:${ALICE}` }, { ...body, spec: { size: 1 } });
    expect(again.status).toBe(409);
    const core = await call({ 'x-kpromo-user': `port:${ALICE}` }, { ...body, group: 'apps', plural: 'deployments' });
    expect(core.status).toBe(400);
  });
});
