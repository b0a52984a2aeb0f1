import { createHmac } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBackendModule } from '@backstage/backend-plugin-api';
import { mockCredentials, type TestBackend } from '@backstage/backend-test-utils';
import catalogBackend from '@backstage/plugin-catalog-backend';
import { catalogConditions, createCatalogConditionalDecision } from '@backstage/plugin-catalog-backend/alpha';
import catalogModuleTemplateKind from '@backstage/plugin-catalog-backend-module-scaffolder-entity-model';
import mcpActionsBackend from '@backstage/plugin-mcp-actions-backend';
import permissionBackend from '@backstage/plugin-permission-backend';
import { AuthorizeResult, isResourcePermission, type PolicyDecision } from '@backstage/plugin-permission-common';
import type { PermissionPolicy, PolicyQuery, PolicyQueryUser } from '@backstage/plugin-permission-node';
import { policyExtensionPoint } from '@backstage/plugin-permission-node/alpha';
import scaffolderBackend from '@backstage/plugin-scaffolder-backend';
import type { PromotionPlan } from '@kpromo/api';
import { BACKEND_API } from '@kpromo/contract';
import { responseChecker } from '@kpromo/contract/testing';
import { loadConfig, type Running, startController } from '@kpromo/controller';
import { promotionsModulePort } from '@kpromo/plugin-promotions-backend-module-port';
import type { ControllerApi, PlanDetails } from '@kpromo/plugin-promotions-common';
import { scaffolderModulePromotions } from '@kpromo/plugin-scaffolder-backend-module-promotions';
import { applyCrds, kubeConfigFor, waitFor } from '@kpromo/test-harness';
import { startBackstageTestBackend } from '@kpromo/test-harness/backstage';
import {
  applyCr,
  applyDeployment,
  approveAsAdmin,
  deleteNs,
  ensureNs,
  getDeployment,
  getPlan,
  pushTestImage,
  restFor,
  seedTwoStageRelease,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { PortStandIn } from '@kpromo/test-harness/port';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { ControllerClient, promotionsPlugin } from '../src/index.js';

// Test-side view of JSON answers: assertions walk into them freely.
// biome-ignore lint/suspicious/noExplicitAny: untyped JSON from HTTP answers
type Json = Record<string, any>;

const RUN = Math.random().toString(36).slice(2, 7);
const NS = `bsb-${RUN}`;
const APPS_NS = `bsb-apps-${RUN}`;
const REPO = `bsb${RUN}`;
const APPS = ['cart', 'search', 'billing', 'ledger'];
// The Backstage backend's own token for the controller (API and MCP proxy) and its Kubernetes user.
const TOKEN = `bsb-backend-${RUN}-0123456789abcdef`;
const BACKEND_USER = `backstage-backend-${RUN}`;
const PORT_ID = `bsb-client-${RUN}`;
const PORT_SECRET = `bsb-secret-${RUN}`;
/** Backstage: may read/create, approve only what she owns. Kubernetes: reads/creates through her group, approve + rollback on environments/stable. */
const ALICE = 'user:default/alice';
const TEAM_A = 'group:default/team-a';
/** Backstage: nothing. Kubernetes: nothing. */
const MALLORY = 'user:default/mallory';
/** Backstage: everything. Kubernetes: reads/creates, approve + rollback namespace-wide (on promotionplans). */
const ADMIN = 'user:default/admin';
/** Backstage: everything. Kubernetes: reads/creates but no approve/rollback verb. */
const BOB = 'user:default/bob';
/** Backstage: everything. Kubernetes: the backend may not impersonate her. */
const EVE = 'user:default/eve';
/** Port runs act as port:<trigger user's email>: alice's has the verbs on stable, mallory's only reads/creates. */
const PORT_ALICE = 'port:alice@example.com';
const PORT_MALLORY = 'port:mallory@example.com';
const SERVICE = 'service:external:test-service';
const IMPERSONATOR = `bsb-impersonator-${RUN}`;

const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
const devDigest: Record<string, string> = {};
const stableOld: Record<string, string> = {};
// The exporter's Port stand-in: spec-validated requests/responses, action runs and their logs kept in memory.
const standIn = new PortStandIn(PORT_ID, PORT_SECRET);
const runs = standIn.runs;

let ctl: Running;
let backend: TestBackend;
let base = '';
const decisions: Array<{ user?: string; permission: string; result: string }> = [];

/**
 * The test's permission policy: admin, bob and eve may do anything, mallory nothing, alice may read
 * and create and may approve/roll back only applications whose catalog entity she owns (conditional
 * decision evaluated by the real catalog backend). Kubernetes RBAC then decides again at the controller.
 */
class TestPolicy implements PermissionPolicy {
  async handle(request: PolicyQuery, user?: PolicyQueryUser): Promise<PolicyDecision> {
    const who = user?.info.userEntityRef;
    const name = request.permission.name;
    const d = ((): PolicyDecision => {
      if (!name.startsWith('promotion.')) return { result: AuthorizeResult.ALLOW }; // catalog etc.
      if (who === ADMIN || who === BOB || who === EVE) return { result: AuthorizeResult.ALLOW };
      if (who === ALICE) {
        if (isResourcePermission(request.permission, 'catalog-entity'))
          return createCatalogConditionalDecision(
            request.permission,
            catalogConditions.isEntityOwner({ claims: user?.info.ownershipEntityRefs ?? [] }),
          );
        return { result: AuthorizeResult.ALLOW };
      }
      return { result: AuthorizeResult.DENY };
    })();
    if (name.startsWith('promotion.')) decisions.push({ user: who, permission: name, result: d.result });
    return d;
  }
}

const testPolicyModule = createBackendModule({
  pluginId: 'permission',
  moduleId: 'kpromo-test-policy',
  register(env) {
    env.registerInit({
      deps: { policy: policyExtensionPoint },
      async init({ policy }) {
        policy.setPolicy(new TestPolicy());
      },
    });
  },
});

const auth = (user?: string): Record<string, string> =>
  user ? { authorization: mockCredentials.user.header(user) } : {};

async function api(path: string, o: { user?: string; method?: string; body?: unknown; service?: boolean } = {}) {
  const res = await fetch(`${base}/api/promotions${path}`, {
    method: o.method ?? 'GET',
    headers: {
      ...(o.service ? { authorization: mockCredentials.service.header() } : auth(o.user)),
      ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Json) : {} };
}

/** What a reviewer is shown before create-and-approve: per application, the dev digest GET /diff answers now. */
async function shownDigests(user: string, applications: string[]): Promise<Record<string, string>> {
  const d = await api(`/diff?from=dev&to=stable&applications=${applications.join(',')}`, { user });
  if (d.status !== 200) throw new Error(`GET /diff: ${d.status} ${JSON.stringify(d.json)}`);
  return Object.fromEntries(
    (d.json.candidates as Array<{ application: string; from: { digest: string } }>).map((c) => [
      c.application,
      c.from.digest,
    ]),
  );
}

const terminal = (p: PromotionPlan) =>
  ['Complete', 'Incomplete', 'Failed', 'RolledBack'].includes(p.status?.phase ?? '');

/** A scaffolder template expression, `${{ e }}`. */
const tpl = (e: string) => `$\{{ ${e} }}`;

/**
 * Templates for the scaffolder tasks: kpromo-plan creates a plan for one application, kpromo-promote
 * approves it and waits for it (release status without a namespace: promotions.controller.defaultNamespace).
 */
const templates = () => [
  {
    apiVersion: 'scaffolder.backstage.io/v1beta3',
    kind: 'Template',
    metadata: { name: 'kpromo-plan' },
    spec: {
      owner: ALICE,
      type: 'service',
      parameters: [{ properties: { app: { type: 'string' }, plan: { type: 'string' } } }],
      steps: [
        {
          id: 'create',
          name: 'Create the plan',
          action: 'kpromo:plan:create',
          input: {
            namespace: NS,
            from: 'dev',
            to: 'stable',
            applications: [tpl('parameters.app')],
            name: tpl('parameters.plan'),
          },
        },
      ],
      output: {
        namespace: tpl('steps.create.output.namespace'),
        plan: tpl('steps.create.output.plan'),
        uid: tpl('steps.create.output.uid'),
        applications: tpl('steps.create.output.applications'),
      },
    },
  },
  {
    apiVersion: 'scaffolder.backstage.io/v1beta3',
    kind: 'Template',
    metadata: { name: 'kpromo-promote' },
    spec: {
      owner: ALICE,
      type: 'service',
      // The plan shown to the user (name and uid) and their confirmation checkbox.
      parameters: [{ properties: { plan: { type: 'string' }, uid: { type: 'string' }, confirm: { type: 'boolean' } } }],
      steps: [
        {
          id: 'promote',
          name: 'Approve',
          action: 'kpromo:plan:promote',
          input: {
            namespace: NS,
            plan: tpl('parameters.plan'),
            uid: tpl('parameters.uid'),
            confirm: tpl('parameters.confirm'),
            comment: 'from a template',
          },
        },
        {
          id: 'wait',
          name: 'Wait for the promotion',
          action: 'kpromo:release:status',
          input: { plan: tpl('parameters.plan'), waitSeconds: 120 },
        },
      ],
      output: {
        approvers: tpl('steps.promote.output.approvers'),
        phase: tpl('steps.wait.output.phase'),
        status: tpl('steps.wait.output.status'),
      },
    },
  },
];

/**
 * The onboarding template as shipped (examples/portal/templates), except its pull-request step:
 * GitHub cannot run here, so that step is debug:log listing the workspace with the files' contents,
 * which is what the pull request would carry; its link output goes with it.
 */
function adoptTemplate() {
  const file = join(
    dirname(fileURLToPath(import.meta.url)),
    '../../../examples/portal/templates/adopt-into-kpromo.yaml',
  );
  const t = parseYaml(readFileSync(file, 'utf8')) as Json;
  const pr = t.spec.steps.findIndex((s: Json) => s.id === 'pr');
  expect(t.spec.steps[pr].action).toBe('publish:github:pull-request');
  t.spec.steps[pr] = {
    id: 'pr',
    name: 'The pull request content',
    action: 'debug:log',
    input: { listWorkspace: 'with-contents' },
  };
  delete t.spec.output.links;
  // The form's GitHub repository is not needed without the pull request.
  for (const page of t.spec.parameters) page.required = (page.required ?? []).filter((r: string) => r !== 'repoUrl');
  return t;
}

/** Starts a task from a template through the scaffolder's REST API as `user` and waits for its end. */
async function runTask(user: string, template: string, values: Record<string, unknown>) {
  const res = await fetch(`${base}/api/scaffolder/v2/tasks`, {
    method: 'POST',
    headers: { ...auth(user), 'content-type': 'application/json' },
    body: JSON.stringify({ templateRef: `template:default/${template}`, values }),
  });
  const created = (await res.json()) as Json;
  expect(res.status, JSON.stringify(created)).toBe(201);
  const task = await waitFor(
    `task ${created.id}`,
    async () => {
      const t = (await (
        await fetch(`${base}/api/scaffolder/v2/tasks/${created.id}`, { headers: auth(user) })
      ).json()) as Json;
      return ['completed', 'failed', 'cancelled'].includes(t.status) ? t : undefined;
    },
    180_000,
  );
  const events = (await (
    await fetch(`${base}/api/scaffolder/v2/tasks/${created.id}/events`, { headers: auth(user) })
  ).json()) as Array<{ type: string; body: Json }>;
  const completion = events.find((e) => e.type === 'completion')?.body ?? {};
  return {
    status: task.status as string,
    output: completion.output as Json | undefined,
    error: completion.error as { name: string; message: string } | undefined,
    log: events.map((e) => e.body.message).join('\n'),
  };
}

async function expectStableImage(app: string, digest: string) {
  const d = await getDeployment(stable, APPS_NS, app);
  expect(d.spec?.template?.spec?.containers?.[0]?.image).toContain(`@${digest}`);
}

function portSign(body: string, ts = String(Date.now()), secret = PORT_SECRET) {
  return {
    'x-port-timestamp': ts,
    'x-port-signature': `v1,${createHmac('sha256', secret).update(`${ts}.${body}`).digest('base64')}`,
  };
}

async function portWebhook(body: unknown, headers: Record<string, string>) {
  const raw = JSON.stringify(body);
  const res = await fetch(`${base}/api/promotions/port/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: raw,
  });
  return { status: res.status, json: (await res.json()) as Json };
}

beforeAll(async () => {
  const tokensFile = join(tmpdir(), `bsb-tokens-${RUN}.yaml`);
  writeFileSync(tokensFile, `tokens:\n  - token: ${TOKEN}\n    username: ${BACKEND_USER}\n`);
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await ensureNs(dev, NS);
  // The backend's token user has no kpromo rights of its own: it may only impersonate the identities
  // it acts for (x-kpromo-user / x-kpromo-groups), whose RBAC then decides, like `kubectl --as`.
  const rbac = '/apis/rbac.authorization.k8s.io/v1';
  const roleRef = (kind: string, name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind, name });
  const user = (name: string) => ({ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name });
  const group = (name: string) => ({ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name });
  await dev.create(`${rbac}/clusterroles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: IMPERSONATOR },
    rules: [
      {
        apiGroups: [''],
        resources: ['users'],
        verbs: ['impersonate'],
        resourceNames: [ALICE, MALLORY, ADMIN, BOB, PORT_ALICE, PORT_MALLORY, SERVICE],
      },
      { apiGroups: [''], resources: ['groups'], verbs: ['impersonate'], resourceNames: [TEAM_A] },
    ],
  });
  await dev.create(`${rbac}/clusterrolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: IMPERSONATOR },
    roleRef: roleRef('ClusterRole', IMPERSONATOR),
    subjects: [user(BACKEND_USER)],
  });
  const role = async (name: string, rules: object[], subjects: object[]) => {
    await dev.create(`${rbac}/namespaces/${NS}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace: NS },
      rules,
    });
    await dev.create(`${rbac}/namespaces/${NS}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace: NS },
      roleRef: roleRef('Role', name),
      subjects,
    });
  };
  // Read and create plans (approving needs a release verb besides): alice only through her group.
  await role(
    'kpromo-user',
    [
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['*'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'],
      },
      { apiGroups: [''], resources: ['events'], verbs: ['list'] },
    ],
    [group(TEAM_A), user(ADMIN), user(BOB), user(PORT_ALICE), user(PORT_MALLORY)],
  );
  // Release verbs namespace-wide (on promotionplans) for the admin …
  await role(
    'kpromo-release-all',
    [{ apiGroups: ['promotions.kpromo.dev'], resources: ['promotionplans'], verbs: ['approve', 'rollback'] }],
    [user(ADMIN)],
  );
  // Lifting a line stop (delete on linestops): the admin only; alice and her Port identity may stop it.
  await role(
    'kpromo-line-lift',
    [{ apiGroups: ['promotions.kpromo.dev'], resources: ['linestops'], verbs: ['delete'] }],
    [user(ADMIN)],
  );
  // … and per target environment (environments/stable) for alice and her Port identity.
  await role(
    'kpromo-release-stable',
    [
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['environments'],
        resourceNames: ['stable'],
        verbs: ['approve', 'rollback'],
      },
    ],
    [user(ALICE), user(PORT_ALICE)],
  );
  const seeded = await seedTwoStageRelease({
    dev,
    stable,
    ns: NS,
    appsNs: APPS_NS,
    source,
    target,
    repo: REPO,
    apps: APPS,
    newTag: 'v2.0.0',
    oldTag: 'v1.0.0',
    seed: `bsb-${RUN}`,
  });
  Object.assign(devDigest, seeded.devDigest);
  Object.assign(stableOld, seeded.stableOld);
  for (const app of APPS)
    await applyCr(dev, {
      kind: 'Application',
      metadata: { name: app, namespace: NS },
      spec: {
        owner: app === 'billing' ? 'team-b' : 'team-a',
        image: { repository: `${REPO}/${app}` },
        workloads: [{ kind: 'Deployment', name: app }],
      },
    });

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
        leaderElection: {
          enabled: true,
          namespace: NS,
          name: 'bsb-leader',
          leaseDurationSeconds: 4,
          renewIntervalMs: 1000,
        },
        maxAttempts: 3,
        auth: { staticTokensFile: tokensFile, tokenReview: false },
        mcp: { enabled: true, host: '127.0.0.1', port: 0, write: true },
        clusterAccess: [{ namespaces: [NS], contexts: ['dev', 'stable', 'prod'], targetNamespaces: [APPS_NS] }],
        // The harness registries listen on loopback, which registry traffic may reach only when allowed.
        egress: { allowedCidrs: ['127.0.0.1/32'] },
      },
    }),
  );
  await waitFor('leader', async () => ctl.controller.isLeader, 30_000);
  await waitFor(
    'cache warm',
    async () => {
      const envs = ctl.controller.cache.environments(NS);
      return (
        APPS.every((n) => ctl.controller.cache.getApplication(NS, n)) &&
        envs.length === 2 &&
        envs.every((e) => ctl.controller.cache.environmentSynced(e))
      );
    },
    60_000,
  );

  await standIn.start();

  // Catalog entities the conditional policy evaluates: alice owns cart, search and ledger, team-b owns billing.
  const catalogFile = join(tmpdir(), `bsb-catalog-${RUN}.yaml`);
  writeFileSync(
    catalogFile,
    [
      ...APPS.map(
        (app) =>
          `apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata:\n  name: ${app}\nspec:\n  type: service\n  lifecycle: production\n  owner: ${app === 'billing' ? 'group:default/team-b' : ALICE}\n`,
      ),
      // The scaffolder reads templates from the catalog (JSON is YAML).
      ...[...templates(), adoptTemplate()].map((t) => `${JSON.stringify(t)}\n`),
    ].join('---\n'),
  );

  ({ backend, base } = await startBackstageTestBackend({
    features: [
      catalogBackend,
      catalogModuleTemplateKind,
      permissionBackend,
      testPolicyModule,
      mcpActionsBackend,
      promotionsPlugin,
      promotionsModulePort,
      scaffolderBackend,
      scaffolderModulePromotions,
    ],
    // Requests without a token are unauthenticated (the mock default would be a user); plugins'
    // on-behalf-of tokens carry an actor, without which the real catalog refuses the permission
    // backend's apply-conditions call.
    realAuth: true,
    // Alice is in group team-a (her ownership entity refs), which the backend sends as
    // x-kpromo-groups; her Kubernetes read/create rights are granted to that group only.
    ownership: { [ALICE]: [ALICE, TEAM_A] },
    backend: { actions: { pluginSources: ['promotions'] } },
    config: {
      permission: { enabled: true },
      catalog: {
        processingInterval: { seconds: 1 },
        rules: [{ allow: ['Component', 'Location', 'Template'] }],
        locations: [{ type: 'file', target: catalogFile }],
      },
    },
    controller: { baseUrl: `http://127.0.0.1:${ctl.port}`, mcpUrl: ctl.mcp!.url, token: TOKEN, defaultNamespace: NS },
    promotions: {
      entityRef: 'component:default/{name}',
      port: { baseUrl: standIn.url, clientId: PORT_ID, clientSecret: PORT_SECRET, pollIntervalMs: 500 },
    },
  }));
  // The catalog has processed the entities (the conditional decisions need their ownership relations).
  await waitFor(
    'catalog entities',
    async () => {
      const r = await fetch(`${base}/api/catalog/entities/by-name/component/default/billing`, {
        headers: { authorization: mockCredentials.service.header() },
      });
      if (!r.ok) throw new Error(`catalog answered ${r.status}: ${(await r.text()).slice(0, 300)}`);
      const e = (await r.json()) as { relations?: Array<{ type: string }> };
      if (!e.relations?.some((x) => x.type === 'ownedBy'))
        throw new Error(`no ownedBy: ${JSON.stringify(e).slice(0, 300)}`);
      for (const t of [...templates(), adoptTemplate()]) {
        const tr = await fetch(`${base}/api/catalog/entities/by-name/template/default/${t.metadata.name}`, {
          headers: { authorization: mockCredentials.service.header() },
        });
        if (!tr.ok) throw new Error(`template ${t.metadata.name}: catalog answered ${tr.status}`);
      }
      return e;
    },
    30_000,
  );
});

afterAll(async () => {
  await backend?.stop().catch(() => undefined);
  await standIn.stop().catch(() => undefined);
  await ctl?.stop().catch(() => undefined);
  await dev.delete(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${IMPERSONATOR}`).catch(() => undefined);
  await dev.delete(`/apis/rbac.authorization.k8s.io/v1/clusterroles/${IMPERSONATOR}`).catch(() => undefined);
  await deleteNs(dev, NS);
  for (const c of [dev, stable]) await deleteNs(c, APPS_NS);
});

describe('promotions backend plugin in a real test backend against the real controller', () => {
  it('answers 401 without credentials and 403 for a denied user on every route', async () => {
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/environments'],
      ['GET', '/applications'],
      ['GET', '/diff?from=dev&to=stable'],
      ['GET', '/flows'],
      ['GET', '/plans'],
      ['POST', '/plans', { from: 'dev', to: 'stable', applications: ['cart'] }],
      ['GET', `/plans/${NS}/nope`],
      ['POST', `/plans/${NS}/nope/approve`, { uid: '00000000-0000-0000-0000-000000000000' }],
      ['POST', `/plans/${NS}/nope/rollback`, { uid: '00000000-0000-0000-0000-000000000000' }],
      ['GET', '/history'],
      ['GET', '/insights/dora'],
    ];
    for (const [method, path, body] of routes) {
      const anon = await api(path, { method, body });
      expect(anon.status, `${method} ${path} anonymous`).toBe(401);
      // Refused by the Backstage policy before the controller is asked.
      const denied = await api(path, { method, body, user: MALLORY });
      expect(denied.status, `${method} ${path} mallory`).toBe(403);
      expect(denied.json.error.name).toBe('NotAllowedError');
      expect(denied.json.error.message).toMatch(/user:default\/mallory is not allowed to promotion\.plan\./);
    }
    const mcp = await fetch(`${base}/api/promotions/mcp`, { method: 'POST', body: '{}' });
    expect(mcp.status).toBe(401);
    expect(decisions.some((d) => d.user === MALLORY && d.result === AuthorizeResult.DENY)).toBe(true);
  });

  it('serves environments, applications with versions and health, diff and plans to an authorised user', async () => {
    const envs = await api('/environments', { user: ALICE });
    expect(envs.status).toBe(200);
    expect(envs.json.items.map((e: { name: string }) => e.name).sort()).toEqual(['dev', 'stable']);
    const apps = await waitFor('apps healthy in dev', async () => {
      const r = await api('/applications', { user: ALICE });
      const cart = r.json.items?.find((a: { name: string }) => a.name === 'cart');
      return cart?.versions.find((v: { environment: string }) => v.environment === 'dev')?.health === 'Healthy'
        ? r
        : undefined;
    });
    const cart = apps.json.items.find((a: { name: string }) => a.name === 'cart');
    expect(cart.entityRef).toBe('component:default/cart');
    expect(cart.versions.find((v: { environment: string }) => v.environment === 'stable')).toMatchObject({
      tag: 'v1.0.0',
      digest: stableOld.cart,
    });
    const check = responseChecker(BACKEND_API);
    const diff = await api('/diff?from=dev&to=stable&applications=cart,billing', { user: ALICE });
    expect(diff.status).toBe(200);
    expect(diff.json.candidates.map((c: { application: string }) => c.application).sort()).toEqual(['billing', 'cart']);
    expect((await api('/plans', { user: ALICE })).json.items).toEqual([]);
    // Flows and the plans' server-side filters pass through for the caller.
    const flows = await api('/flows', { user: ALICE });
    expect(check('GET', '/flows', 200, flows.json)).toEqual([]);
    expect(
      flows.json.items.map((f: { stages: Array<{ environment: string }> }) => f.stages.map((s) => s.environment)),
    ).toEqual([['dev', 'stable']]);
    const filtered = await api('/plans?application=cart&phase=active&limit=5', { user: ALICE });
    expect(check('GET', '/plans', 200, filtered.json)).toEqual([]);
    expect(filtered.json).toMatchObject({ items: [], total: 0 });
    expect((await api('/plans?phase=Done', { user: ALICE })).status).toBe(400);
    // Answers fit the backend API's OpenAPI document (generated from @kpromo/contract), and paging
    // passes through to the controller: one application per page, the total over all of them.
    for (const [route, r] of [
      ['/environments', envs],
      ['/applications', apps],
      ['/diff', diff],
    ] as const)
      expect(check('GET', route, 200, r.json), route).toEqual([]);
    // History and DORA pass through for the caller (nothing promoted yet: empty, but shaped as promised).
    const history = await api('/history?since=7d&limit=10', { user: ALICE });
    expect(history.status, JSON.stringify(history.json)).toBe(200);
    expect(check('GET', '/history', 200, history.json)).toEqual([]);
    expect(history.json).toMatchObject({ items: [], total: 0 });
    const dora = await api('/insights/dora?window=7d', { user: ALICE });
    expect(check('GET', '/insights/dora', 200, dora.json)).toEqual([]);
    expect(dora.json.window.days).toBe(7);
    expect(dora.json.total.deployments).toBe(0);
    expect((await api('/history?since=last-week', { user: ALICE })).status).toBe(400);
    const page1 = await api('/applications?limit=1', { user: ALICE });
    expect(check('GET', '/applications', 200, page1.json)).toEqual([]);
    expect(page1.json.items).toHaveLength(1);
    expect(page1.json.total).toBe(apps.json.items.length);
    const page2 = await api(`/applications?limit=1&continue=${encodeURIComponent(page1.json.continue)}`, {
      user: ALICE,
    });
    expect(page2.json.items[0].name > page1.json.items[0].name).toBe(true);
    // Service principals (plugin-to-plugin) are allowed by Backstage's permission client and reach
    // the controller as service:<subject> (which the backend may impersonate; it may list nothing).
    const asService = await api('/plans', { service: true });
    expect(asService.status, JSON.stringify(asService.json)).toBe(200);
    expect(asService.json.items).toEqual([]);
  });

  it('is refused by the controller when the backend may not act for the caller, or its token is wrong', async () => {
    // eve passes the Backstage policy, but Kubernetes RBAC does not let the backend impersonate her.
    const eve = await api('/environments', { user: EVE });
    expect(eve.status).toBe(403);
    expect(eve.json.error).toEqual({
      name: 'NotAllowedError',
      message: `forbidden: ${BACKEND_USER} may not impersonate user ${EVE} (Kubernetes RBAC: needs verb impersonate on users, resourceName ${EVE})`,
    });
    // alice's read rights come from her group (x-kpromo-groups): without it the controller shows her nothing.
    const controller = `http://127.0.0.1:${ctl.port}`;
    const direct = new ControllerClient(async () => controller, TOKEN);
    const environments = (api: ControllerApi) => api.GET('/environments', { params: { query: { namespace: NS } } });
    const withGroup = await direct.call({ user: ALICE, groups: [TEAM_A] }, environments);
    expect(withGroup.items).toHaveLength(2);
    const withoutGroup = await direct.call({ user: ALICE }, environments);
    expect(withoutGroup.items).toEqual([]);
    // A wrong or missing backend token: the controller answers 401, the client an AuthenticationError.
    await expect(
      new ControllerClient(async () => controller, 'not-the-backend-token-0123').call({ user: ALICE }, (api) =>
        api.GET('/plans'),
      ),
    ).rejects.toMatchObject({ name: 'AuthenticationError', message: expect.stringMatching(/invalid bearer token/) });
    await expect(
      new ControllerClient(async () => controller).call({ user: ALICE }, (api) => api.GET('/plans')),
    ).rejects.toMatchObject({ name: 'AuthenticationError', message: expect.stringMatching(/missing bearer token/) });
  });

  it('rejects bad input with 400 and a clear message', async () => {
    const same = await api('/diff?from=dev&to=dev', { user: ALICE });
    expect(same.status).toBe(400);
    expect(same.json.error.message).toMatch(/from and to must be different/);
    const badName = await api('/plans', { user: ALICE, method: 'POST', body: { from: 'Dev!', to: 'stable' } });
    expect(badName.status).toBe(400);
    expect(badName.json.error.message).toMatch(/from: must be a Kubernetes object name/);
    const regex = await api('/diff?from=dev&to=stable&tagPattern=(', { user: ALICE });
    expect(regex.status).toBe(400);
    expect(regex.json.error.message).toMatch(/tagPattern/);
    const controller400 = await api('/diff?from=dev&to=prod', { user: ALICE });
    expect(controller400.status).toBe(404);
    expect(controller400.json.error.message).toMatch(/no PromotionFlow/);
    const missing = await api(`/plans/${NS}/does-not-exist`, { user: ALICE });
    expect(missing.status).toBe(404);
  });

  it('promotes through the REST routes as the user; refused without the Backstage permission or the RBAC verb', async () => {
    // billing belongs to team-b: alice may create the plan but not approve it (conditional policy).
    const billing = await api('/plans', {
      user: ALICE,
      method: 'POST',
      body: { from: 'dev', to: 'stable', applications: ['billing'], name: `billing-${RUN}` },
    });
    expect(billing.status).toBe(201);
    const billingUid = { uid: billing.json.plan.metadata.uid };
    const billingShown = { billing: billing.json.plan.spec.candidates[0].from.digest };
    expect(
      (await api(`/plans/${NS}/billing-${RUN}/approve`, { user: MALLORY, method: 'POST', body: billingUid })).status,
    ).toBe(403);
    expect((await api(`/plans/${NS}/billing-${RUN}`, { user: MALLORY })).status).toBe(403);
    const refused = await api(`/plans/${NS}/billing-${RUN}/approve`, { user: ALICE, method: 'POST', body: billingUid });
    expect(refused.status, JSON.stringify(refused.json)).toBe(403);
    expect(refused.json.error.message).toMatch(/promotion.plan.approve for component:default\/billing/);
    // bob passes the Backstage policy, but Kubernetes RBAC gives him no approve verb: the controller refuses.
    const bobRefused = await api(`/plans/${NS}/billing-${RUN}/approve`, {
      user: BOB,
      method: 'POST',
      body: billingUid,
    });
    expect(bobRefused.status, JSON.stringify(bobRefused.json)).toBe(403);
    expect(bobRefused.json.error).toEqual({
      name: 'NotAllowedError',
      message: `forbidden: ${BOB} (via ${BACKEND_USER}) may not approve plans into environment stable in namespace ${NS} (Kubernetes RBAC: needs verb approve on environments/stable or on promotionplans)`,
    });
    const billingPlan = await getPlan(dev, NS, `billing-${RUN}`);
    expect(billingPlan.spec.approvals).toBeUndefined();
    // The creating Backstage user, recorded by the controller (admission checks it is the requesting user).
    expect(billingPlan.spec.requestedBy).toBe(ALICE);
    // create+approve in one call is refused as well, and creates nothing.
    const both = await api('/plans', {
      user: ALICE,
      method: 'POST',
      body: {
        from: 'dev',
        to: 'stable',
        applications: ['billing'],
        approve: true,
        expect: billingShown,
        name: `billing2-${RUN}`,
      },
    });
    expect(both.status).toBe(403);
    expect(
      await dev.getOrUndefined(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans/billing2-${RUN}`),
    ).toBeUndefined();
    const bobBoth = await api('/plans', {
      user: BOB,
      method: 'POST',
      body: {
        from: 'dev',
        to: 'stable',
        applications: ['billing'],
        approve: true,
        expect: billingShown,
        name: `billing3-${RUN}`,
      },
    });
    expect(bobBoth.status).toBe(403);
    expect(bobBoth.json.error.message).toMatch(
      /^forbidden: user:default\/bob .* may not approve plans into environment stable/,
    );
    expect(
      await dev.getOrUndefined(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans/billing3-${RUN}`),
    ).toBeUndefined();

    const created = await api('/plans', {
      user: ALICE,
      method: 'POST',
      body: { from: 'dev', to: 'stable', applications: ['cart'], name: `rest-${RUN}` },
    });
    expect(created.status).toBe(201);
    expect(created.json.plan.spec.candidates.map((c: { application: string }) => c.application)).toEqual(['cart']);
    // An approval that names no plan uid is refused before anything else: it binds to nothing shown.
    const blind = await api(`/plans/${NS}/rest-${RUN}/approve`, { user: ALICE, method: 'POST', body: {} });
    expect(blind.status, JSON.stringify(blind.json)).toBe(400);
    expect(blind.json.error.message).toBe(
      'invalid request body: uid: is required: send the metadata.uid of the plan you reviewed (GET /plans/{namespace}/{name}, `kpromo plan get <name> -o json`, or the uid returned when it was created); the approval binds to that plan',
    );
    expect((await getPlan(dev, NS, `rest-${RUN}`)).spec.approvals).toBeUndefined();
    // The approver is never taken from the body: an approvedBy naming someone else is ignored (the
    // contract drops unknown fields) and the approval is recorded for the signed-in user.
    const approved = await api(`/plans/${NS}/rest-${RUN}/approve`, {
      user: ALICE,
      method: 'POST',
      body: { approvedBy: ADMIN, comment: 'cart 2.0 is ready', uid: created.json.plan.metadata.uid },
    });
    expect(approved.status, JSON.stringify(approved.json)).toBe(200);
    // The approval names the Backstage user and her groups (admission checked both against the request).
    // …bound to the plan the backend read and authorised (its uid).
    expect(approved.json.plan.spec.approvals).toEqual([
      { user: ALICE, groups: [TEAM_A], comment: 'cart 2.0 is ready', planUID: created.json.plan.metadata.uid },
    ]);
    expect(approved.json.progress.approvers.map((a: { user: string }) => a.user)).toEqual([ALICE]);
    const again = await api(`/plans/${NS}/rest-${RUN}/approve`, {
      user: ALICE,
      method: 'POST',
      body: { uid: created.json.plan.metadata.uid },
    });
    expect(again.status).toBe(409);
    // Live per-app progress through the route until the plan is done.
    const done = await waitFor(
      'REST plan done',
      async () => {
        const r = await api(`/plans/${NS}/rest-${RUN}`, { user: ALICE });
        return (r.json as PlanDetails).progress?.done ? (r.json as PlanDetails) : undefined;
      },
      120_000,
    );
    expect(done.progress).toMatchObject({
      phase: 'Complete',
      succeeded: 1,
      total: 1,
      approved: true,
      requestedBy: ALICE,
    });
    expect(done.progress.approvers).toEqual([
      {
        user: ALICE,
        // No persons mapping here: the Backstage identity is its own person.
        person: ALICE,
        groups: [TEAM_A],
        comment: 'cart 2.0 is ready',
        counted: true,
        observedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    ]);
    expect(done.progress.apps[0]).toMatchObject({ application: 'cart', phase: 'Succeeded', written: true });
    const real = await getPlan(dev, NS, `rest-${RUN}`);
    expect(real.status?.phase).toBe('Complete');
    expect(real.status?.gate?.approved).toBe(true);
    expect(real.spec.approvals?.map((a) => a.user)).toEqual([ALICE]);
    await expectStableImage('cart', devDigest.cart);
  });

  it('promotes through real scaffolder tasks (kpromo:* actions of the scaffolder module) as the task initiator', async () => {
    // mallory started the task: the promotions backend refuses her Backstage permission; nothing is created.
    const denied = await runTask(MALLORY, 'kpromo-plan', { app: 'search', plan: `tpl-denied-${RUN}` });
    expect(denied.status, denied.log).toBe('failed');
    expect(denied.error).toEqual({
      name: 'NotAllowedError',
      message: `${MALLORY} is not allowed to promotion.plan.create`,
    });
    expect(
      await dev.getOrUndefined(
        `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans/tpl-denied-${RUN}`,
      ),
    ).toBeUndefined();

    const created = await runTask(ALICE, 'kpromo-plan', { app: 'search', plan: `tpl-${RUN}` });
    expect(created.status, created.log).toBe('completed');
    expect(created.output).toMatchObject({ namespace: NS, plan: `tpl-${RUN}`, applications: ['search'] });
    // The controller recorded the task's initiator, not the scaffolder or the backend.
    expect((await getPlan(dev, NS, `tpl-${RUN}`)).spec.requestedBy).toBe(ALICE);

    // The initiator bob lacks the approve verb: the controller refuses as bob, the plan stays unapproved.
    const uid = created.output?.uid as string;
    expect(uid).toBe((await getPlan(dev, NS, `tpl-${RUN}`)).metadata.uid);
    // Without the initiator's confirmation (confirm: true and the uid shown) nothing is approved.
    const unconfirmed = await runTask(ALICE, 'kpromo-promote', { plan: `tpl-${RUN}`, uid });
    expect(unconfirmed.status, unconfirmed.log).toBe('failed');
    expect(unconfirmed.error).toEqual({
      name: 'InputError',
      message: `kpromo:plan:promote approves plan ${NS}/tpl-${RUN} only with an explicit confirmation: set confirm: true in the step's input (e.g. from a confirmation checkbox and the plan shown in the template); nothing was approved`,
    });
    // A uid other than the plan's (the plan the user saw was replaced under its name): the controller refuses (409).
    const otherPlan = await runTask(ALICE, 'kpromo-promote', {
      plan: `tpl-${RUN}`,
      uid: '00000000-0000-0000-0000-000000000000',
      confirm: true,
    });
    expect(otherPlan.status, otherPlan.log).toBe('failed');
    expect(otherPlan.error?.name).toBe('ConflictError');
    expect((await getPlan(dev, NS, `tpl-${RUN}`)).spec.approvals).toBeUndefined();
    const asBob = await runTask(BOB, 'kpromo-promote', { plan: `tpl-${RUN}`, uid, confirm: true });
    expect(asBob.status, asBob.log).toBe('failed');
    expect(asBob.error).toEqual({
      name: 'NotAllowedError',
      message: `forbidden: ${BOB} (via ${BACKEND_USER}) may not approve plans into environment stable in namespace ${NS} (Kubernetes RBAC: needs verb approve on environments/stable or on promotionplans)`,
    });
    expect((await getPlan(dev, NS, `tpl-${RUN}`)).spec.approvals).toBeUndefined();

    const promoted = await runTask(ALICE, 'kpromo-promote', { plan: `tpl-${RUN}`, uid, confirm: true });
    expect(promoted.status, promoted.log).toBe('completed');
    expect(promoted.output).toMatchObject({ approvers: [ALICE], phase: 'Complete' });
    expect(promoted.output?.status.plan).toMatchObject({ approved: true, approvers: [{ user: ALICE }] });
    const real = await waitPlan(dev, NS, `tpl-${RUN}`, terminal);
    expect(real.status?.phase).toBe('Complete');
    expect(real.spec.requestedBy).toBe(ALICE);
    // alice with her group (x-kpromo-groups from her ownership refs), as through the REST routes.
    expect(real.spec.approvals).toEqual([
      { user: ALICE, groups: [TEAM_A], comment: 'from a template', planUID: real.metadata.uid },
    ]);
    await expectStableImage('search', devDigest.search);
  });

  it('promotes through an MCP tool call via the proxy (Streamable HTTP, sessions, SSE)', async () => {
    const client = new Client({ name: 'bsb-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/api/promotions/mcp`), {
      requestInit: { headers: { authorization: mockCredentials.user.header(ADMIN) } },
    });
    await client.connect(transport);
    try {
      expect(transport.sessionId).toBeTruthy();
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      expect(tools).toEqual([
        'continue_wave',
        'diff',
        'dora',
        'history',
        'line_stops',
        'list',
        'plan',
        'promote',
        'propose_adoption',
        'resume_line',
        'rollback',
        'state',
        'stop_line',
      ]);
      // Another principal cannot use this session.
      const hijack = await fetch(`${base}/api/promotions/mcp`, {
        method: 'POST',
        headers: {
          authorization: mockCredentials.user.header(ALICE),
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': transport.sessionId!,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list' }),
      });
      expect(hijack.status).toBe(403);
      const call = async (name: string, args: Record<string, unknown>) => {
        const r = (await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 60_000 })) as {
          isError?: boolean;
          content: Array<{ text?: string }>;
          structuredContent?: Json;
        };
        if (r.isError) throw new Error(r.content.map((c) => c.text).join('\n'));
        return r.structuredContent!;
      };
      const planned = await call('plan', {
        namespace: NS,
        from: 'dev',
        to: 'stable',
        applications: ['ledger'],
        name: `mcp-${RUN}`,
      });
      expect(planned.created).toBe(true);
      // The uid the plan tool showed binds the approval to that plan.
      const promoted = await call('promote', { namespace: NS, plan: `mcp-${RUN}`, uid: planned.plan.uid });
      expect(promoted.plan.approvals).toEqual([{ user: ADMIN }]);
      expect(promoted.plan.requestedBy).toBe(ADMIN);
      const real = await waitPlan(dev, NS, `mcp-${RUN}`, terminal);
      expect(real.status?.phase).toBe('Complete');
      // The controller acted as the Backstage user (impersonation), not as the proxy's token user.
      expect(real.spec.approvals?.map((a) => a.user)).toEqual([ADMIN]);
      expect(real.spec.requestedBy).toBe(ADMIN);
      // Kubernetes RBAC of the impersonated user decides: mallory has no RoleBinding in the namespace,
      // bob may create plans but not approve them.
      const toolAs = async (user: string, name: string, args: Record<string, unknown>) => {
        const c = new Client({ name: `bsb-test-${name}`, version: '1.0.0' });
        await c.connect(
          new StreamableHTTPClientTransport(new URL(`${base}/api/promotions/mcp`), {
            requestInit: { headers: { authorization: mockCredentials.user.header(user) } },
          }),
        );
        try {
          return (await c.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 60_000 })) as {
            isError?: boolean;
            content: Array<{ text?: string }>;
            structuredContent?: Json;
          };
        } finally {
          await c.close();
        }
      };
      const mallory = await toolAs(MALLORY, 'list', { namespace: NS });
      expect(mallory.isError).toBe(true);
      expect(mallory.content[0].text).toBe(
        `forbidden: ${MALLORY} (via ${BACKEND_USER}) may not list applications in namespace ${NS} (Kubernetes RBAC)`,
      );
      const bobPlan = await toolAs(BOB, 'plan', {
        namespace: NS,
        from: 'dev',
        to: 'stable',
        applications: ['billing'],
        name: `mcp-bob-${RUN}`,
      });
      expect(bobPlan.isError, JSON.stringify(bobPlan.content)).toBeFalsy();
      const bobPromote = await toolAs(BOB, 'promote', {
        namespace: NS,
        plan: `mcp-bob-${RUN}`,
        uid: bobPlan.structuredContent?.plan.uid,
      });
      expect(bobPromote.isError).toBe(true);
      expect(bobPromote.content[0].text).toBe(
        `forbidden: ${BOB} (via ${BACKEND_USER}) may not approve plans into environment stable in namespace ${NS} (Kubernetes RBAC: needs verb approve on environments/stable or on promotionplans)`,
      );
      const bobReal = await getPlan(dev, NS, `mcp-bob-${RUN}`);
      expect(bobReal.spec.requestedBy).toBe(BOB);
      expect(bobReal.spec.approvals).toBeUndefined();
      // eve passes Backstage authentication, but the backend may not impersonate her: 403 from the proxy.
      const eve = await fetch(`${base}/api/promotions/mcp`, {
        method: 'POST',
        headers: {
          authorization: mockCredentials.user.header(EVE),
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'eve', version: '1' } },
        }),
      });
      expect(eve.status).toBe(403);
      expect(((await eve.json()) as Json).error.message).toBe(
        `forbidden: ${BACKEND_USER} may not impersonate user ${EVE} (Kubernetes RBAC: needs verb impersonate on users, resourceName ${EVE})`,
      );
      await expectStableImage('ledger', devDigest.ledger);
      // Raw Streamable HTTP through the proxy: initialize answers as an SSE stream with a session
      // id; a standalone GET stream on that session is SSE too; aborting it closes the upstream.
      const init = await fetch(`${base}/api/promotions/mcp`, {
        method: 'POST',
        headers: {
          authorization: mockCredentials.user.header(ADMIN),
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        }),
      });
      expect(init.status).toBe(200);
      expect(init.headers.get('content-type')).toMatch(/text\/event-stream/);
      const sid = init.headers.get('mcp-session-id');
      expect(sid).toBeTruthy();
      // Resumable (event ids on every message, Last-Event-ID replay).
      expect(await init.text()).toMatch(/^event: message\nid: \S+\ndata: .*"serverInfo"/m);
      const sessionsBefore = ctl.mcp!.sessions();
      const ac = new AbortController();
      const sse = await fetch(`${base}/api/promotions/mcp`, {
        headers: {
          authorization: mockCredentials.user.header(ADMIN),
          accept: 'text/event-stream',
          'mcp-session-id': sid!,
          'mcp-protocol-version': '2025-06-18',
        },
        signal: ac.signal,
      });
      expect(sse.status).toBe(200);
      expect(sse.headers.get('content-type')).toMatch(/text\/event-stream/);
      ac.abort();
      // The controller allows one standalone SSE stream per session (a second one gets 409): a new
      // stream is only accepted once the proxy has aborted the upstream request of the first.
      const second = await waitFor(
        'upstream stream closed after client abort',
        async () => {
          const r = await fetch(`${base}/api/promotions/mcp`, {
            headers: {
              authorization: mockCredentials.user.header(ADMIN),
              accept: 'text/event-stream',
              'mcp-session-id': sid!,
              'mcp-protocol-version': '2025-06-18',
            },
            signal: AbortSignal.timeout(5_000),
          });
          if (r.status === 409) {
            await r.body?.cancel();
            return undefined;
          }
          return r;
        },
        10_000,
      );
      expect(second.status).toBe(200);
      await second.body?.cancel();
      // DELETE ends the session upstream.
      const del = await fetch(`${base}/api/promotions/mcp`, {
        method: 'DELETE',
        headers: {
          authorization: mockCredentials.user.header(ADMIN),
          'mcp-session-id': sid!,
          'mcp-protocol-version': '2025-06-18',
        },
      });
      expect(del.status).toBe(200);
      await waitFor('upstream session closed', async () => ctl.mcp!.sessions() < sessionsBefore, 10_000);
      // 2026-07-28 through the proxy: stateless (no session), the standard headers and the mirrored
      // Mcp-Param-Namespace reach the controller, which checks them against the body.
      const modern = (params: Json, headers: Record<string, string> = {}) =>
        fetch(`${base}/api/promotions/mcp`, {
          method: 'POST',
          headers: {
            authorization: mockCredentials.user.header(ADMIN),
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2026-07-28',
            'mcp-method': 'tools/call',
            'mcp-name': 'list',
            ...headers,
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 5,
            method: 'tools/call',
            params: {
              ...params,
              _meta: {
                'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                'io.modelcontextprotocol/clientCapabilities': {},
                'io.modelcontextprotocol/clientInfo': { name: 'raw-modern', version: '1' },
              },
            },
          }),
        });
      const listed = await modern(
        { name: 'list', arguments: { namespace: NS, name: 'ledger' } },
        { 'mcp-param-namespace': NS },
      );
      expect(listed.status).toBe(200);
      expect(listed.headers.get('mcp-session-id')).toBeNull();
      const listedBody = (await listed.json()) as Json;
      expect(listedBody.id).toBe(5);
      expect(listedBody.result.structuredContent.applications.map((a: Json) => a.name)).toEqual(['ledger']);
      expect(listedBody.result.content[0].text).toMatch(/^1 application\(s\) in /);
      const mismatch = await modern(
        { name: 'list', arguments: { namespace: NS } },
        { 'mcp-param-namespace': 'another-namespace' },
      );
      expect(mismatch.status).toBe(400);
      expect(((await mismatch.json()) as Json).error.code).toBe(-32020);
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    }
  });

  it('exposes the registered actions through the actions registry (mcp-actions-backend)', async () => {
    const client = new Client({ name: 'bsb-actions', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/api/mcp-actions/v1`), {
        requestInit: { headers: { authorization: mockCredentials.user.header(ALICE) } },
      }),
    );
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      for (const n of ['create-plan', 'promote', 'rollback', 'get-release-status'])
        expect(
          names.some((x) => x === n || x.endsWith(`.${n}`) || x.endsWith(`__${n}`)),
          n,
        ).toBe(true);
      const statusTool = names.find((x) => x.endsWith('get-release-status'))!;
      const r = (await client.callTool({ name: statusTool, arguments: { namespace: NS, plan: `rest-${RUN}` } })) as {
        isError?: boolean;
        content: Array<{ text?: string }>;
      };
      expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
      expect(r.content.map((c) => c.text).join('')).toMatch(/"phase":"Complete"/);
      expect(r.content.map((c) => c.text).join('')).toMatch(
        /"approved":true,"approvers":\[\{"user":"user:default\/alice"/,
      );
      // The same permission checks apply to actions: mallory's call is refused.
      const asMallory = new Client({ name: 'bsb-actions-mallory', version: '1.0.0' });
      await asMallory.connect(
        new StreamableHTTPClientTransport(new URL(`${base}/api/mcp-actions/v1`), {
          requestInit: { headers: { authorization: mockCredentials.user.header(MALLORY) } },
        }),
      );
      const denied = (await asMallory.callTool({
        name: statusTool,
        arguments: { namespace: NS, plan: `rest-${RUN}` },
      })) as {
        isError?: boolean;
        content: Array<{ text?: string }>;
      };
      await asMallory.close();
      expect(denied.isError).toBe(true);
      expect(denied.content.map((c) => c.text).join('')).toMatch(/not allowed to promotion.plan.read/);
    } finally {
      await client.close();
    }
  });

  it('runs a signed Port webhook: rollback, then promote again, reporting run status and logs to Port', async () => {
    const bad = await portWebhook(
      { runId: 'r-bad', action: 'kpromo_rollback', inputs: {} },
      {
        ...portSign('{}'),
      },
    );
    expect(bad.status).toBe(401);
    const body = {
      runId: `r1-${RUN}`,
      action: 'kpromo_rollback',
      user: 'alice@example.com',
      // The plan entity's uid (kpromo_rollback.json sends it): the rollback binds to that plan.
      inputs: { namespace: NS, plan: `rest-${RUN}`, uid: (await getPlan(dev, NS, `rest-${RUN}`)).metadata.uid },
    };
    const stale = await portWebhook(body, portSign(JSON.stringify(body), String(Date.now() - 6 * 60_000)));
    expect(stale.status).toBe(401);
    expect(stale.json.error.message).toMatch(/stale/);
    const wrongKey = await portWebhook(body, portSign(JSON.stringify(body), String(Date.now()), 'not-the-secret'));
    expect(wrongKey.status).toBe(401);
    expect(runs.size).toBe(0);

    const okHeaders = portSign(JSON.stringify(body));
    const ok = await portWebhook(body, okHeaders);
    expect(ok.status).toBe(202);
    const r1 = await waitFor(
      'port run 1 finished',
      async () => {
        const r = runs.get(`r1-${RUN}`);
        return r?.patches.some((p) => p.status) ? r : undefined;
      },
      120_000,
    );
    // A rollback plan that restored everything ends in phase RolledBack.
    expect(r1.patches.at(-1), JSON.stringify(r1.logs)).toMatchObject({ status: 'SUCCESS', statusLabel: 'RolledBack' });
    // Its name is generated (rest-RUN-rollback-xxxxx: a squatted rest-RUN-rollback blocks nothing) and logged.
    const rbName = new RegExp(`Rollback plan ${NS}/(rest-${RUN}-rollback-[a-z0-9]{5}) created`).exec(
      r1.logs.map((l) => l.message).join('\n'),
    )?.[1];
    expect(rbName, JSON.stringify(r1.logs)).toBeDefined();
    const rb = await getPlan(dev, NS, rbName ?? '');
    expect(rb.status?.phase).toBe('RolledBack');
    expect(rb.status?.succeeded).toBe(1);
    // The run acted as port:<trigger user's email>: recorded as creator and approver.
    expect(rb.spec.requestedBy).toBe(PORT_ALICE);
    expect(rb.spec.approvals).toEqual([{ user: PORT_ALICE }]);
    await expectStableImage('cart', stableOld.cart);

    // Replays: the same delivery again (within the signature's window), and the same run re-signed
    // with a fresh timestamp, are refused with 409 and do nothing (checked at the end of this test:
    // the run in Port unchanged, still one rollback plan).
    const r1Reported = JSON.stringify(runs.get(`r1-${RUN}`));
    const replay = await portWebhook(body, okHeaders);
    expect(replay.status).toBe(409);
    expect(replay.json.error.message).toBe(`Port run r1-${RUN} was already delivered: replayed delivery refused`);
    const resigned = await portWebhook(body, portSign(JSON.stringify(body), String(Date.now() + 1)));
    expect(resigned.status).toBe(409);
    expect(resigned.json.error.message).toMatch(/already delivered \(with another signature\)/);

    // Only the configured action identifiers run (exact match): 400 naming them, nothing reported.
    const lookalike = { ...body, runId: `r-act-${RUN}`, action: 'not_kpromo_promote' };
    const badAction = await portWebhook(lookalike, portSign(JSON.stringify(lookalike)));
    expect(badAction.status).toBe(400);
    expect(badAction.json.error.message).toBe(
      'unsupported Port action "not_kpromo_promote": expected kpromo_promote, kpromo_rollback, kpromo_continue, kpromo_stop_line, kpromo_resume_line or kpromo_adopt (promotions.port.actions)',
    );
    expect(runs.has(`r-act-${RUN}`)).toBe(false);

    const promote = {
      runId: `r2-${RUN}`,
      action: 'kpromo_promote',
      user: 'alice@example.com',
      // What the application entity shows for dev (its versions property), as kpromo_promote sends it.
      inputs: {
        namespace: NS,
        from: 'dev',
        to: 'stable',
        applications: ['cart'],
        name: `port-${RUN}`,
        expect: { cart: devDigest.cart },
      },
    };
    expect((await portWebhook(promote, portSign(JSON.stringify(promote)))).status).toBe(202);
    const r2 = await waitFor(
      'port run 2 finished',
      async () => {
        const r = runs.get(`r2-${RUN}`);
        return r?.patches.some((p) => p.status) ? r : undefined;
      },
      120_000,
    );
    expect(r2.patches.at(-1), JSON.stringify(r2.logs)).toMatchObject({ status: 'SUCCESS' });
    const r2Reported = JSON.stringify(r2);
    expect((await portWebhook(promote, portSign(JSON.stringify(promote), String(Date.now() + 1)))).status).toBe(409);
    expect(r2.logs.some((l) => l.terminationStatus === 'SUCCESS')).toBe(true);
    const portPlan = await getPlan(dev, NS, `port-${RUN}`);
    expect(portPlan.status?.phase).toBe('Complete');
    expect(portPlan.spec.approvals?.map((a) => a.user)).toEqual([PORT_ALICE]);
    await expectStableImage('cart', devDigest.cart);

    // mallory's Port identity may create plans but holds no approve verb: the run fails with the
    // controller's reason, and no plan is created.
    const denied = {
      runId: `r3-${RUN}`,
      action: 'kpromo_promote',
      user: 'mallory@example.com',
      inputs: {
        namespace: NS,
        from: 'dev',
        to: 'stable',
        applications: ['billing'],
        name: `port-mallory-${RUN}`,
        expect: { billing: devDigest.billing },
      },
    };
    expect((await portWebhook(denied, portSign(JSON.stringify(denied)))).status).toBe(202);
    const r3 = await waitFor(
      'port run 3 finished',
      async () => {
        const r = runs.get(`r3-${RUN}`);
        return r?.patches.some((p) => p.status) ? r : undefined;
      },
      60_000,
    );
    expect(r3.patches.at(-1)).toMatchObject({ status: 'FAILURE', statusLabel: 'Failed' });
    expect(r3.patches.at(-1)?.summary).toBe(
      `forbidden: ${PORT_MALLORY} (via ${BACKEND_USER}) may not approve plans into environment stable in namespace ${NS} (Kubernetes RBAC: needs verb approve on environments/stable or on promotionplans)`,
    );
    expect(
      await dev.getOrUndefined(
        `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans/port-mallory-${RUN}`,
      ),
    ).toBeUndefined();
    // A run without a trigger user has nobody to act as.
    const anonymous = { runId: `r4-${RUN}`, action: 'kpromo_promote', inputs: { namespace: NS, plan: `rest-${RUN}` } };
    expect((await portWebhook(anonymous, portSign(JSON.stringify(anonymous)))).status).toBe(202);
    const r4 = await waitFor(
      'port run 4 finished',
      async () => {
        const r = runs.get(`r4-${RUN}`);
        return r?.patches.some((p) => p.status) ? r : undefined;
      },
      30_000,
    );
    expect(r4.patches.at(-1)).toMatchObject({ status: 'FAILURE' });
    expect(r4.patches.at(-1)?.summary).toMatch(/names no trigger user/);
    // Runs are limited to promotions.port.namespaces (default: controller.defaultNamespace, here NS):
    // alice's Port identity may not act in another namespace, refused before any controller call.
    const otherNs = {
      runId: `r5-${RUN}`,
      action: 'kpromo_promote',
      user: 'alice@example.com',
      inputs: { namespace: APPS_NS, from: 'dev', to: 'stable', applications: ['billing'], name: `port-ns-${RUN}` },
    };
    expect((await portWebhook(otherNs, portSign(JSON.stringify(otherNs)))).status).toBe(202);
    const r5 = await waitFor(
      'port run 5 finished',
      async () => {
        const r = runs.get(`r5-${RUN}`);
        return r?.patches.some((p) => p.status) ? r : undefined;
      },
      30_000,
    );
    expect(r5.patches.at(-1)).toEqual({
      status: 'FAILURE',
      statusLabel: 'Failed',
      summary: `namespace "${APPS_NS}" is not open to Port runs (promotions.port.namespaces: ${NS})`,
    });
    expect(
      await dev.getOrUndefined(
        `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${APPS_NS}/promotionplans/port-ns-${RUN}`,
      ),
    ).toBeUndefined();
    // The identity must be one e-mail address: a comma would name a second identity (or a group list).
    const comma = {
      runId: `r6-${RUN}`,
      action: 'kpromo_promote',
      user: 'alice@example.com,admin@example.com',
      inputs: { namespace: NS, from: 'dev', to: 'stable', applications: ['billing'], name: `port-comma-${RUN}` },
    };
    expect((await portWebhook(comma, portSign(JSON.stringify(comma)))).status).toBe(202);
    const r6 = await waitFor(
      'port run 6 finished',
      async () => {
        const r = runs.get(`r6-${RUN}`);
        return r?.patches.some((p) => p.status) ? r : undefined;
      },
      30_000,
    );
    expect(r6.patches.at(-1)).toMatchObject({
      status: 'FAILURE',
      summary: `the Port run's trigger user "alice@example.com,admin@example.com" is not an e-mail address; nobody to act as`,
    });
    expect(
      await dev.getOrUndefined(
        `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans/port-comma-${RUN}`,
      ),
    ).toBeUndefined();
    // The replayed deliveries did nothing: the runs in Port are as they were, and the controller
    // holds exactly one rollback of rest-RUN and one port-RUN plan.
    expect(JSON.stringify(runs.get(`r1-${RUN}`))).toBe(r1Reported);
    expect(JSON.stringify(runs.get(`r2-${RUN}`))).toBe(r2Reported);
    const plans = await dev.get<{ items: PromotionPlan[] }>(
      `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans`,
    );
    expect(plans.items.filter((p) => p.spec.rollbackOf === `rest-${RUN}`).map((p) => p.metadata.name)).toEqual([
      rbName,
    ]);
    expect(
      plans.items
        .filter((p) => p.spec.requestedBy === PORT_ALICE)
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual([`port-${RUN}`, rbName].sort());
    // Every Port call matched the spec (requests and the stand-in's responses).
    expect(standIn.violations).toEqual([]);
    expect(standIn.callCount(/^PATCH \/v1\/actions\/runs\//)).toBeGreaterThanOrEqual(6);
  });

  it('rolls back through the REST route (alice owns search)', async () => {
    // The plan as shown: a rollback approved at once (the backend's default) names its uid.
    const uid = (await getPlan(dev, NS, `tpl-${RUN}`)).metadata.uid;
    const blind = await api(`/plans/${NS}/tpl-${RUN}/rollback`, { user: ALICE, method: 'POST', body: {} });
    expect(blind.status).toBe(400);
    expect(blind.json.error.message).toMatch(/^invalid request body: uid: is required: send the metadata.uid/);
    const denied = await api(`/plans/${NS}/tpl-${RUN}/rollback`, { user: MALLORY, method: 'POST', body: { uid } });
    expect(denied.status).toBe(403);
    // bob passes the Backstage policy but holds no rollback verb: the controller refuses and creates nothing.
    const bob = await api(`/plans/${NS}/tpl-${RUN}/rollback`, {
      user: BOB,
      method: 'POST',
      body: { name: `tpl-rb-bob-${RUN}`, uid },
    });
    expect(bob.status).toBe(403);
    expect(bob.json.error.message).toBe(
      `forbidden: ${BOB} (via ${BACKEND_USER}) may not rollback plans into environment stable in namespace ${NS} (Kubernetes RBAC: needs verb rollback on environments/stable or on promotionplans)`,
    );
    expect(
      await dev.getOrUndefined(
        `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans/tpl-rb-bob-${RUN}`,
      ),
    ).toBeUndefined();
    const r = await api(`/plans/${NS}/tpl-${RUN}/rollback`, {
      user: ALICE,
      method: 'POST',
      body: { name: `tpl-rb-${RUN}`, uid },
    });
    expect(r.status).toBe(201);
    const p = await waitPlan(dev, NS, `tpl-rb-${RUN}`, terminal);
    expect(p.status?.phase).toBe('RolledBack');
    expect(p.status?.succeeded).toBe(1);
    expect(p.spec.requestedBy).toBe(ALICE);
    expect(p.spec.approvals).toEqual([{ user: ALICE, groups: [TEAM_A] }]);
    await expectStableImage('search', stableOld.search);
  });

  it("checks promotion.rollback for a rollback plan's applications before approving it (issue 31: it checked nothing)", async () => {
    // The admin promotes billing (team-b's) and creates its rollback without approving it.
    await waitFor('billing healthy in dev', async () => {
      const r = await api('/applications', { user: ADMIN });
      const billing = r.json.items?.find((a: { name: string }) => a.name === 'billing');
      return billing?.versions.find((v: { environment: string }) => v.environment === 'dev')?.health === 'Healthy';
    });
    const promoted = await api('/plans', {
      user: ADMIN,
      method: 'POST',
      body: {
        from: 'dev',
        to: 'stable',
        applications: ['billing'],
        approve: true,
        expect: await shownDigests(ADMIN, ['billing']),
        name: `billing-adm-${RUN}`,
      },
    });
    expect(promoted.status, JSON.stringify(promoted.json)).toBe(201);
    const billingDone = await waitPlan(dev, NS, `billing-adm-${RUN}`, terminal);
    expect(billingDone.status?.phase, JSON.stringify(billingDone.status)).toBe('Complete');
    const rb = await api(`/plans/${NS}/billing-adm-${RUN}/rollback`, {
      user: ADMIN,
      method: 'POST',
      body: { approve: false, name: `billing-rb-${RUN}` },
    });
    expect(rb.status, JSON.stringify(rb.json)).toBe(201);
    // A rollback plan names no candidates: the applications it restores are the rolled-back plan's.
    expect(rb.json.plan.spec).toMatchObject({ action: 'rollback', rollbackOf: `billing-adm-${RUN}`, candidates: [] });
    // alice holds the rollback verb on environments/stable (Kubernetes would let her), but her
    // Backstage policy allows promotion.rollback only for entities she owns, and billing is team-b's.
    decisions.length = 0;
    const rbUid = { uid: rb.json.plan.metadata.uid };
    const alice = await api(`/plans/${NS}/billing-rb-${RUN}/approve`, { user: ALICE, method: 'POST', body: rbUid });
    expect(alice.status, JSON.stringify(alice.json)).toBe(403);
    expect(alice.json.error).toEqual({
      name: 'NotAllowedError',
      message: `${ALICE} is not allowed to promotion.rollback for component:default/billing`,
    });
    expect(decisions).toContainEqual({
      user: ALICE,
      permission: 'promotion.rollback',
      result: AuthorizeResult.CONDITIONAL,
    });
    // Refused before the controller was asked: the rollback plan is unapproved and billing still runs v2.
    const still = await getPlan(dev, NS, `billing-rb-${RUN}`);
    expect(still.spec.approvals).toBeUndefined();
    await expectStableImage('billing', devDigest.billing);
    // The admin's policy allows it: the same route approves, and the rollback runs.
    const admin = await api(`/plans/${NS}/billing-rb-${RUN}/approve`, { user: ADMIN, method: 'POST', body: rbUid });
    expect(admin.status, JSON.stringify(admin.json)).toBe(200);
    expect(decisions).toContainEqual({ user: ADMIN, permission: 'promotion.rollback', result: AuthorizeResult.ALLOW });
    const done = await waitPlan(dev, NS, `billing-rb-${RUN}`, terminal);
    expect(done.status?.phase).toBe('RolledBack');
    expect(done.spec.approvals?.map((a) => a.user)).toEqual([ADMIN]);
    await expectStableImage('billing', stableOld.billing);
  });

  it('stops and lifts the line from the portal and from a signed Port run, as the caller; refused without promotion.line.stop or the RBAC verb', async () => {
    // mallory: no Backstage permission; nothing reaches the controller.
    const denied = await api('/linestops', { user: MALLORY, method: 'POST', body: { namespace: NS, reason: 'x' } });
    expect(denied.status).toBe(403);
    expect(denied.json.error.message).toBe(`${MALLORY} is not allowed to promotion.line.stop`);
    // alice: the policy allows, and RBAC lets her group create linestops. The controller records her
    // authenticated identity, never a name from the body.
    const stop = await api('/linestops', {
      user: ALICE,
      method: 'POST',
      body: { namespace: NS, name: `portal-${RUN}`, reason: 'INC-7 from the portal' },
    });
    expect(stop.status, JSON.stringify(stop.json)).toBe(201);
    expect(stop.json).toMatchObject({
      namespace: NS,
      name: `portal-${RUN}`,
      reason: 'INC-7 from the portal',
      // The user, and the backend that called for her (the controller's record of a delegated call).
      stoppedBy: `${ALICE} (via ${BACKEND_USER})`,
    });
    const list = await api(`/linestops?namespace=${NS}`, { user: ALICE });
    expect(list.json.items.map((s: Json) => s.name)).toEqual([`portal-${RUN}`]);
    // Lifting needs delete on linestops, which alice's group lacks: the controller refuses as her.
    const notHers = await api(`/linestops/${NS}/portal-${RUN}/lift`, { user: ALICE, method: 'POST' });
    expect(notHers.status, JSON.stringify(notHers.json)).toBe(403);
    const lifted = await api(`/linestops/${NS}/portal-${RUN}/lift`, { user: ADMIN, method: 'POST' });
    expect(lifted.status, JSON.stringify(lifted.json)).toBe(200);
    expect(lifted.json).toEqual({ lifted: `${NS}/portal-${RUN}` });

    // The same from Port: kpromo_stop_line as port:alice@example.com, then kpromo_resume_line.
    const portRunDone = async (runId: string) =>
      waitFor(
        `port run ${runId}`,
        async () => {
          const r = runs.get(runId);
          return r?.patches.some((p) => p.status) ? r : undefined;
        },
        60_000,
      );
    const stopBody = {
      runId: `line-${RUN}`,
      action: 'kpromo_stop_line',
      user: 'alice@example.com',
      inputs: { namespace: NS, name: `port-${RUN}`, reason: 'INC-8 from Port' },
    };
    expect((await portWebhook(stopBody, portSign(JSON.stringify(stopBody)))).status).toBe(202);
    const stopRun = await portRunDone(`line-${RUN}`);
    expect(stopRun.patches.at(-1), JSON.stringify(stopRun.logs)).toMatchObject({ status: 'SUCCESS' });
    const made = (await dev.get(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/linestops/port-${RUN}`)) as Json;
    expect(made.spec).toMatchObject({ reason: 'INC-8 from Port', stoppedBy: `${PORT_ALICE} (via ${BACKEND_USER})` });
    // Port's identity for alice holds no delete on linestops: the resume run fails, the stop stays.
    const resumeBody = {
      runId: `resume-${RUN}`,
      action: 'kpromo_resume_line',
      user: 'alice@example.com',
      inputs: { namespace: NS, name: `port-${RUN}` },
    };
    expect((await portWebhook(resumeBody, portSign(JSON.stringify(resumeBody)))).status).toBe(202);
    const resumeRun = await portRunDone(`resume-${RUN}`);
    expect(resumeRun.patches.at(-1)).toMatchObject({ status: 'FAILURE' });
    expect(
      await dev.getOrUndefined(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/linestops/port-${RUN}`),
    ).toBeDefined();
    const adminLift = await api(`/linestops/${NS}/port-${RUN}/lift`, { user: ADMIN, method: 'POST' });
    expect(adminLift.status, JSON.stringify(adminLift.json)).toBe(200);
  });

  it('adopts running workloads through the onboarding template as the signed-in user; the merged proposal promotes', async () => {
    // Running but not adopted: newsvc and its worker share one image in dev and stable; a public
    // redis runs in dev beside them.
    const digest = async (host: string, repository: string, tag: string) =>
      (await pushTestImage({ host, repository, tag, seed: `bsb-${RUN}-${repository}-${tag}` })).digest;
    const newDev = await digest(source, `${REPO}/newsvc`, 'v2.0.0');
    const oldStable = await digest(target, `stable/${REPO}/newsvc`, 'v1.0.0');
    for (const name of ['newsvc', 'newsvc-worker']) {
      await applyDeployment(dev, APPS_NS, name, `${source}/${REPO}/newsvc:v2.0.0@${newDev}`);
      await applyDeployment(stable, APPS_NS, name, `${target}/stable/${REPO}/newsvc:v1.0.0@${oldStable}`);
    }
    await applyDeployment(dev, APPS_NS, 'cache', 'docker.io/library/redis:7');

    // mallory lacks promotion.adopt: refused before the controller is asked.
    const denied = await runTask(MALLORY, 'kpromo-adopt', { namespace: NS });
    expect(denied.status, denied.log).toBe('failed');
    expect(denied.error).toEqual({ name: 'NotAllowedError', message: `${MALLORY} is not allowed to promotion.adopt` });
    // The controller requires RBAC create on applications: alice holds it through her group only.
    const direct = new ControllerClient(async () => `http://127.0.0.1:${ctl.port}`, TOKEN);
    await expect(
      direct.call({ user: ALICE }, (a) => a.POST('/adopt', { body: { namespace: NS } })),
    ).rejects.toMatchObject({
      name: 'NotAllowedError',
      message: `forbidden: ${ALICE} (via ${BACKEND_USER}) may not create applications in namespace ${NS} (Kubernetes RBAC)`,
    });

    // The REST route: every candidate (the adopted apps are matched by repository, not proposed again).
    const rest = await api('/adopt', { user: ALICE, method: 'POST', body: { namespace: NS, owner: 'team-a' } });
    expect(rest.status, JSON.stringify(rest.json)).toBe(200);
    expect(responseChecker(BACKEND_API)('POST', '/adopt', 200, rest.json)).toEqual([]);
    expect(rest.json.candidates).toEqual([
      {
        application: 'newsvc',
        owner: 'team-a',
        repository: `${REPO}/newsvc`,
        workloads: ['Deployment/newsvc', 'Deployment/newsvc-worker'],
        chosen: true,
        change: 'create',
      },
    ]);
    expect(rest.json.unchanged).toEqual(APPS.map((a) => `Application/${a}`).sort());
    expect(rest.json.scanned).toEqual([
      { environment: 'dev', namespace: APPS_NS, workloads: 7 },
      { environment: 'stable', namespace: APPS_NS, workloads: 6 },
    ]);
    expect(rest.json.findings).toContainEqual({
      level: 'undecided',
      subject: 'Deployment dev/cache',
      message: `container main runs docker.io/library/redis, not from ${source} (the registry the other workloads of dev use): not adopted; promote it from its own registry in an Environment of its own`,
    });

    // A name discovery does not propose is refused, and no pull request would be opened.
    const wrong = await runTask(ALICE, 'kpromo-adopt', { namespace: NS, applications: ['nope'] });
    expect(wrong.status, wrong.log).toBe('failed');
    expect(wrong.error?.name).toBe('InputError');
    expect(wrong.error?.message).toContain(
      `nothing to adopt into flow ${NS}/main: none of the chosen applications is proposed`,
    );
    expect(wrong.error?.message).toContain('discovery proposes no Application nope');

    // alice chooses newsvc: the real scaffolder writes its file into the workspace for the pull request.
    const task = await runTask(ALICE, 'kpromo-adopt', { namespace: NS, owner: 'team-a', applications: ['newsvc'] });
    expect(task.status, task.log).toBe('completed');
    expect(task.log).toContain(' - kpromo/application-newsvc.yaml:');
    const [files, notes] = (task.output?.text ?? []) as Array<{ title: string; content: string }>;
    expect(files.content).toContain('Files: kpromo/application-newsvc.yaml');
    expect(notes.content).toContain('undecided  Deployment dev/cache');
    const yaml = /```yaml\n([\s\S]*?)```/.exec(files.content)?.[1] ?? '';
    const docs = parseAllDocuments(yaml).map((d) => d.toJSON() as Json);
    expect(docs).toEqual([
      {
        apiVersion: 'promotions.kpromo.dev/v1alpha1',
        kind: 'Application',
        metadata: { name: 'newsvc', namespace: NS },
        spec: {
          owner: 'team-a',
          type: 'service',
          image: { repository: `${REPO}/newsvc` },
          workloads: [
            { kind: 'Deployment', name: 'newsvc' },
            { kind: 'Deployment', name: 'newsvc-worker' },
          ],
        },
      },
    ]);
    // Nothing was written by the portal.
    expect(
      await dev.getOrUndefined(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/applications/newsvc`),
    ).toBeUndefined();

    // The same from Port (kpromo_adopt on the flow's entity) as port:alice@example.com: the
    // proposal lands in the run's logs, nothing is applied.
    const adoptBody = {
      runId: `adopt-${RUN}`,
      action: 'kpromo_adopt',
      user: 'alice@example.com',
      inputs: { namespace: NS, flow: 'main', applications: 'newsvc', owner: 'team-a' },
    };
    expect((await portWebhook(adoptBody, portSign(JSON.stringify(adoptBody)))).status).toBe(202);
    const adoptRun = await waitFor(
      'port adopt run',
      async () => {
        const r = runs.get(`adopt-${RUN}`);
        return r?.patches.some((p) => p.status) ? r : undefined;
      },
      60_000,
    );
    expect(adoptRun.patches.at(-1), JSON.stringify(adoptRun.logs)).toEqual({
      status: 'SUCCESS',
      statusLabel: 'Proposed',
      summary: `Proposed for flow ${NS}/main: Application/newsvc. Nothing was applied: add the YAML in this run's logs to your GitOps repository.`,
    });
    const portYaml = adoptRun.logs
      .map((l) => String(l.message))
      .find((m) => m.startsWith('Proposed resources (YAML):'));
    expect(
      parseAllDocuments(portYaml?.replace('Proposed resources (YAML):\n', '') ?? '').map((d) => d.toJSON()),
    ).toEqual(docs);
    expect(adoptRun.logs.map((l) => l.message)).toContainEqual(
      expect.stringMatching(/^undecided: Deployment dev\/cache: /),
    );

    // The pull request merged and applied (here with the test's admin kubeconfig): the controller
    // computes newsvc's candidate from what runs, and a promotion through it succeeds.
    for (const d of docs) await applyCr(dev, d as Parameters<typeof applyCr>[1]);
    const plan = await waitFor(
      'newsvc plan',
      async () => {
        const r = await api('/plans', {
          user: ADMIN,
          method: 'POST',
          body: { namespace: NS, from: 'dev', to: 'stable', applications: ['newsvc'], name: `adopt-${RUN}` },
        });
        return r.status === 201 ? r.json : undefined;
      },
      30_000,
    );
    expect(plan.plan.spec.candidates).toMatchObject([
      { application: 'newsvc', from: { tag: 'v2.0.0', digest: newDev } },
    ]);
    await approveAsAdmin(dev, NS, `adopt-${RUN}`);
    const done = await waitPlan(dev, NS, `adopt-${RUN}`, terminal);
    expect(done.status?.phase).toBe('Complete');
    for (const name of ['newsvc', 'newsvc-worker'])
      expect((await getDeployment(stable, APPS_NS, name)).spec?.template?.spec?.containers?.[0]?.image).toContain(
        `@${newDev}`,
      );
  });
});
