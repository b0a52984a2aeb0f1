// "A digest is bound only when the source names one" (issue 48 item 4), attacked on the real
// control plane with the admission policies installed (applyCrds) and the harness's real OCI
// registries. dev runs its images by tag only (`<registry>/<repo>/<app>:v2.0.0`, no digest, as a
// HelmRelease without digestPath, an imagePolicy stage or a CI deploy leaves them), and v2.0.0 was
// pushed twice: the first build's digest is still in the repository. A plan creator names the
// running tag with that older digest; an approver approves it. Every test checks what reached
// stable: its workload and the tags of its registry.
import type { PromotionPlan } from '@kpromo/api';
import { waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  callApi,
  deploymentImage,
  getPlan,
  grantRole,
  isTerminalPlan,
  planUserRules,
  pushTestImage,
  registryTags,
  type TestUser,
  twoStageWorld,
  waitPlan,
  waitReady,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

/** older: the attack; shown: the API doors; waiter: a source registry that cannot be read. */
const APPS = ['older', 'shown', 'waiter'];
const TAG = 'v2.0.0';
const world = twoStageWorld('tos', { kubeconfig: inject('kubeconfig'), registries: inject('registries'), apps: APPS });
const { ns: NS, appsNs: APPS_NS, repo: REPO, run: RUN, dev, stable, source, target, base, as, flowOf } = world;
const GROUP = 'promotions.kpromo.dev';
const user = (name: string) => world.user(name, ['shop']);
/** Creates plans (kubectl and API); may not approve. */
const creator = user('cora');
/** Approves into stable. */
const approver = user('abe');

let ctl: Running;
/** The first build of v2.0.0 (still in dev's repository), and the one the tag names now. */
let firstBuild: Record<string, string> = {};
const rebuilt: Record<string, string> = {};
let stableOld: Record<string, string> = {};

const post = (path: string, who: TestUser, body: unknown = {}) =>
  callApi(ctl.port, path, { method: 'POST', body, token: who.token });
const errorOf = async (r: Response) => ((await r.json()) as { error: string }).error;

/** A plan as `kubectl create` writes it: the creator names the candidate's tag and digest. */
const planBody = (name: string, flow: string, from: string, app: string, digest: string) => ({
  apiVersion: `${GROUP}/v1alpha1`,
  kind: 'PromotionPlan',
  metadata: { name, namespace: NS },
  spec: { flow, from, to: 'stable', candidates: [{ application: app, from: { tag: TAG, digest } }] },
});

/** The approver approves the plan they opened through the API (its uid), as the portal does. */
async function approve(name: string) {
  const uid = (await getPlan(dev, NS, name)).metadata.uid;
  const r = await post(`/api/v1/plans/${NS}/${name}/approve`, approver, { uid });
  expect(r.status, await r.clone().text()).toBe(200);
}

/** Nothing of `app` reached stable: its workload still runs the old digest, and no new tag was pushed. */
async function untouched(app: string) {
  expect(await deploymentImage(stable, APPS_NS, app)).toContain(stableOld[app]);
  expect(await registryTags(target, `stable/${REPO}/${app}`)).toEqual(['v1.0.0']);
}

beforeAll(async () => {
  await world.seed();
  ({ devDigest: firstBuild, stableOld } = world);
  // v2.0.0 built again and pushed over the tag; dev then runs the tag alone.
  for (const app of APPS) {
    rebuilt[app] = (
      await pushTestImage({ host: source, repository: `${REPO}/${app}`, tag: TAG, seed: `tos-${RUN}-rebuilt-${app}` })
    ).digest;
    expect(rebuilt[app]).not.toBe(firstBuild[app]);
    await applyDeployment(dev, APPS_NS, app, `${source}/${REPO}/${app}:${TAG}`);
  }
  for (const app of APPS) await waitReady(dev, APPS_NS, app);
  // waiter comes from an Environment on the same workloads whose registry cannot be reached.
  await applyCr(dev, flowOf('main', ['older', 'shown']));
  await applyCr(dev, {
    kind: 'Environment',
    metadata: { name: 'mirror', namespace: NS },
    spec: {
      cluster: { context: 'dev' },
      namespace: APPS_NS,
      registry: { host: '127.0.0.1:1', insecure: true },
      delivery: { method: 'patch' },
    },
  });
  await applyCr(dev, flowOf('mirrored', ['waiter'], {}, 'mirror'));
  await grantRole(dev, NS, 'creators', planUserRules(), [creator]);
  await grantRole(dev, NS, 'approvers', planUserRules({ approveInto: ['stable'] }), [approver]);
  ctl = await world.start({}, [creator, approver]);
  await waitFor(
    'cache warm',
    async () => {
      const c = ctl.controller.cache;
      const envs = c.environments(NS);
      return (
        envs.length === 3 &&
        envs.every((e) => c.environmentSynced(e)) &&
        c.getFlow(NS, 'mirrored') !== undefined &&
        APPS.every(
          (a) =>
            c.getWorkload(envs.find((e) => e.metadata.name === 'dev')!, 'Deployment', a)?.spec?.template?.spec
              ?.containers?.[0]?.image === `${source}/${REPO}/${a}:${TAG}`,
        )
      );
    },
    60_000,
  );
}, 240_000);

afterAll(() => world.stop());

describe('a candidate of a tag-only source is the digest its tag names', () => {
  it('a creator names the tag dev runs with an older digest of the same repository (kubectl) and an approver approves it: refused when the plan starts (CandidateDigestMismatch), nothing reaches stable', async () => {
    await as(creator).create(`${base}/promotionplans`, planBody('older', 'main', 'dev', 'older', firstBuild.older));
    await approve('older');
    const p = await waitPlan(dev, NS, 'older', isTerminalPlan);
    expect(p.status?.phase).toBe('Failed');
    const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'CandidateDigestMismatch' });
    expect(ready?.message).toContain(
      `older: dev runs ${TAG} by tag only, and ${TAG} names ${rebuilt.older} in the registry of Environment dev, not the candidate's ${firstBuild.older}`,
    );
    expect(p.status?.apps ?? []).toEqual([]);
    await untouched('older');
  });

  it('create-and-approve through the API with expect naming the older digest of the tag dev runs: 409, no plan, nothing reaches stable', async () => {
    const r = await post('/api/v1/plans', approver, {
      namespace: NS,
      from: 'dev',
      to: 'stable',
      name: 'shown-older',
      applications: ['shown'],
      approve: true,
      expect: { shown: firstBuild.shown },
    });
    expect(r.status, await r.clone().text()).toBe(409);
    expect(await errorOf(r)).toContain(
      `application shown: you reviewed ${firstBuild.shown}, dev now runs ${rebuilt.shown}`,
    );
    expect(await dev.getOrUndefined(`${base}/promotionplans/shown-older`)).toBeUndefined();
    await untouched('shown');
  });

  it('the API shows the digest the tag names now, and a plan created and approved with it runs that digest in stable', async () => {
    const body = await withShown(
      ctl.port,
      { namespace: NS, from: 'dev', to: 'stable', name: 'shown', applications: ['shown'], approve: true },
      approver.token,
    );
    expect(body.expect).toEqual({ shown: rebuilt.shown });
    const r = await post('/api/v1/plans', approver, body);
    expect(r.status, await r.clone().text()).toBe(201);
    const plan = ((await r.json()) as { plan: PromotionPlan }).plan;
    expect(plan.spec.candidates).toEqual([
      expect.objectContaining({ application: 'shown', from: { tag: TAG, digest: rebuilt.shown } }),
    ]);
    const p = await waitPlan(dev, NS, 'shown', isTerminalPlan);
    expect(p.status?.phase).toBe('Complete');
    expect(await deploymentImage(stable, APPS_NS, 'shown')).toContain(`@${rebuilt.shown}`);
  });
});

describe("the source's registry decides, and the plan waits while it cannot be read", () => {
  it("a plan from a tag-only source whose registry cannot be reached neither starts nor fails: it says so, and runs the tag's digest once the registry answers", async () => {
    await as(creator).create(
      `${base}/promotionplans`,
      planBody('waiter', 'mirrored', 'mirror', 'waiter', rebuilt.waiter),
    );
    await approve('waiter');
    const waiting = await waitPlan(
      dev,
      NS,
      'waiter',
      (p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.reason === 'SourceTagUnresolved') ?? false,
    );
    expect(waiting.status?.phase ?? 'Pending').toBe('Pending');
    expect(waiting.status?.apps ?? []).toEqual([]);
    const ready = waiting.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready?.message).toContain(
      `waiting to read the digest of the tag mirror runs from the registry of Environment mirror before starting (a candidate is bound to it; nothing starts until the registry answers): waiter (mirror runs ${TAG} by tag only): `,
    );
    await untouched('waiter');
    // The platform admin points mirror at its registry: the plan starts and runs the tag's digest.
    await applyCr(dev, {
      kind: 'Environment',
      metadata: { name: 'mirror', namespace: NS },
      spec: {
        cluster: { context: 'dev' },
        namespace: APPS_NS,
        registry: { host: source, insecure: true },
        delivery: { method: 'patch' },
      },
    });
    const done = await waitPlan(dev, NS, 'waiter', isTerminalPlan);
    expect(done.status?.phase).toBe('Complete');
    expect(await deploymentImage(stable, APPS_NS, 'waiter')).toContain(`@${rebuilt.waiter}`);
  });
});
