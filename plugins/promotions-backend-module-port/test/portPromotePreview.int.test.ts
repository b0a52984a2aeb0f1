// Port's promote action shows the candidates before it runs (issue 48), end to end on the real
// control plane: the action definition examples/port/kpromo_promote.json, a signed Port webhook
// delivery to the real promotions backend plugin with the Port module, the real controller and the
// real kube-apiserver with the admission policies. Port cannot run here, so this test plays Port's
// part: it renders the definition's webhook body template ({{ jq }} leaves, evaluated with jq over
// the run context as Port does), signs it with the client secret and receives the run reports in
// the spec-validating Port stand-in. The person sees what the preview run reported, and only that.
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestBackend } from '@backstage/backend-test-utils';
import type { PromotionPlan } from '@kpromo/api';
import { type Running, startController } from '@kpromo/controller';
import { runJq } from '@kpromo/exporter';
import { promotionsPlugin } from '@kpromo/plugin-promotions-backend';
import { applyCrds, kubeConfigFor, waitFor } from '@kpromo/test-harness';
import { startBackstageTestBackend } from '@kpromo/test-harness/backstage';
import {
  applyDeployment,
  callApi,
  controllerConfig,
  deleteNs,
  deploymentImage,
  ensureNs,
  grantClusterRole,
  grantRole,
  pushTestImage,
  restFor,
  runNamespaces,
  seedTwoStageRelease,
  type TestUser,
  waitReady,
} from '@kpromo/test-harness/controller';
import { PortStandIn } from '@kpromo/test-harness/port';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { promotionsModulePort } from '../src/index.js';

const names = runNamespaces('ppv');
const NS = names.ns;
const APPS_NS = names.apps;
const REPO = `ppv${names.run}`;
const PORT_ID = `ppv-client-${names.run}`;
const PORT_SECRET = `ppv-secret-${names.run}-0123456789`;
const ALICE = 'alice@example.com';
const GROUP = 'promotions.kpromo.dev';
/** The backend's token user: impersonates the Port identities only, holds no kpromo rights. */
const backendUser: TestUser = {
  token: `ppv-backend-${names.run}-0123456789abcdef`,
  username: `ppv-backend-${names.run}`,
};
/** port:alice reads, creates plans and approves into stable. */
const portAlice: TestUser = { token: `ppv-unused-${names.run}-0123456789abcdef`, username: `port:${ALICE}` };

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const promoteAction = JSON.parse(readFileSync(join(root, 'examples/port/kpromo_promote.json'), 'utf8')) as {
  identifier: string;
  invocationMethod: { body: object };
};
const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
const standIn = new PortStandIn(PORT_ID, PORT_SECRET);
let ctl: Running;
let backend: TestBackend;
let base = '';
let revokeImpersonation: () => Promise<void> = async () => {};
let devDigest: Record<string, string> = {};
let stableOld: Record<string, string> = {};

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

/** Plays Port running kpromo_promote on the cart entity with the user's `inputs`; waits for the run's end. */
async function promoteRun(inputs: object) {
  const runId = `r_promote_${Math.random().toString(36).slice(2, 9)}`;
  const body = await render(promoteAction.invocationMethod.body, {
    run: { id: runId },
    action: { identifier: promoteAction.identifier },
    trigger: { by: { user: { email: ALICE } } },
    inputs,
    // The exporter's kpromoApplication entity: identifier cluster:namespace:name.
    entity: { identifier: `dev:${NS}:cart`, properties: { namespace: NS } },
  });
  const raw = JSON.stringify(body);
  const ts = String(Date.now());
  const res = await fetch(`${base}/api/promotions/port/webhook`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-port-timestamp': ts,
      'x-port-signature': `v1,${createHmac('sha256', PORT_SECRET).update(`${ts}.${raw}`).digest('base64')}`,
    },
    body: raw,
  });
  expect(res.status, await res.clone().text()).toBe(202);
  const end = (await waitFor(
    `Port run ${runId} reported`,
    async () => standIn.runs.get(runId)?.patches.find((p) => p.status),
    180_000,
  )) as { status: string; statusLabel: string; summary: string };
  return { ...end, logs: (standIn.runs.get(runId)?.logs ?? []).map((l) => String(l.message)) };
}

const plans = async () =>
  (await dev.get<{ items: PromotionPlan[] }>(`/apis/${GROUP}/v1alpha1/namespaces/${NS}/promotionplans`)).items;

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await ensureNs(dev, NS);
  ({ devDigest, stableOld } = await seedTwoStageRelease({
    dev,
    stable,
    ns: NS,
    appsNs: APPS_NS,
    source,
    target,
    repo: REPO,
    apps: ['cart'],
    newTag: 'v2.0.0',
    oldTag: 'v1.0.0',
    seed: `ppv-${names.run}`,
    applications: {},
  }));
  revokeImpersonation = await grantClusterRole(
    dev,
    backendUser.username,
    [{ apiGroups: [''], resources: ['users'], verbs: ['impersonate'], resourceNames: [portAlice.username] }],
    [backendUser],
  );
  await grantRole(
    dev,
    NS,
    'port-releaser',
    [
      {
        apiGroups: [GROUP],
        resources: ['applications', 'environments', 'promotionflows', 'promotionplans'],
        verbs: ['get', 'list', 'watch'],
      },
      { apiGroups: [GROUP], resources: ['promotionplans'], verbs: ['create', 'patch', 'approve'] },
    ],
    [portAlice],
  );
  ctl = await startController(controllerConfig(kubeconfig, NS, { leaderElection: { enabled: false } }, [backendUser]));
  await waitFor(
    'cache warm',
    async () => {
      const envs = ctl.controller.cache.environments(NS);
      return envs.length === 2 && envs.every((e) => ctl.controller.cache.environmentSynced(e));
    },
    60_000,
  );
  await standIn.start();
  ({ backend, base } = await startBackstageTestBackend({
    features: [promotionsPlugin, promotionsModulePort],
    controller: { baseUrl: `http://127.0.0.1:${ctl.port}`, token: backendUser.token, defaultNamespace: NS },
    promotions: {
      port: {
        baseUrl: standIn.url,
        clientId: PORT_ID,
        clientSecret: PORT_SECRET,
        namespaces: [NS],
        pollIntervalMs: 200,
      },
    },
  }));
}, 240_000);

afterAll(async () => {
  await backend?.stop().catch(() => undefined);
  await standIn.stop().catch(() => undefined);
  await ctl?.stop().catch(() => undefined);
  await revokeImpersonation();
  await deleteNs(dev, NS);
  for (const c of [dev, stable]) await deleteNs(c, APPS_NS);
});

describe('Port kpromo_promote shows the candidates before it runs', () => {
  it('a run without digests reports the candidates and their digests and promotes nothing; a deploy to dev after that preview makes the promote run carrying its digests promote nothing; a promote run with the digests of a fresh preview promotes exactly them', async () => {
    // Step one: the preview, what the person reviews.
    const preview = await promoteRun({ from: 'dev', to: 'stable' });
    expect(preview).toMatchObject({ status: 'SUCCESS', statusLabel: 'Previewed' });
    expect(preview.logs).toContain(`cart: dev runs v2.0.0 (${devDigest.cart}); stable runs v1.0.0`);
    const shown = JSON.stringify({ cart: devDigest.cart });
    expect(preview.summary).toBe(
      `Preview, nothing promoted: 1 candidate(s) from dev to stable (flow main), listed in this run's logs. To promote exactly these, run kpromo_promote again with the same inputs and expect ${shown}; if dev runs anything else by then, that run promotes nothing.`,
    );
    expect(await plans()).toEqual([]);
    expect(await deploymentImage(stable, APPS_NS, 'cart')).toContain(stableOld.cart);

    // Between the preview and the promote run, a digest nobody reviewed reaches dev.
    const sneaky = await pushTestImage({
      host: source,
      repository: `${REPO}/cart`,
      tag: 'v2.0.1',
      seed: `ppv-sneaky-${names.run}`,
    });
    await applyDeployment(dev, APPS_NS, 'cart', `${source}/${REPO}/cart:v2.0.1@${sneaky.digest}`);
    await waitReady(dev, APPS_NS, 'cart');
    await waitFor('the controller sees the new digest in dev', async () => {
      const r = await callApi(ctl.port, `/api/v1/diff?namespace=${NS}&from=dev&to=stable`);
      return (await r.text()).includes(sneaky.digest) || undefined;
    });
    const stale = await promoteRun({ from: 'dev', to: 'stable', expect: JSON.parse(shown) });
    expect(stale).toMatchObject({ status: 'FAILURE', statusLabel: 'Failed' });
    expect(stale.summary).toBe(
      `not created: application cart: you reviewed ${devDigest.cart}, dev now runs ${sneaky.digest}; review the candidates from dev to stable again (GET /diff) and send the digests shown as expect`,
    );
    expect(await plans()).toEqual([]);
    expect(await deploymentImage(stable, APPS_NS, 'cart')).toContain(stableOld.cart);

    // Step two after a fresh preview: exactly the digest it showed is promoted.
    const again = await promoteRun({ from: 'dev', to: 'stable' });
    expect(again.logs).toContain(`cart: dev runs v2.0.1 (${sneaky.digest}); stable runs v1.0.0`);
    const reviewed = JSON.parse(/expect (\{.*?\});/.exec(again.summary)?.[1] ?? 'null') as Record<string, string>;
    expect(reviewed).toEqual({ cart: sneaky.digest });
    const run = await promoteRun({ from: 'dev', to: 'stable', expect: reviewed });
    expect(run, run.logs.join('\n')).toMatchObject({ status: 'SUCCESS', statusLabel: 'Complete' });
    const [plan] = await plans();
    expect(plan.spec.candidates.map((c) => [c.application, c.from.digest])).toEqual([['cart', sneaky.digest]]);
    expect(plan.spec.approvals?.map((a) => a.user)).toEqual([portAlice.username]);
    expect(await deploymentImage(stable, APPS_NS, 'cart')).toContain(sneaky.digest);
    expect(standIn.violations).toEqual([]);
  });
});
