// A person's rollback and the portal's adoption, attacked (issue 48 leftovers), on the real control
// plane with the admission policies installed and the real controller:
// - a plan creator squats `<plan>-rollback` before a release manager rolls the plan back;
// - the plan a release manager reviewed is deleted and created again under its name (other
//   changes) between the view and the rollback-and-approve click, or the click names no plan;
// - a tenant's adoption scan is pointed (by their own workload labels, by their images) at another
//   team's Kustomization, GitRepository and ImagePolicy, which the controller's identity can read.
// Each test checks what runs in stable, or what the proposal says, afterwards.
import type { PromotionPlan } from '@kpromo/api';
import {
  ensureFluxBinaries,
  gitRepository,
  installFluxApiCrds,
  installFluxCrds,
  kubeConfigFor,
  kustomization,
  needComponents,
  waitFor,
} from '@kpromo/test-harness';
import {
  applyDeployment,
  callApi,
  deleteNs,
  deploymentImage,
  ensureNs,
  getPlan,
  grantRole,
  isTerminalPlan,
  promoteAndWait,
  TEST_ADMIN,
  type TestUser,
  twoStageWorld,
  uidOf,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { call, httpClient, text } from '@kpromo/test-harness/mcpClient';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

// Adoption reads real Kustomization, GitRepository and ImagePolicy objects: their CRDs come from Flux.
await needComponents('flux', 'flux-crds');

const APPS = ['alpha', 'beta', 'gamma'];
const kubeconfig = inject('kubeconfig');
const world = twoStageWorld('rag', { kubeconfig, registries: inject('registries'), apps: APPS });
const { ns: NS, appsNs: APPS_NS, repo: REPO, dev, stable, source, target, base, as } = world;
/** Another team's namespace, in both clusters: nobody in this test may read it but the controller. */
const OTHER = `rag-other-${world.run}`;
const GROUP = 'promotions.kpromo.dev';

/** Creates, edits and deletes plans; approves nothing, rolls nothing back. */
const mallory = world.user('mallory');
/** Release manager: approves and rolls back. */
const rita = world.user('rita');
/** A tenant onboarding workloads: may create Applications in NS, nothing in OTHER. */
const terry = world.user('terry');

let ctl: Running;
let devDigest: Record<string, string> = {};
let stableOld: Record<string, string> = {};

const post = (path: string, body: unknown, who: TestUser) =>
  callApi(ctl.port, path, { method: 'POST', body, token: who.token });
const errorOf = async (r: Response) => ((await r.json()) as { error: string }).error;
const rollbacksOf = async (plan: string) =>
  (await dev.get<{ items: PromotionPlan[] }>(`${base}/promotionplans`)).items.filter((p) => p.spec.rollbackOf === plan);

/** A plan created and approved through the API with the digests `who` was shown, run to its end. */
async function promoted(name: string, app: string, who: TestUser): Promise<PromotionPlan> {
  const done = await promoteAndWait(
    ctl.port,
    dev,
    { namespace: NS, from: 'dev', to: 'stable', name, applications: [app] },
    { token: who.token },
  );
  expect(done.status?.phase).toBe('Complete');
  expect(await deploymentImage(stable, APPS_NS, app)).toContain(devDigest[app]);
  return done;
}

beforeAll(async () => {
  await world.seed();
  ({ devDigest, stableOld } = world);
  const read = {
    apiGroups: [GROUP],
    resources: ['applications', 'environments', 'promotionflows', 'promotionplans'],
    verbs: ['get', 'list', 'watch'],
  };
  await grantRole(
    dev,
    NS,
    'plan-editor',
    [read, { apiGroups: [GROUP], resources: ['promotionplans'], verbs: ['create', 'patch', 'update', 'delete'] }],
    [mallory],
  );
  await grantRole(
    dev,
    NS,
    'release-manager',
    [read, { apiGroups: [GROUP], resources: ['promotionplans'], verbs: ['create', 'patch', 'approve', 'rollback'] }],
    [rita],
  );
  await grantRole(
    dev,
    NS,
    'onboarding',
    [read, { apiGroups: [GROUP], resources: ['applications'], verbs: ['create'] }],
    [terry],
  );
  ctl = await world.start({ mcp: { enabled: true, host: '127.0.0.1', port: 0, write: true } }, [mallory, rita, terry]);
}, 300_000);

afterAll(async () => {
  await world.stop();
  for (const c of [dev, stable]) await deleteNs(c, OTHER);
});

describe("a person's rollback through the API", () => {
  it('a plan creator squats <plan>-rollback before the release manager rolls the plan back: the rollback is still created (a generated name, returned) and restores the old version', async () => {
    await promoted('rel-a', 'alpha', rita);
    // The decoy: a rollback plan under the predictable name, never approved.
    await as(mallory).create(`${base}/promotionplans`, {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: 'PromotionPlan',
      metadata: { name: 'rel-a-rollback', namespace: NS },
      spec: { flow: 'main', from: 'dev', to: 'stable', action: 'rollback', rollbackOf: 'rel-a', candidates: [] },
    });
    const uid = await uidOf(dev, NS, 'rel-a');
    const r = await post(`/api/v1/plans/${NS}/rel-a/rollback`, { approve: true, uid }, rita);
    expect(r.status, await r.clone().text()).toBe(201);
    const rb = (await r.json()) as PromotionPlan;
    expect(rb.metadata.name).toMatch(/^rel-a-rollback-[a-z0-9]{5}$/);
    // Bound to the plan rolled back (a label only the controller sets): it starts only while rel-a is that plan.
    expect(rb.metadata.labels?.['promotions.kpromo.dev/rollback-of-uid']).toBe(uid);
    const done = await waitPlan(dev, NS, rb.metadata.name, isTerminalPlan);
    expect(done.status?.phase).toBe('RolledBack');
    expect(await deploymentImage(stable, APPS_NS, 'alpha')).toContain(stableOld.alpha);
    // The decoy is where mallory left it: unapproved, and nothing ran through it.
    expect((await getPlan(dev, NS, 'rel-a-rollback')).spec.approvals).toBeUndefined();
  });

  it('the plan the release manager reviewed is deleted and created again under its name (another application) before the rollback-and-approve click: refused (409) at the API and MCP, nothing rolled back', async () => {
    await promoted('rel-b', 'beta', rita);
    const shown = await uidOf(dev, NS, 'rel-b');
    // Between the view and the click: rel-b is now a plan that promoted gamma.
    await as(mallory).delete(`${base}/promotionplans/rel-b`);
    await waitFor('rel-b gone', async () => !(await dev.getOrUndefined(`${base}/promotionplans/rel-b`)));
    await promoted('rel-b', 'gamma', TEST_ADMIN);
    const now = await uidOf(dev, NS, 'rel-b');
    const stale = `PromotionPlan ${NS}/rel-b changed since you opened it: you reviewed uid ${shown}, it is now uid ${now} (deleted and created again, perhaps with other candidates); review it again before rolling back`;

    const r = await post(`/api/v1/plans/${NS}/rel-b/rollback`, { approve: true, uid: shown }, rita);
    expect(r.status).toBe(409);
    expect(await errorOf(r)).toBe(stale);
    const client = await httpClient(ctl.mcp!.url, rita.token);
    try {
      const m = await call(client, 'rollback', { namespace: NS, plan: 'rel-b', uid: shown });
      expect(m.isError).toBe(true);
      expect(text(m)).toContain(stale);
    } finally {
      await client.close();
    }
    expect(await rollbacksOf('rel-b')).toEqual([]);
    expect(await deploymentImage(stable, APPS_NS, 'gamma')).toContain(devDigest.gamma);
    expect(await deploymentImage(stable, APPS_NS, 'beta')).toContain(devDigest.beta);
  });

  it("a rollback-and-approve that names no plan uid is refused (400, the approvals' uid requirement) at the API and MCP; with the uid read, MCP rolls back", async () => {
    const r = await post(`/api/v1/plans/${NS}/rel-b/rollback`, { approve: true }, rita);
    expect(r.status).toBe(400);
    expect(await errorOf(r)).toBe(
      'invalid request body: uid: is required: send the metadata.uid of the plan you reviewed (GET /plans/{namespace}/{name}, `kpromo plan get <name> -o json`, or the uid returned when it was created); the approval binds to that plan',
    );
    const client = await httpClient(ctl.mcp!.url, rita.token);
    try {
      const m = await call(client, 'rollback', { namespace: NS, plan: 'rel-b' });
      expect(m.isError).toBe(true);
      expect(text(m)).toContain(
        `PromotionPlan ${NS}/rel-b: uid is required: send the metadata.uid of the plan you reviewed`,
      );
      expect(await rollbacksOf('rel-b')).toEqual([]);
      const ok = await call(client, 'rollback', { namespace: NS, plan: 'rel-b', uid: await uidOf(dev, NS, 'rel-b') });
      expect(ok.isError, text(ok)).toBeFalsy();
      const [rb] = await rollbacksOf('rel-b');
      expect(rb.metadata.name).toMatch(/^rel-b-rollback-[a-z0-9]{5}$/);
      expect(text(ok)).toContain(`Created rollback plan ${NS}/${rb.metadata.name}`);
      expect((await waitPlan(dev, NS, rb.metadata.name, isTerminalPlan)).status?.phase).toBe('RolledBack');
      expect(await deploymentImage(stable, APPS_NS, 'gamma')).toContain(stableOld.gamma);
    } finally {
      await client.close();
    }
  });
});

describe("adoption discovery reads only the Environment's namespace", () => {
  it("a tenant's adoption scan names another team's Kustomization (workload labels) and runs an image another team's ImagePolicy scans: the proposal reveals neither, and says the Kustomization was not read", async () => {
    await installFluxCrds(kubeConfigFor('dev', kubeconfig), ensureFluxBinaries().crds);
    await installFluxApiCrds(kubeConfigFor('stable', kubeconfig), ['imagerepositories', 'imagepolicies']);
    for (const c of [dev, stable]) await ensureNs(c, OTHER);
    // The other team's objects: a git source and the Kustomization applying it in dev, and an
    // ImagePolicy in stable that scans the very image terry's new workload runs there.
    await dev.create(
      `/apis/source.toolkit.fluxcd.io/v1/namespaces/${OTHER}/gitrepositories`,
      gitRepository({ namespace: OTHER, name: 'secret-src', url: 'https://git.example.com/other-team/secret.git' }),
    );
    await dev.create(
      `/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/${OTHER}/kustomizations`,
      kustomization({
        namespace: OTHER,
        name: 'secret-apps',
        source: 'secret-src',
        path: './teams/other/hidden',
        targetNamespace: OTHER,
      }),
    );
    await stable.create(`/apis/image.toolkit.fluxcd.io/v1/namespaces/${OTHER}/imagerepositories`, {
      apiVersion: 'image.toolkit.fluxcd.io/v1',
      kind: 'ImageRepository',
      metadata: { name: 'secret-scan', namespace: OTHER },
      spec: { image: `${target}/stable/${REPO}/delta`, interval: '5m' },
    });
    await stable.create(`/apis/image.toolkit.fluxcd.io/v1/namespaces/${OTHER}/imagepolicies`, {
      apiVersion: 'image.toolkit.fluxcd.io/v1',
      kind: 'ImagePolicy',
      metadata: { name: 'secret-policy', namespace: OTHER },
      spec: { imageRepositoryRef: { name: 'secret-scan' }, policy: { semver: { range: '>=1.0.0' } } },
    });
    // terry's new workload, not adopted yet; in dev its labels (terry's to write) name the
    // other team's Kustomization.
    await applyDeployment(dev, APPS_NS, 'delta', `${source}/${REPO}/delta:v2.0.0`);
    await dev.mergePatch(`/apis/apps/v1/namespaces/${APPS_NS}/deployments/delta`, {
      metadata: {
        labels: { 'kustomize.toolkit.fluxcd.io/name': 'secret-apps', 'kustomize.toolkit.fluxcd.io/namespace': OTHER },
      },
    });
    await applyDeployment(stable, APPS_NS, 'delta', `${target}/stable/${REPO}/delta:v1.0.0`);
    // terry may read neither namespace where the other team's objects live.
    for (const c of [dev, stable])
      expect(
        await c
          .as({ username: terry.username, groups: [] })
          .get(`/apis/image.toolkit.fluxcd.io/v1/namespaces/${OTHER}/imagepolicies`)
          .then(
            () => 'read',
            (e: { status: number }) => e.status,
          ),
      ).not.toBe('read');

    const r = await post('/api/v1/adopt', { namespace: NS, flow: 'main', owner: 'team-t' }, terry);
    expect(r.status, await r.clone().text()).toBe(200);
    const proposal = (await r.json()) as {
      candidates: Array<{ application: string }>;
      findings: Array<{ level: string; subject: string; message: string }>;
    };
    const said = JSON.stringify(proposal);
    expect(proposal.candidates.map((c) => c.application)).toContain('delta');
    for (const secret of ['other-team/secret.git', 'teams/other/hidden', 'secret-src', 'secret-policy', 'secret-scan'])
      expect(said).not.toContain(secret);
    // Nothing says an ImagePolicy scans delta in stable: the only one does so in OTHER.
    expect(proposal.findings.filter((f) => f.subject === 'Environment stable')).toEqual([]);
    expect(proposal.findings).toContainEqual({
      level: 'note',
      subject: `Kustomization ${OTHER}/secret-apps`,
      message: `named by workload labels in Environment dev, outside its namespace ${APPS_NS}: not read (adoption through the controller reads only the Environment's namespace); fill in what it holds by hand, or run kpromo adopt --env with your own access`,
    });
  });
});
