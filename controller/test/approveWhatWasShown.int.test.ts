// "Approve what was shown", attacked at the doors that approve: the HTTP API and MCP. An approval
// names the plan the approver reviewed (its uid), and a plan created and approved in one request
// names the digests the approver reviewed (`expect`); a request without them is refused, and one
// whose source changed between the view and the click creates nothing and copies nothing. Real
// control plane with the admission policies installed (applyCrds).
import type { PromotionPlan } from '@kpromo/api';
import { waitFor } from '@kpromo/test-harness';
import {
  applyDeployment,
  callApi,
  deploymentImage,
  getPlan,
  insiderWorld,
  pushTestImage,
  waitPlan,
  waitReady,
} from '@kpromo/test-harness/controller';
import { call, httpClient, ok, text } from '@kpromo/test-harness/mcpClient';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

const APPS = ['alpha', 'beta', 'gamma'];
const world = insiderWorld('aws', { kubeconfig: inject('kubeconfig'), registries: inject('registries'), apps: APPS });
const { ns: NS, appsNs: APPS_NS, repo: REPO, run: RUN, dev, stable, source, base, untouched } = world;

/** A developer (INSIDER_ROLES): creates plans and approves into stable. */
const devon = world.insider('devon', 'developer');

let ctl: Running;
let devDigest: Record<string, string> = {};

const post = (path: string, body: unknown = {}) =>
  callApi(ctl.port, path, { method: 'POST', body, token: devon.token });
const errorOf = async (r: Response) => ((await r.json()) as { error: string }).error;
const candidatesShown = async (app: string) => {
  const r = await callApi(ctl.port, `/api/v1/diff?namespace=${NS}&from=dev&to=stable&applications=${app}`, {
    token: devon.token,
  });
  expect(r.status, await r.clone().text()).toBe(200);
  return ((await r.json()) as { candidates: Array<{ application: string; from: { digest: string } }> }).candidates;
};
const createPlan = (name: string, app: string) =>
  post('/api/v1/plans', { namespace: NS, from: 'dev', to: 'stable', name, applications: [app] });

beforeAll(async () => {
  await world.setUp();
  ({ devDigest } = world);
  ctl = await world.start({ mcp: { enabled: true, host: '127.0.0.1', port: 0, write: true } });
}, 240_000);

afterAll(() => world.stop());

describe('an approval names the plan it approves, at every door', () => {
  it('an API approval that names no plan uid is refused (400, saying which field to send and where to read it) and the plan stays unapproved', async () => {
    expect((await createPlan('no-uid', 'alpha')).status).toBe(201);
    const r = await post(`/api/v1/plans/${NS}/no-uid/approve`, {});
    expect(r.status).toBe(400);
    expect(await errorOf(r)).toBe(
      'invalid request body: uid: is required: send the metadata.uid of the plan you reviewed (GET /plans/{namespace}/{name}, `kpromo plan get <name> -o json`, or the uid returned when it was created); the approval binds to that plan',
    );
    expect((await getPlan(dev, NS, 'no-uid')).spec.approvals).toBeUndefined();
  });

  it('an agent calls MCP promote without the uid of the plan it listed: refused with the same requirement, the plan stays unapproved', async () => {
    expect((await createPlan('agent-no-uid', 'alpha')).status).toBe(201);
    const client = await httpClient(ctl.mcp!.url, devon.token);
    try {
      const r = await call(client, 'promote', { namespace: NS, plan: 'agent-no-uid' });
      expect(r.isError).toBe(true);
      expect(text(r)).toContain(
        `PromotionPlan ${NS}/agent-no-uid: uid is required: send the metadata.uid of the plan you reviewed`,
      );
      expect((await getPlan(dev, NS, 'agent-no-uid')).spec.approvals).toBeUndefined();
      // With the uid it listed, the same call approves it.
      const listed = await getPlan(dev, NS, 'agent-no-uid');
      const approved = ok<{ plan: { approvals: Array<{ user: string }> } }>(
        await call(client, 'promote', { namespace: NS, plan: 'agent-no-uid', uid: listed.metadata.uid }),
      );
      expect(approved.plan.approvals).toEqual([{ user: devon.username }]);
    } finally {
      await client.close();
    }
  });
});

describe('create-and-approve approves the digests shown', () => {
  it('a plan created and approved without the digests reviewed (no expect) is refused (400) and nothing is created', async () => {
    const r = await post('/api/v1/plans', {
      namespace: NS,
      from: 'dev',
      to: 'stable',
      name: 'blind',
      applications: ['beta'],
      approve: true,
    });
    expect(r.status).toBe(400);
    expect(await errorOf(r)).toContain(
      'invalid request body: expect: is required with approve: send, per application, the digest you reviewed',
    );
    expect(await dev.getOrUndefined(`${base}/promotionplans/blind`)).toBeUndefined();
  });

  it('someone deploys a new digest to dev between the candidates read and the create-and-approve click: refused (409, naming the application and both digests), no plan, nothing copied', async () => {
    const shown = await candidatesShown('beta');
    expect(shown).toEqual([
      expect.objectContaining({ application: 'beta', from: expect.objectContaining({ digest: devDigest.beta }) }),
    ]);
    // Between the view and the click: an image that was never reviewed now runs in dev.
    const sneaky = await pushTestImage({
      host: source,
      repository: `${REPO}/beta`,
      tag: 'v2.0.1',
      seed: `sneaky-${RUN}`,
    });
    await applyDeployment(dev, APPS_NS, 'beta', `${source}/${REPO}/beta:v2.0.1@${sneaky.digest}`);
    await waitReady(dev, APPS_NS, 'beta');
    await waitFor('the controller sees the new digest in dev', async () =>
      (await candidatesShown('beta'))[0]?.from.digest === sneaky.digest ? true : undefined,
    );
    const r = await post('/api/v1/plans', {
      namespace: NS,
      from: 'dev',
      to: 'stable',
      name: 'clicked',
      applications: ['beta'],
      approve: true,
      expect: { beta: shown[0].from.digest },
    });
    expect(r.status).toBe(409);
    expect(await errorOf(r)).toBe(
      `not created: application beta: you reviewed ${devDigest.beta}, dev now runs ${sneaky.digest}; review the candidates from dev to stable again (GET /diff) and send the digests shown as expect`,
    );
    expect(await dev.getOrUndefined(`${base}/promotionplans/clicked`)).toBeUndefined();
    await untouched('beta');
  });

  it('an application that became a candidate after the view is not approved unseen: refused (409), no plan', async () => {
    // gamma is a candidate too, but the caller only reviewed alpha.
    const r = await post('/api/v1/plans', {
      namespace: NS,
      from: 'dev',
      to: 'stable',
      name: 'unseen',
      applications: ['alpha', 'gamma'],
      approve: true,
      expect: { alpha: devDigest.alpha },
    });
    expect(r.status).toBe(409);
    expect(await errorOf(r)).toContain(
      `not created: application gamma (dev runs ${devDigest.gamma}) is a candidate you were not shown`,
    );
    expect(await dev.getOrUndefined(`${base}/promotionplans/unseen`)).toBeUndefined();
    await untouched('gamma');
  });

  it('with the digests shown and nothing changed, the plan is created, approved and runs exactly them', async () => {
    const shown = await candidatesShown('gamma');
    const r = await post('/api/v1/plans', {
      namespace: NS,
      from: 'dev',
      to: 'stable',
      name: 'reviewed',
      applications: ['gamma'],
      approve: true,
      expect: Object.fromEntries(shown.map((c) => [c.application, c.from.digest])),
    });
    expect(r.status, await r.clone().text()).toBe(201);
    const plan = ((await r.json()) as { plan: PromotionPlan }).plan;
    expect(plan.spec.candidates.map((c) => [c.application, c.from.digest])).toEqual([['gamma', devDigest.gamma]]);
    const done = await waitPlan(dev, NS, 'reviewed', (p) =>
      ['Complete', 'Incomplete', 'Failed'].includes(p.status?.phase ?? ''),
    );
    expect(done.status?.phase).toBe('Complete');
    expect(await deploymentImage(stable, APPS_NS, 'gamma')).toContain(devDigest.gamma);
  });
});
