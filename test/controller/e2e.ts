import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type AppProgress, isTerminalPlan, type PromotionPlan } from '@kpromo/api';
import { type Config, loadConfig, type Running, type StartOptions, startController } from '@kpromo/controller';
import {
  DEPLOYMENT,
  HELMRELEASE,
  isNotFound,
  KPROMO_TYPES,
  KubeRest,
  ROLLOUT,
  resourcePath,
  type Workload,
} from '@kpromo/controller/kube';
import { stringify } from 'yaml';
import {
  applyCrds,
  CONTROLLER_IDENTITY,
  installFluxApiCrds,
  kubeConfigFor,
  kubectlPath,
  type MetricsEndpoint,
  type Prometheus,
  pushTestImage,
  startMetricsEndpoint,
  startPrometheus,
  waitFor,
} from '../index.js';

export const restFor = (kubeconfig: string, ctx: string) => new KubeRest(kubeConfigFor(ctx, kubeconfig), ctx);

/**
 * Namespaces unique to one run (a previous run's may still be terminating): `ns` holds the kpromo
 * CRs in the control cluster, `apps` the workloads in every cluster.
 */
export function runNamespaces(prefix: string): { ns: string; apps: string; run: string } {
  const run = Math.random().toString(36).slice(2, 7);
  return { ns: `${prefix}-${run}`, apps: `${prefix}-apps-${run}`, run };
}

/** Creates `ns` in the control cluster and `apps` in every workload cluster. */
export async function setupNamespaces(
  control: KubeRest,
  clusters: readonly KubeRest[],
  names: { ns: string; apps: string },
): Promise<void> {
  await ensureNs(control, names.ns);
  for (const c of clusters) await ensureNs(c, names.apps);
}

/** Deletes what {@link setupNamespaces} created (missing namespaces are fine). */
export async function deleteNamespaces(
  control: KubeRest,
  clusters: readonly KubeRest[],
  names: { ns: string; apps: string },
): Promise<void> {
  await deleteNs(control, names.ns);
  for (const c of clusters) await deleteNs(c, names.apps);
}

/** A static-token caller of the controller API in tests (written to the controller's tokens file). */
export interface TestUser {
  token: string;
  username: string;
  groups?: string[];
}

/** Cluster-admin through the API (group system:masters holds every verb, approve included). */
export const TEST_ADMIN: TestUser = {
  token: 'kpromo-test-admin-0123456789abcdef',
  username: 'kpromo-test-admin',
  groups: ['system:masters'],
};

/** Writes a static tokens file for the controller's `auth.staticTokensFile`. */
export function testTokensFile(users: TestUser[] = []): string {
  const file = join(mkdtempSync(join(tmpdir(), 'kpromo-tokens-')), 'tokens.yaml');
  writeFileSync(
    file,
    stringify({
      tokens: [TEST_ADMIN, ...users].map((u) => ({ token: u.token, username: u.username, groups: u.groups ?? [] })),
    }),
  );
  return file;
}

/**
 * Approves a plan directly in the apiserver as the kubeconfig's admin user (CN kpromo-admin), as
 * `kubectl patch` would: the admission policy checks the approval names the requesting user and the
 * plan it approves (planUID).
 */
export async function approveAsAdmin(rest: KubeRest, ns: string, name: string): Promise<PromotionPlan> {
  const path = `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${ns}/promotionplans/${name}`;
  const p = await rest.get<PromotionPlan>(path);
  return rest.jsonPatch<PromotionPlan>(path, [
    { op: 'add', path: '/spec/approvals', value: [{ user: 'kpromo-admin', planUID: p.metadata.uid }] },
  ]);
}

/**
 * `clusterAccess` entry for tests: Environments in `namespaces` may use any context of the test
 * kubeconfig (so an unknown context still gets "no such context") and deliver into any namespace
 * there (each test puts its workloads in namespaces of its own; tenancy itself is checked by
 * clusterAccess.int.test.ts and approvedIsWhatRuns.int.test.ts); no kubeconfig Secrets, no
 * inCluster. Without an entry the controller refuses every cluster.
 */
export const testClusterAccess = (...namespaces: string[]) => [
  { namespaces, contexts: ['*'], kubeconfigSecrets: [], inCluster: false, targetNamespaces: ['*'] },
];

/** Controller config for an in-process controller watching `ns` of the dev (control) cluster. */
export function controllerConfig(
  kubeconfig: string,
  ns: string,
  flags: Record<string, unknown> = {},
  users: TestUser[] = [],
): Config {
  return loadConfig({
    env: {},
    flags: {
      kubeconfig,
      context: 'dev',
      namespaces: [ns],
      defaultNamespace: ns,
      logLevel: 'warn',
      server: { host: '127.0.0.1', port: 0 },
      auth: { staticTokensFile: testTokensFile(users) },
      clusterAccess: testClusterAccess(ns),
      // The harness registries listen on loopback, which registry traffic may reach only when allowed.
      egress: { allowedCidrs: ['127.0.0.1/32'] },
      ...flags,
    },
  });
}

/** kpromo CRs as the tests and benchmarks declare them (apply with {@link applyCr}). */
export const crs = {
  environment: (
    ns: string,
    name: string,
    spec: { context: string; namespace: string; registry: object; delivery: object },
  ) => ({
    kind: 'Environment',
    metadata: { name, namespace: ns },
    spec: {
      cluster: { context: spec.context },
      namespace: spec.namespace,
      registry: spec.registry,
      delivery: spec.delivery,
    },
  }),
  flow: (ns: string, name: string, stages: string[], spec: object = {}) => ({
    kind: 'PromotionFlow',
    metadata: { name, namespace: ns },
    spec: { stages: stages.map((environment) => ({ environment })), ...spec },
  }),
  /** An Application whose image is shop/<name>, run by the Deployment <name>. */
  application: (ns: string, name: string, owner: string) => ({
    kind: 'Application',
    metadata: { name, namespace: ns },
    spec: { owner, image: { repository: `shop/${name}` }, workloads: [{ kind: 'Deployment', name }] },
  }),
};

// The one definition of "final" (the controller's and the UI's), re-exported for the tests' waits.
export { isTerminalPlan } from '@kpromo/api';
export const appOf = (p: PromotionPlan, name: string): AppProgress | undefined =>
  p.status?.apps?.find((a) => a.application === name);

/** JSON call to a started controller's HTTP API, as TEST_ADMIN unless another token (or none: null) is given. */
export const callApi = (
  port: number | undefined,
  path: string,
  init?: { method?: string; body?: unknown; token?: string | null; headers?: Record<string, string> },
) => {
  const token = init?.token === undefined ? TEST_ADMIN.token : init.token;
  return fetch(`http://127.0.0.1:${port}${path}`, {
    method: init?.method ?? 'GET',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...init?.headers,
    },
    body: init?.body === undefined ? undefined : JSON.stringify(init.body),
  });
};

/**
 * A create-and-approve body with what a reviewer was shown: `expect`, per application, the source
 * digest GET /diff answers now for the body's filters (as TEST_ADMIN unless another token is given).
 */
export async function withShown<
  B extends { namespace?: string; flow?: string; from: string; to: string; applications?: string[] },
>(port: number | undefined, body: B, token?: string): Promise<B & { expect: Record<string, string> }> {
  const q = new URLSearchParams({ from: body.from, to: body.to });
  if (body.namespace) q.set('namespace', body.namespace);
  if (body.flow) q.set('flow', body.flow);
  if (body.applications) q.set('applications', body.applications.join(','));
  const r = await callApi(port, `/api/v1/diff?${q}`, token === undefined ? undefined : { token });
  if (r.status !== 200) throw new Error(`GET /api/v1/diff: ${r.status} ${await r.text()}`);
  const d = (await r.json()) as { candidates: Array<{ application: string; from: { digest: string } }> };
  return { ...body, expect: Object.fromEntries(d.candidates.map((c) => [c.application, c.from.digest])) };
}

/**
 * Creates and approves a plan through the API in one request, approving what GET /diff shows now
 * ({@link withShown}), as TEST_ADMIN unless another token is given; fails unless it was created.
 */
export async function createAndApprove(
  port: number | undefined,
  body: { namespace?: string; flow?: string; from: string; to: string; applications?: string[]; name?: string },
  token?: string,
): Promise<PromotionPlan> {
  const r = await callApi(port, '/api/v1/plans', {
    method: 'POST',
    body: await withShown(port, { ...body, approve: true }, token),
    ...(token === undefined ? {} : { token }),
  });
  if (r.status !== 201) throw new Error(`POST /api/v1/plans: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { plan: PromotionPlan }).plan;
}

/**
 * A plan created and approved through the API ({@link createAndApprove}), as TEST_ADMIN unless
 * `token` is given, read back once it is final (`timeoutMs`, default 120 s): the tests' "promote and
 * wait". `rest` reads the plan in the body's namespace.
 */
export async function promoteAndWait(
  port: number | undefined,
  rest: KubeRest,
  body: { namespace: string; flow?: string; from: string; to: string; applications?: string[]; name?: string },
  o: { token?: string; timeoutMs?: number } = {},
): Promise<PromotionPlan> {
  const created = await createAndApprove(port, body, o.token);
  return waitPlan(rest, body.namespace, created.metadata.name, isTerminalPlan, o.timeoutMs);
}

/** The image of a Deployment's first container. */
export async function deploymentImage(rest: KubeRest, ns: string, name: string): Promise<string | undefined> {
  return (await getDeployment(rest, ns, name)).spec?.template?.spec?.containers?.[0]?.image;
}

export async function ensureNs(rest: KubeRest, name: string) {
  await rest.apply(
    `/api/v1/namespaces/${name}`,
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
    'ctl-test',
  );
}

export async function deleteNs(rest: KubeRest, name: string) {
  await rest.delete(`/api/v1/namespaces/${name}`).catch((e) => {
    if (!isNotFound(e)) throw e;
  });
}

/** A Deployment kwok makes Ready (tolerates the fake node's taints); `stuck` pins it to no node. */
export async function applyDeployment(
  rest: KubeRest,
  ns: string,
  name: string,
  image: string,
  opts: { stuck?: boolean } = {},
) {
  await rest.apply(
    resourcePath(DEPLOYMENT, ns, name),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: ns },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: {
            tolerations: [{ operator: 'Exists' }],
            ...(opts.stuck ? { nodeSelector: { 'kpromo.dev/nowhere': 'true' } } : {}),
            containers: [{ name: 'main', image }],
          },
        },
      },
    },
    'ctl-test',
  );
}

export async function getDeployment(rest: KubeRest, ns: string, name: string): Promise<Workload> {
  return rest.get<Workload>(resourcePath(DEPLOYMENT, ns, name));
}

export async function waitReady(rest: KubeRest, ns: string, name: string, timeoutMs = 60_000) {
  await waitFor(
    `${rest.clusterName} ${ns}/${name} ready`,
    async () => {
      const d = await getDeployment(rest, ns, name);
      return (
        (d.status?.availableReplicas ?? 0) >= 1 &&
        d.status?.updatedReplicas === 1 &&
        d.status?.observedGeneration === d.metadata.generation
      );
    },
    timeoutMs,
  );
}

export async function applyCr(
  rest: KubeRest,
  obj: {
    kind: string;
    metadata: { name: string; namespace?: string; labels?: Record<string, string> };
    [k: string]: unknown;
  },
) {
  const t = KPROMO_TYPES[obj.kind as keyof typeof KPROMO_TYPES];
  return rest.apply(
    resourcePath(t, obj.metadata.namespace, obj.metadata.name),
    { apiVersion: 'promotions.kpromo.dev/v1alpha1', ...obj },
    'ctl-test',
  );
}

export async function getPlan(rest: KubeRest, ns: string, name: string): Promise<PromotionPlan> {
  return rest.get<PromotionPlan>(resourcePath(KPROMO_TYPES.PromotionPlan, ns, name));
}

/** metadata.uid of a plan as it is now: what an approval of the plan a test just read must name. */
export async function uidOf(rest: KubeRest, ns: string, name: string): Promise<string> {
  return (await getPlan(rest, ns, name)).metadata.uid ?? '';
}

export async function waitPlan(
  rest: KubeRest,
  ns: string,
  name: string,
  pred: (p: PromotionPlan) => boolean,
  timeoutMs = 120_000,
  onPoll?: () => Promise<void>,
) {
  return waitFor(
    `plan ${name}`,
    async () => {
      await onPoll?.();
      const p = await getPlan(rest, ns, name);
      return pred(p) ? p : undefined;
    },
    timeoutMs,
  );
}

/**
 * The rollback plan the controller created for `plan` after a failed check or wave: waits until the
 * plan's status.automaticRollbacks binds one (its generated name and the uid its create returned),
 * and reads it, checking the uid is that plan's.
 */
export async function automaticRollbackOf(
  rest: KubeRest,
  ns: string,
  plan: string,
  timeoutMs = 180_000,
): Promise<PromotionPlan> {
  const p = await waitPlan(
    rest,
    ns,
    plan,
    (x) => !!x.status?.automaticRollbacks?.some((r) => r.plan && r.planUID),
    timeoutMs,
  );
  const entry = p.status!.automaticRollbacks!.find((r) => r.plan && r.planUID)!;
  const rb = await getPlan(rest, ns, entry.plan!);
  if (rb.metadata.uid !== entry.planUID)
    throw new Error(
      `plan ${plan} binds uid ${entry.planUID}, but PromotionPlan ${entry.plan} has uid ${rb.metadata.uid}`,
    );
  return rb;
}

/** Digest the registry serves for repo:tag (HEAD with manifest Accept headers). */
export async function registryDigest(host: string, repo: string, ref: string): Promise<string | undefined> {
  const res = await fetch(`http://${host}/v2/${repo}/manifests/${ref}`, {
    method: 'HEAD',
    headers: {
      accept: [
        'application/vnd.oci.image.index.v1+json',
        'application/vnd.oci.image.manifest.v1+json',
        'application/vnd.docker.distribution.manifest.v2+json',
        'application/vnd.docker.distribution.manifest.list.v2+json',
      ].join(', '),
    },
  });
  return res.ok ? (res.headers.get('docker-content-digest') ?? undefined) : undefined;
}

export { pushTestImage };

/** Events recorded for an object, by reason. */
export async function eventReasons(rest: KubeRest, ns: string, name: string): Promise<string[]> {
  const l = await rest.get<{ items: Array<{ reason: string; involvedObject: { name: string; kind: string } }> }>(
    `/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name=${name}`,
  );
  return l.items.filter((e) => e.involvedObject.kind === 'PromotionPlan').map((e) => e.reason);
}

export const HELMRELEASE_CRD = 'helmreleases.helm.toolkit.fluxcd.io';

/**
 * Installs the real Flux HelmRelease CRD (generated by test/flux/crdgen.sh from
 * github.com/fluxcd/helm-controller/api, version in test/cluster/versions.env) in the cluster of
 * `rest`, so every HelmRelease written there, kpromo's patches included, is validated by the real
 * v2 schema; waits until it is served. Returns whether this call created it (then the caller
 * deletes it when done).
 */
export async function ensureHelmReleaseCrd(rest: KubeRest): Promise<boolean> {
  const existed = !!(await rest.getOrUndefined(
    `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${HELMRELEASE_CRD}`,
  ));
  await installFluxApiCrds(rest.kc, ['helmreleases']);
  await waitFor('HelmRelease CRD served', async () => rest.getOrUndefined('/apis/helm.toolkit.fluxcd.io/v2'), 30_000);
  return !existed;
}

export async function deleteHelmReleaseCrd(rest: KubeRest) {
  await rest
    .delete(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${HELMRELEASE_CRD}`)
    .catch(() => undefined);
}

/** The chart every test HelmRelease names (nothing fetches it: helm-controller is not run). */
export const TEST_CHART = { name: 'web', version: '1.4.2', appVersion: '2.0.0' };

/**
 * Applies a valid `helm.toolkit.fluxcd.io/v2` HelmRelease (chart from a HelmRepository, as Flux's
 * docs show it), retried while a freshly installed CRD is not served for writes yet.
 */
export async function applyHelmRelease(rest: KubeRest, ns: string, name: string, values: Record<string, unknown>) {
  await waitFor(
    `HelmRelease ${name}`,
    async () => {
      await rest.apply(
        resourcePath(HELMRELEASE, ns, name),
        {
          apiVersion: 'helm.toolkit.fluxcd.io/v2',
          kind: 'HelmRelease',
          metadata: { name, namespace: ns },
          spec: {
            interval: '10m',
            releaseName: name,
            chart: {
              spec: {
                chart: TEST_CHART.name,
                version: TEST_CHART.version,
                sourceRef: { kind: 'HelmRepository', name: 'charts', namespace: 'flux-system' },
              },
            },
            upgrade: { remediation: { retries: 0 } },
            values,
          },
        },
        'ctl-test',
      );
      return true;
    },
    30_000,
  );
}

type HelmCondition = {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration: number;
  lastTransitionTime: string;
};
type HelmSnapshot = Record<string, unknown> & { version: number; status: string };
type TestHelmValues = {
  image?: { repository?: string; tag?: string; digest?: string };
  canary?: { steps?: unknown[] };
};
interface TestHelmRelease {
  metadata: { name: string; namespace: string; generation: number; resourceVersion?: string };
  spec: { values?: TestHelmValues };
  status?: { observedGeneration?: number; lastAttemptedGeneration?: number; history?: HelmSnapshot[] };
}

const sha256 = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

/**
 * What the chart of a played HelmRelease renders `values.image` (repository:tag@digest) into, named
 * as the HelmRelease: a Deployment (one replica), or an Argo Rollout (two replicas, canary with the
 * steps in `values.canary.steps`, none by default). Both tolerate kwok's fake node.
 */
export type HelmChartRender = 'Deployment' | 'Rollout';

/** How {@link playHelmController} plays one reconciliation besides its outcome. */
export interface HelmControllerPlay {
  /** What the chart renders (default Deployment). */
  render?: HelmChartRender;
  /**
   * Runs after the manifests are applied and before the status is written, as Helm's `--wait`
   * (helm-controller's default) waits for the released resources; e.g. until a Rollout is healthy.
   */
  wait?: () => Promise<void>;
}

/** The Rollout a played chart renders (argoproj.io/v1alpha1, applied server-side). */
async function applyChartRollout(rest: KubeRest, ns: string, name: string, image: string, steps: unknown[]) {
  await rest.apply(
    resourcePath(ROLLOUT, ns, name),
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Rollout',
      metadata: { name, namespace: ns, labels: { app: name } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: { tolerations: [{ operator: 'Exists' }], containers: [{ name: 'main', image }] },
        },
        strategy: { canary: { steps } },
      },
    },
    'ctl-test',
  );
}

/** Applies what the chart renders for `values` (nothing without an image repository and tag). */
async function renderChart(rest: KubeRest, ns: string, name: string, values: TestHelmValues, kind: HelmChartRender) {
  const img = values.image;
  if (!img?.repository || !img.tag) return;
  const image = `${img.repository}:${img.tag}${img.digest ? `@${img.digest}` : ''}`;
  if (kind === 'Rollout') {
    const steps = Array.isArray(values.canary?.steps) ? values.canary.steps : [];
    await applyChartRollout(rest, ns, name, image, steps);
  } else if ((await deploymentImage(rest, ns, name)) !== image) await applyDeployment(rest, ns, name, image);
}

/**
 * PLAYS FLUX'S HELM-CONTROLLER, which these tests do not run: it cannot be built here (the module
 * proxy does not serve github.com/fluxcd/helm-controller), and only its CRD schema is real. For a
 * HelmRelease generation not reconciled yet it does what helm-controller does after a Helm upgrade
 * and writes the status the way helm-controller writes it (api/v2 HelmReleaseStatus,
 * docs/spec/v2/helmreleases.md), through the status subresource, so the real schema validates it:
 * - `released`: renders `values.image` into the workload of the same name (see
 *   {@link HelmChartRender}; `play.render`), as the chart would, runs `play.wait`, then Ready=True
 *   and Released=True (UpgradeSucceeded) for the generation, a new `deployed` snapshot first in
 *   `status.history` (the previous one superseded);
 * - `failed`: leaves the workload alone, unless `afterApply` (the upgrade failed after Helm applied
 *   the manifests: a post-upgrade hook or `--wait` failed), then renders and runs `play.wait` first;
 *   Ready=False and Released=False (UpgradeFailed) with `message`, Stalled=True (RetriesExceeded: no
 *   upgrade retries), a `failed` snapshot first.
 * Both set observedGeneration, lastAttemptedGeneration, lastAttemptedRevision (chart version),
 * lastAttemptedReleaseAction and lastAttemptedConfigDigest. A generation already reconciled is left
 * as is, so it can run on every poll. Returns whether it wrote a status.
 */
export async function playHelmController(
  rest: KubeRest,
  ns: string,
  name: string,
  outcome: { released: true } | { failed: string; afterApply?: boolean },
  play: HelmControllerPlay = {},
): Promise<boolean> {
  const path = resourcePath(HELMRELEASE, ns, name);
  const hr = await rest.get<TestHelmRelease>(path);
  const gen = hr.metadata.generation;
  if (hr.status?.lastAttemptedGeneration === gen) return false;
  const values = hr.spec.values ?? {};
  const ok = 'released' in outcome;
  if (ok || outcome.afterApply) {
    await renderChart(rest, ns, name, values, play.render ?? 'Deployment');
    await play.wait?.();
  }
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const previous = (hr.status?.history ?? []).map((h) =>
    h.status === 'deployed' ? { ...h, status: 'superseded' } : h,
  );
  const revision = (previous[0]?.version ?? 0) + 1;
  const configDigest = sha256(JSON.stringify(values));
  const snapshot: HelmSnapshot = {
    name,
    namespace: ns,
    version: revision,
    status: ok ? 'deployed' : 'failed',
    action: revision === 1 ? 'install' : 'upgrade',
    chartName: TEST_CHART.name,
    chartVersion: TEST_CHART.version,
    appVersion: TEST_CHART.appVersion,
    configDigest,
    digest: sha256(`${name}.v${revision}:${configDigest}`),
    firstDeployed: (previous.at(-1)?.firstDeployed as string | undefined) ?? now,
    lastDeployed: now,
  };
  const release = `${ns}/${name}.v${revision} with chart ${TEST_CHART.name}@${TEST_CHART.version}`;
  const c = (type: string, status: string, reason: string, message: string): HelmCondition => ({
    type,
    status,
    reason,
    message,
    observedGeneration: gen,
    lastTransitionTime: now,
  });
  const conditions = ok
    ? [
        c('Ready', 'True', 'UpgradeSucceeded', `Helm upgrade succeeded for release ${release}`),
        c('Released', 'True', 'UpgradeSucceeded', `Helm upgrade succeeded for release ${release}`),
      ]
    : [
        c('Stalled', 'True', 'RetriesExceeded', 'Failed to upgrade after 1 attempt(s)'),
        c('Ready', 'False', 'UpgradeFailed', `Helm upgrade failed for release ${release}: ${outcome.failed}`),
        c('Released', 'False', 'UpgradeFailed', `Helm upgrade failed for release ${release}: ${outcome.failed}`),
      ];
  await rest.mergePatch(`${path}/status`, {
    status: {
      observedGeneration: gen,
      lastAttemptedGeneration: gen,
      lastAttemptedRevision: TEST_CHART.version,
      lastAttemptedReleaseAction: snapshot.action === 'install' ? 'install' : 'upgrade',
      lastAttemptedConfigDigest: configDigest,
      conditions,
      // helm-controller keeps the releases down to the previous successful one.
      history: [snapshot, ...previous.slice(0, previous.findIndex((h) => h.status !== 'failed') + 1)],
      ...(ok ? { failures: 0, upgradeFailures: 0 } : { failures: 1, upgradeFailures: 1 }),
    },
  });
  return true;
}

/** How a seeded release's Applications are written: per app, its owner, labels and dependsOn. */
export interface WorldApplications {
  owner?: (app: string) => string;
  labels?: (app: string) => Record<string, string>;
  /** spec.dependsOn: the order of the release (none when it answers undefined or []). */
  dependsOn?: (app: string) => string[] | undefined;
}

/**
 * A two-stage release for API-level tests: each app runs `newTag` in dev (dev registry) and
 * `oldTag` in stable (release registry under `stable/`), both pinned by digest; Environments dev and
 * stable (patch delivery) and a PromotionFlow "main" over all apps (`flow` adds to its spec). Waits
 * until dev is Ready. With `applications`, also an Application per app (Deployment workload, image
 * `<repo>/<app>`; owner `team-a` unless given).
 */
export async function seedTwoStageRelease(o: {
  dev: KubeRest;
  stable: KubeRest;
  ns: string;
  appsNs: string;
  source: string;
  target: string;
  repo: string;
  apps: readonly string[];
  newTag: string;
  oldTag: string;
  seed: string;
  applications?: WorldApplications;
  /** What the flow "main" adds to its spec; `false`: no flow "main" (the test writes its own flows). */
  flow?: Record<string, unknown> | false;
}): Promise<{ devDigest: Record<string, string>; stableOld: Record<string, string> }> {
  const devDigest: Record<string, string> = {};
  const stableOld: Record<string, string> = {};
  for (const c of [o.dev, o.stable]) await ensureNs(c, o.appsNs);
  for (const app of o.apps) {
    devDigest[app] = (
      await pushTestImage({
        host: o.source,
        repository: `${o.repo}/${app}`,
        tag: o.newTag,
        seed: `${o.seed}-new-${app}`,
      })
    ).digest;
    stableOld[app] = (
      await pushTestImage({
        host: o.target,
        repository: `stable/${o.repo}/${app}`,
        tag: o.oldTag,
        seed: `${o.seed}-old-${app}`,
      })
    ).digest;
    await applyDeployment(o.dev, o.appsNs, app, `${o.source}/${o.repo}/${app}:${o.newTag}@${devDigest[app]}`);
    await applyDeployment(o.stable, o.appsNs, app, `${o.target}/stable/${o.repo}/${app}:${o.oldTag}@${stableOld[app]}`);
  }
  for (const app of o.apps) await waitReady(o.dev, o.appsNs, app);
  const env = (name: string, registry: object) => ({
    kind: 'Environment',
    metadata: { name, namespace: o.ns },
    spec: { cluster: { context: name }, namespace: o.appsNs, registry, delivery: { method: 'patch' } },
  });
  await applyCr(o.dev, env('dev', { host: o.source, insecure: true }));
  await applyCr(o.dev, env('stable', { host: o.target, prefix: 'stable', insecure: true }));
  if (o.flow !== false)
    await applyCr(o.dev, {
      kind: 'PromotionFlow',
      metadata: { name: 'main', namespace: o.ns },
      spec: {
        stages: [{ environment: 'dev' }, { environment: 'stable' }],
        selector: { applications: ['*'] },
        rolloutTimeoutSeconds: 120,
        ...o.flow,
      },
    });
  if (o.applications)
    for (const app of o.apps)
      await applyCr(o.dev, {
        kind: 'Application',
        metadata: { name: app, namespace: o.ns, labels: o.applications.labels?.(app) },
        spec: {
          owner: o.applications.owner?.(app) ?? 'team-a',
          image: { repository: `${o.repo}/${app}` },
          workloads: [{ kind: 'Deployment', name: app }],
          ...(o.applications.dependsOn?.(app)?.length ? { dependsOn: o.applications.dependsOn(app) } : {}),
        },
      });
  return { devDigest, stableOld };
}

const GROUP = 'promotions.kpromo.dev';
/** Read access to what a person needs to see to release. */
const READ_ALL = {
  apiGroups: [GROUP],
  resources: ['applications', 'environments', 'promotionflows', 'promotionplans'],
  verbs: ['get', 'list', 'watch'],
};

/** The harness registries (`inject('registries')`): dev pulls from `source`, stable from `target`. */
export interface TestRegistries {
  source: string;
  target: string;
}

/** What a {@link TwoStageWorld} is made of. */
export interface TwoStageWorldOptions {
  kubeconfig: string;
  registries: TestRegistries;
  apps: readonly string[];
  /**
   * The Applications of the apps ({@link seedTwoStageRelease}'s `applications`; default owner
   * team-a); `false`: none (the test writes its own).
   */
  applications?: WorldApplications | false;
  /** The tags of the release: `new` runs in dev, `old` in stable (default v2.0.0 and v1.0.0). */
  tags?: { new: string; old: string };
  /**
   * What the flow "main" adds to its spec ({@link seedTwoStageRelease}'s `flow`); `false`: no flow
   * "main", for a file whose apps each have a flow of their own (two flows may not govern one app).
   */
  flow?: Record<string, unknown> | false;
}

/** What a release of a {@link TwoStageWorld} is seeded with (the world's own takes its options). */
export type WorldReleaseOptions = Pick<TwoStageWorldOptions, 'apps' | 'applications' | 'flow' | 'tags'>;

/** Another release of a {@link TwoStageWorld} ({@link TwoStageWorld.release}): its names, and its digests once seeded. */
export interface WorldRelease {
  /** Its control namespace, `<prefix>-<name>-<run>`. */
  readonly ns: string;
  /** The namespace of its workloads in dev and stable, `<prefix>-<name>-apps-<run>`. */
  readonly appsNs: string;
  /** Its image repository, `<prefix><name><run>`. */
  readonly repo: string;
  devDigest: Record<string, string>;
  stableOld: Record<string, string>;
}

/**
 * One test file's world on the local clusters (dev is the control cluster), the one most API-level
 * tests run in: the run's names (namespaces, image repository, users), the release of
 * {@link seedTwoStageRelease} (`apps` at v2.0.0 in dev, v1.0.0 in stable unless `tags` say
 * otherwise, an Application each), a second tenant's release if the file declares one
 * ({@link TwoStageWorld.release}), and an in-process controller. Nothing touches a cluster before
 * {@link TwoStageWorld.seed}; `stop()` (afterAll) removes what it made. {@link verificationWorld}
 * and {@link insiderWorld} build on it.
 */
export class TwoStageWorld {
  readonly run: string;
  /** The namespace of the kpromo CRs. */
  readonly ns: string;
  /** The namespace of the workloads, in dev and stable. */
  readonly appsNs: string;
  /** The image repository of the apps: `<repo>/<app>` in dev, `stable/<repo>/<app>` in stable. */
  readonly repo: string;
  readonly dev: KubeRest;
  readonly stable: KubeRest;
  readonly source: string;
  readonly target: string;
  /** API path of the CR namespace: `${base}/promotionplans/<name>`. */
  readonly base: string;
  /** The tags of the release: `new` runs in dev, `old` in stable. */
  readonly tags: { new: string; old: string };
  /** Per app, the digest seeded in dev (tag `tags.new`) and the one seeded in stable (`tags.old`). */
  devDigest: Record<string, string> = {};
  stableOld: Record<string, string> = {};
  ctl?: Running;
  /** Control namespaces besides `ns` ({@link TwoStageWorld.namespace}). */
  private readonly others: string[] = [];
  /** Releases besides the world's own ({@link TwoStageWorld.release}). */
  private readonly releases: Array<{ release: WorldRelease; options: WorldReleaseOptions }> = [];

  constructor(
    readonly prefix: string,
    readonly options: TwoStageWorldOptions,
  ) {
    const names = runNamespaces(prefix);
    this.run = names.run;
    this.ns = names.ns;
    this.appsNs = names.apps;
    this.repo = `${prefix}${names.run}`;
    this.dev = restFor(options.kubeconfig, 'dev');
    this.stable = restFor(options.kubeconfig, 'stable');
    this.source = options.registries.source;
    this.target = options.registries.target;
    this.base = `/apis/${GROUP}/v1alpha1/namespaces/${this.ns}`;
    this.tags = options.tags ?? { new: 'v2.0.0', old: 'v1.0.0' };
  }

  /** A static-token user of this run (name and token carry the run, so runs do not collide). */
  readonly user = (name: string, groups: string[] = []): TestUser => ({
    token: `${name}-${this.run}-0123456789abcdef`,
    username: `${name}-${this.run}`,
    groups,
  });

  /** Another control namespace of this run, `<prefix>-<name>-<run>`: created by seed(), deleted by stop(). */
  namespace(name: string): string {
    const ns = `${this.prefix}-${name}-${this.run}`;
    this.others.push(ns);
    return ns;
  }

  /**
   * Another release of this run, for a file with a second tenant: in control namespace
   * {@link TwoStageWorld.namespace}(`name`), seeded by seed() after the world's own as
   * {@link seedTwoStageRelease} seeds it (`options` as the world's, defaults alike), deleted by stop().
   */
  release(name: string, options: WorldReleaseOptions): WorldRelease {
    const release: WorldRelease = {
      ns: this.namespace(name),
      appsNs: `${this.prefix}-${name}-apps-${this.run}`,
      repo: `${this.prefix}${name}${this.run}`,
      devDigest: {},
      stableOld: {},
    };
    this.releases.push({ release, options });
    return release;
  }

  /**
   * A PromotionFlow `name` of `ns` (write it with {@link applyCr}) from `from` to stable over `apps`,
   * `stableStage` adding to the stable stage; rollouts get 120 s. For a file whose apps go by flows
   * of their own, each with its own gate.
   */
  readonly flowOf = (name: string, apps: string[], stableStage: Record<string, unknown> = {}, from = 'dev') => ({
    kind: 'PromotionFlow',
    metadata: { name, namespace: this.ns },
    spec: {
      stages: [{ environment: from }, { environment: 'stable', ...stableStage }],
      selector: { applications: apps },
      rolloutTimeoutSeconds: 120,
    },
  });

  /** The control cluster as `who` (impersonation, as `kubectl --as`). */
  readonly as = (who: TestUser): KubeRest => this.dev.as({ username: who.username, groups: who.groups ?? [] });

  /** Installs the CRDs and admission policies, creates the namespaces and seeds the release. */
  async seed(): Promise<void> {
    await applyCrds(kubeConfigFor('dev', this.options.kubeconfig));
    for (const ns of [this.ns, ...this.others]) await ensureNs(this.dev, ns);
    ({ devDigest: this.devDigest, stableOld: this.stableOld } = await this.seedRelease(
      { ns: this.ns, appsNs: this.appsNs, repo: this.repo },
      this.options,
    ));
    for (const { release, options } of this.releases)
      ({ devDigest: release.devDigest, stableOld: release.stableOld } = await this.seedRelease(release, options));
  }

  private seedRelease({ ns, appsNs, repo }: { ns: string; appsNs: string; repo: string }, o: WorldReleaseOptions) {
    const tags = o.tags ?? { new: 'v2.0.0', old: 'v1.0.0' };
    return seedTwoStageRelease({
      dev: this.dev,
      stable: this.stable,
      ns,
      appsNs,
      source: this.source,
      target: this.target,
      repo,
      apps: o.apps,
      newTag: tags.new,
      oldTag: tags.old,
      // The images' content: unique to the release and the run.
      seed: ns,
      applications: o.applications === false ? undefined : (o.applications ?? {}),
      flow: o.flow,
    });
  }

  /**
   * Starts the controller on `ns` (no leader election; `flags` over {@link controllerConfig}'s, so
   * `kubeconfig` or `auth` there replace the world's) for `users`, with `opts` (a logger of the
   * test's, `customize`), and waits until its cache holds both Environments, synced, and the flow
   * `flow` (none with `null`; by default "main" unless the world has no flow "main").
   */
  async start(
    flags: Record<string, unknown> = {},
    users: TestUser[] = [],
    flow: string | null = this.options.flow === false ? null : 'main',
    opts: StartOptions = {},
  ): Promise<Running> {
    // Logs at warn whatever the flags say (the controller's logger follows the config's logLevel).
    const ctl = await startController(
      controllerConfig(
        this.options.kubeconfig,
        this.ns,
        { leaderElection: { enabled: false }, ...flags, logLevel: 'warn' },
        users,
      ),
      opts,
    );
    this.ctl = ctl;
    await waitFor(
      'cache warm',
      async () => {
        const envs = ctl.controller.cache.environments(this.ns);
        return (
          ['dev', 'stable'].every((name) =>
            envs.some((e) => e.metadata.name === name && ctl.controller.cache.environmentSynced(e)),
          ) &&
          (flow === null || ctl.controller.cache.getFlow(this.ns, flow) !== undefined)
        );
      },
      60_000,
    );
    return ctl;
  }

  /**
   * Throws unless nothing of `app` reached stable: its workload still runs the digest seeded there,
   * and stable's registry holds no tag but the seeded one (`tags.old`).
   */
  readonly untouched = async (app: string): Promise<void> => {
    const image = await deploymentImage(this.stable, this.appsNs, app);
    if (!image?.includes(this.stableOld[app]))
      throw new Error(`stable ${this.appsNs}/${app} runs ${image}, not the seeded ${this.stableOld[app]}`);
    const tags = await fetch(`http://${this.target}/v2/stable/${this.repo}/${app}/tags/list`).then(
      (r) => r.json() as Promise<{ tags?: string[] }>,
    );
    if (JSON.stringify(tags.tags ?? []) !== JSON.stringify([this.tags.old]))
      throw new Error(`stable/${this.repo}/${app} has tags ${JSON.stringify(tags.tags)}, not just ${this.tags.old}`);
  };

  /** Stops the controller, then what the world started for it, and deletes the namespaces (missing ones are fine). */
  async stop(): Promise<void> {
    await this.ctl?.stop().catch(() => undefined);
    await this.stopServices();
    for (const ns of [this.ns, ...this.others]) await deleteNs(this.dev, ns);
    for (const c of [this.dev, this.stable])
      for (const ns of [this.appsNs, ...this.releases.map((r) => r.release.appsNs)]) await deleteNs(c, ns);
  }

  /** What a world adds stops here (after the controller, before the namespaces go). */
  protected async stopServices(): Promise<void> {}
}

export const twoStageWorld = (prefix: string, o: TwoStageWorldOptions) => new TwoStageWorld(prefix, o);

/** The verification world's stage check: an app's error ratio over the last 10 s, as a team would write it. */
export const ERROR_RATE =
  'sum(rate(http_requests_total{app="{application}",code="500"}[10s])) / sum(rate(http_requests_total{app="{application}"}[10s]))';

/**
 * A {@link TwoStageWorld} whose stable stage is verified by a real Prometheus (built by
 * test/prometheus/build.sh; the file must `await needComponents('prometheus')`) scraping a metrics
 * endpoint the test feeds: stable's Environment names it, and the flow "main" checks
 * {@link ERROR_RATE} ≤ 0.05 over 6 s (every 2 s, 2 samples at least) and rolls the whole release
 * back when a check fails. Release managers may create, approve and roll back plans.
 */
export class VerificationWorld extends TwoStageWorld {
  metrics?: MetricsEndpoint;
  prom?: Prometheus;

  /**
   * Starts the metrics endpoint (`traffic` sets what it serves) and Prometheus, seeds the release,
   * points stable at Prometheus, writes the flow (`flow` adds to its spec) and grants the
   * `releaseManagers`.
   */
  async setUp(o: {
    traffic: (metrics: MetricsEndpoint) => void;
    flow?: Record<string, unknown>;
    releaseManagers: TestUser[];
  }): Promise<void> {
    this.metrics = await startMetricsEndpoint();
    o.traffic(this.metrics);
    this.prom = await startPrometheus({ targets: [this.metrics.target] });
    await this.prom.waitForTargets();
    await this.seed();
    await applyCr(this.dev, {
      kind: 'Environment',
      metadata: { name: 'stable', namespace: this.ns },
      spec: {
        cluster: { context: 'stable' },
        namespace: this.appsNs,
        registry: { host: this.target, prefix: 'stable', insecure: true },
        delivery: { method: 'patch' },
        metrics: { prometheus: { url: this.prom.url } },
      },
    });
    await applyCr(this.dev, {
      kind: 'PromotionFlow',
      metadata: { name: 'main', namespace: this.ns },
      spec: {
        stages: [
          { environment: 'dev' },
          {
            environment: 'stable',
            verification: {
              checks: [{ name: 'error-rate', prometheus: { query: ERROR_RATE, max: 0.05 } }],
              window: '6s',
              interval: '2s',
              minSamples: 2,
              onFailure: 'rollbackRelease',
            },
          },
        ],
        selector: { applications: ['*'] },
        rolloutTimeoutSeconds: 120,
        ...o.flow,
      },
    });
    await grantRole(
      this.dev,
      this.ns,
      'release-manager',
      [
        {
          apiGroups: [GROUP],
          resources: ['promotionplans'],
          verbs: ['get', 'list', 'create', 'patch', 'approve', 'rollback'],
        },
        { apiGroups: [GROUP], resources: ['applications', 'environments', 'promotionflows'], verbs: ['get', 'list'] },
      ],
      o.releaseManagers,
    );
  }

  protected override async stopServices(): Promise<void> {
    await this.prom?.stop().catch(() => undefined);
    await this.metrics?.close().catch(() => undefined);
  }
}

export const verificationWorld = (prefix: string, o: TwoStageWorldOptions) => new VerificationWorld(prefix, o);

/**
 * The roles insiders hold in {@link insiderWorld}, each bound (as a Role of that name) to the
 * insiders given it; a person's group is the role's, as examples/deploy/rbac-examples.yaml binds
 * its roles to groups.
 */
export const INSIDER_ROLES = {
  /**
   * The example kpromo-developer (creates plans, approves into stable) plus the edit rights a team
   * often has on its Applications, flows and Environments, and even on status: admission must hold
   * without relying on RBAC being narrow.
   */
  developer: {
    group: 'shop-developers',
    role: 'developers',
    rules: [
      READ_ALL,
      { apiGroups: [GROUP], resources: ['promotionplans'], verbs: ['create', 'patch', 'delete'] },
      { apiGroups: [GROUP], resources: ['environments'], resourceNames: ['stable'], verbs: ['approve'] },
      {
        apiGroups: [GROUP],
        resources: ['applications', 'promotionflows', 'environments'],
        verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'],
      },
      { apiGroups: [GROUP], resources: ['promotionplans/status', 'applications/status'], verbs: ['update', 'patch'] },
    ],
  },
  /** Approves anywhere in the namespace, rolls back, overrides a freeze. */
  'release-manager': {
    group: 'release-managers',
    role: 'release-managers',
    rules: [
      READ_ALL,
      {
        apiGroups: [GROUP],
        resources: ['promotionplans'],
        verbs: ['create', 'patch', 'approve', 'rollback', 'override-freeze'],
      },
    ],
  },
  /** The example kpromo-platform-admin: edits release policy and holds govern. */
  'platform-admin': {
    group: 'platform-admins',
    role: 'platform-admins',
    rules: [
      {
        apiGroups: [GROUP],
        resources: ['applications', 'environments', 'promotionflows', 'notifications'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
      },
      { apiGroups: [GROUP], resources: ['environments', 'promotionflows', 'applications'], verbs: ['govern'] },
    ],
  },
} as const;
export type InsiderRole = keyof typeof INSIDER_ROLES;

/**
 * A {@link TwoStageWorld} of insiders with ordinary roles ({@link INSIDER_ROLES}), where the attack
 * tests next to approvedIsWhatRuns.int.test.ts run: declare the people at module load with
 * `insider()`, then `setUp()` (seed and grants) and `start()` (the controller knows every insider).
 */
export class InsiderWorld extends TwoStageWorld {
  readonly insiders: Array<{ user: TestUser; role: InsiderRole }> = [];

  /** A person of this run holding `role`, a member of its group. */
  insider(name: string, role: InsiderRole): TestUser {
    const user = this.user(name, [INSIDER_ROLES[role].group]);
    this.insiders.push({ user, role });
    return user;
  }

  /** Seeds the release and grants each insider its role. */
  async setUp(): Promise<void> {
    await this.seed();
    for (const [role, { role: name, rules }] of Object.entries(INSIDER_ROLES)) {
      const holders = this.insiders.filter((i) => i.role === role).map((i) => i.user);
      if (holders.length) await grantRole(this.dev, this.ns, name, [...rules], holders);
    }
  }

  /** Starts the controller for every insider (see {@link TwoStageWorld.start}). */
  override start(
    flags: Record<string, unknown> = {},
    users: TestUser[] = [],
    flow?: string | null,
    opts?: StartOptions,
  ): Promise<Running> {
    return super.start(flags, [...this.insiders.map((i) => i.user), ...users], flow, opts);
  }
}

export const insiderWorld = (prefix: string, o: TwoStageWorldOptions) => new InsiderWorld(prefix, o);

/**
 * The refusal of a write that must be refused (RBAC or admission): its HTTP status and message.
 * Fails the test when the apiserver accepted the write.
 */
export async function rejection(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x as { status: number; message: string },
  );
  // No vitest import here: the benchmarks use these helpers outside the test runner.
  if (!e) throw new Error('the apiserver accepted the write');
  return { status: e.status, message: e.message };
}

/**
 * Waits until admission refuses a dry run of the JSON patch `ops` of `path` by `rest` with a message
 * containing `expected`: the apiserver compiles a new or changed admission policy asynchronously, and
 * a test that attacks right after installing it must attack the policy, not the moment before it.
 */
export async function untilAdmissionRefuses(rest: KubeRest, path: string, ops: unknown[], expected: string) {
  await waitFor(`admission refuses ${path}: ${expected}`, async () => {
    const refused = await rest.jsonPatch(`${path}?dryRun=All`, ops).then(
      () => false,
      (e: unknown) => String((e as { message?: string }).message ?? e).includes(expected),
    );
    return refused || undefined;
  });
}

/** A Role with `rules` in `ns`, bound to `subjects` (users by name). */
export async function grantRole(rest: KubeRest, ns: string, name: string, rules: object[], subjects: TestUser[]) {
  await rest.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name, namespace: ns },
    rules,
  });
  await rest.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace: ns },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: subjects.map((s) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: s.username })),
  });
}

/** A ClusterRole with `rules`, bound cluster-wide to `subjects`; the returned function removes both. */
export async function grantClusterRole(
  rest: KubeRest,
  name: string,
  rules: object[],
  subjects: TestUser[],
): Promise<() => Promise<void>> {
  const rbac = '/apis/rbac.authorization.k8s.io/v1';
  await rest.create(`${rbac}/clusterroles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name },
    rules,
  });
  await rest.create(`${rbac}/clusterrolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: subjects.map((s) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: s.username })),
  });
  return async () => {
    await rest.delete(`${rbac}/clusterrolebindings/${name}`).catch(() => undefined);
    await rest.delete(`${rbac}/clusterroles/${name}`).catch(() => undefined);
  };
}

/**
 * A kubeconfig file (in a fresh temp directory) for the `dev` cluster as ServiceAccount `sa` of
 * `ns`, created here, with a token from the TokenRequest API: a real identity holding only what a
 * test grants it. Its context `dev` defaults to `ns`.
 */
export async function serviceAccountKubeconfig(kubeconfig: string, ns: string, sa: string): Promise<string> {
  const dev = restFor(kubeconfig, 'dev');
  await dev.create(`/api/v1/namespaces/${ns}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: sa, namespace: ns },
  });
  const tr = await dev.create<{ status: { token: string } }>(`/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  const cluster = kubeConfigFor('dev', kubeconfig).getCurrentCluster()!;
  const file = join(mkdtempSync(join(tmpdir(), 'kpromo-sa-')), `${sa}.kubeconfig`);
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'dev',
          cluster: {
            server: cluster.server,
            ...(cluster.caData
              ? { 'certificate-authority-data': cluster.caData }
              : { 'certificate-authority': cluster.caFile }),
          },
        },
      ],
      users: [{ name: sa, user: { token: tr.status.token } }],
      // The context's namespace is the CLI's default namespace, as for kubectl.
      contexts: [{ name: 'dev', context: { cluster: 'dev', user: sa, namespace: ns } }],
      'current-context': 'dev',
    }),
  );
  return file;
}

/** What a kubectl run returned: exit code and output (a refusal is exit 1 with the apiserver's message on stderr). */
export interface KubectlRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * A person at a terminal: the pinned kubectl (test/cluster/kubectl.sh; call needComponents('kubectl')
 * first) with `kubeconfigFile` as KUBECONFIG. Never throws on exit ≠ 0: the test reads the refusal.
 */
export async function kubectl(kubeconfigFile: string, ...args: string[]): Promise<KubectlRun> {
  try {
    const r = await promisify(execFile)(kubectlPath(), args, {
      env: { ...process.env, KUBECONFIG: kubeconfigFile },
      maxBuffer: 16 << 20,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    if (typeof x.code !== 'number') throw e;
    return { code: x.code, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

/**
 * Lists `username` as a kpromo controller, under `key`, in the admission policies' controller
 * identity parameter (the ConfigMap applyCrds installs, naming the harness admin), and waits until
 * admission recognises it: a dry-run status write of `statusPath` by `asController` (that identity)
 * is accepted. For a test running its controller as another identity (a ServiceAccount). Returns
 * what removes the entry again: the ConfigMap is shared by every test file.
 */
export async function trustControllerUsername(
  admin: KubeRest,
  key: string,
  username: string,
  asController: KubeRest,
  statusPath: string,
): Promise<() => Promise<void>> {
  const path = `/api/v1/namespaces/${CONTROLLER_IDENTITY.namespace}/configmaps/${CONTROLLER_IDENTITY.name}`;
  await admin.mergePatch(path, { data: { [key]: username } });
  await waitFor(`admission recognises ${username} as the kpromo controller`, async () =>
    asController.mergePatch(`${statusPath}?dryRun=All`, { status: {} }).then(
      () => true,
      () => undefined,
    ),
  );
  return async () => {
    await admin.mergePatch(path, { data: { [key]: null } }).catch(() => undefined);
  };
}

/**
 * RBAC rules of a kpromo user of one namespace as examples/deploy/rbac-examples.yaml grants them:
 * kpromo-viewer's reads, `create` and `patch` on plans (a plan creator, as kpromo-developer), and
 * with `approveInto` the approve verb for those Environments only. For {@link grantRole}.
 */
export function planUserRules(o: { approveInto?: string[] } = {}): object[] {
  const group = 'promotions.kpromo.dev';
  return [
    {
      apiGroups: [group],
      resources: ['applications', 'environments', 'promotionflows', 'promotionplans'],
      verbs: ['get', 'list', 'watch'],
    },
    { apiGroups: [group], resources: ['promotionplans'], verbs: ['create', 'patch'] },
    ...(o.approveInto?.length
      ? [{ apiGroups: [group], resources: ['environments'], resourceNames: o.approveInto, verbs: ['approve'] }]
      : []),
  ];
}

/** The tags a test registry lists for a repository (none for a repository never pushed). */
export async function registryTags(host: string, repository: string): Promise<string[]> {
  const r = await fetch(`http://${host}/v2/${repository}/tags/list`);
  if (r.status === 404) return [];
  if (!r.ok) throw new Error(`GET ${host}/v2/${repository}/tags/list: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { tags?: string[] | null }).tags ?? [];
}
