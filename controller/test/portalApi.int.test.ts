// The portal's API additions on the real control plane and registries, checked against the contract:
// GET /flows lists the flows the caller may list; GET /plans filters and pages on the server;
// GET /diff adds each candidate's images with the OCI source labels read from the real registries
// (the image config Labels a Dockerfile LABEL writes).
import type { PromotionPlan } from '@kpromo/api';
import { CONTROLLER_API, type DiffWithImages } from '@kpromo/contract';
import { responseChecker } from '@kpromo/contract/testing';
import { waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  callApi,
  pushTestImage,
  twoStageWorld,
  waitReady,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

const APPS = ['alpha', 'beta'];
const world = twoStageWorld('portal', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: APPS,
});
const { ns: NS, appsNs: APPS_NS, repo, run: RUN, dev, stable, source, target } = world;
const admin = world.user('admin', ['system:masters']);
const other = world.user('other', ['system:masters']);
/** Authenticated, but no RBAC in the namespace. */
const nobody = world.user('nobody');
const check = responseChecker(CONTROLLER_API);
const SOURCE_URL = 'https://github.com/example/alpha';
const NEW_REV = '1'.repeat(40);
const OLD_REV = '2'.repeat(40);
let ctl: Running;

/** The answers as the tests read them (their shapes are checked against the contract in `call`). */
// biome-ignore lint/suspicious/noExplicitAny: answers of several routes, each checked against its schema
type Answer = any;

async function call(route: string, path: string, token = admin.token): Promise<{ status: number; body: Answer }> {
  const r = await callApi(ctl.port, `/api/v1${path}`, { token });
  const body = await r.json();
  expect(check('GET', route, r.status, body), `GET ${path} -> ${r.status}`).toEqual([]);
  return { status: r.status, body };
}

beforeAll(async () => {
  await world.seed();
  // alpha's images say where they were built from; beta's say nothing
  const labelled = (revision: string) => ({
    'org.opencontainers.image.source': SOURCE_URL,
    'org.opencontainers.image.revision': revision,
  });
  const fresh = await pushTestImage({
    host: source,
    repository: `${repo}/alpha`,
    tag: 'v2.0.0',
    seed: `l-new-${RUN}`,
    labels: labelled(NEW_REV),
  });
  const old = await pushTestImage({
    host: target,
    repository: `stable/${repo}/alpha`,
    tag: 'v1.0.0',
    seed: `l-old-${RUN}`,
    labels: labelled(OLD_REV),
  });
  await applyDeployment(dev, APPS_NS, 'alpha', `${source}/${repo}/alpha:v2.0.0@${fresh.digest}`);
  await applyDeployment(stable, APPS_NS, 'alpha', `${target}/stable/${repo}/alpha:v1.0.0@${old.digest}`);
  await waitReady(dev, APPS_NS, 'alpha');
  await applyCr(dev, {
    kind: 'PromotionFlow',
    metadata: { name: 'main', namespace: NS },
    spec: {
      stages: [
        { environment: 'dev', approval: 'auto' },
        { environment: 'stable', approvers: { count: 2 }, requiredSoakTime: '1m' },
      ],
      selector: { applications: ['alpha', 'beta'] },
    },
  });
  ctl = await world.start({}, [admin, other, nobody]);
  await waitFor(
    'every app cached',
    async () => (ctl.controller.cache.applications(NS).length === APPS.length ? true : undefined),
    90_000,
  );
  // three plans created through the API by two people (spec.requestedBy is the creating user)
  for (const [name, who, applications] of [
    ['first', admin, ['alpha']],
    ['second', other, ['beta']],
    ['third', admin, ['alpha', 'beta']],
  ] as const) {
    const r = await callApi(ctl.port, '/api/v1/plans', {
      method: 'POST',
      token: who.token,
      body: { namespace: NS, from: 'dev', to: 'stable', name, applications },
    });
    expect(r.status, await r.clone().text()).toBe(201);
  }
  await waitFor('plans cached', async () => (ctl.controller.cache.plans(NS).length === 3 ? true : undefined), 30_000);
}, 300_000);

afterAll(() => world.stop());

describe('GET /flows', () => {
  it("lists the flow's stages with their approval settings and the selector, only for callers who may list flows", async () => {
    const { body } = await call('/flows', `/flows?namespace=${NS}`);
    expect(body.items).toHaveLength(1);
    expect(body.items[0]).toMatchObject({
      namespace: NS,
      name: 'main',
      selectorSummary: 'applications alpha, beta',
      stages: [
        { environment: 'dev', approval: 'auto' },
        { environment: 'stable', approval: 'manual', approvers: { count: 2 }, requiredSoakTime: '1m' },
      ],
    });
    const denied = await call('/flows', `/flows?namespace=${NS}`, nobody.token);
    expect(denied.body.items).toEqual([]);
  });
});

describe('GET /plans filters and pages on the server', () => {
  it('filters by application and requester, and walks the plans newest first in pages of 2', async () => {
    const names = (b: { items: PromotionPlan[] }) => b.items.map((p) => p.metadata.name).sort();
    expect(names((await call('/plans', `/plans?namespace=${NS}&application=beta`)).body)).toEqual(['second', 'third']);
    expect(names((await call('/plans', `/plans?namespace=${NS}&requestedBy=ADMIN-${RUN}&phase=active`)).body)).toEqual([
      'first',
      'third',
    ]);
    expect((await call('/plans', `/plans?namespace=${NS}&environment=dev`)).body.items).toEqual([]);
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const { body } = await call('/plans', `/plans?namespace=${NS}&limit=2${token ? `&continue=${token}` : ''}`);
      expect(body.total).toBe(3);
      seen.push(...body.items.map((p: PromotionPlan) => p.metadata.name));
      token = body.continue;
    } while (token && seen.length < 10);
    expect(seen.sort()).toEqual(['first', 'second', 'third']);
    const bad = await call('/plans', `/plans?namespace=${NS}&phase=Done&limit=0`);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/phase: must be one of.*limit: must be at least 1/);
    expect((await call('/plans', `/plans?namespace=${NS}`, nobody.token)).body.items).toEqual([]);
  });
});

describe('GET /diff with images', () => {
  it("names each candidate's images and the source labels read from the real registries", async () => {
    // labels are read lazily: an early answer may still say pending
    let body: DiffWithImages | undefined;
    await waitFor(
      'labels read',
      async () => {
        body = (await call('/diff', `/diff?namespace=${NS}&from=dev&to=stable`)).body;
        return body?.images?.every((i) => i.from.labelsState !== 'pending') ? true : undefined;
      },
      30_000,
    );
    const alpha = body!.images!.find((i) => i.application === 'alpha')!;
    expect(alpha.from).toMatchObject({
      environment: 'dev',
      registry: source,
      labelsState: 'read',
      labels: { source: SOURCE_URL, revision: NEW_REV },
    });
    expect(alpha.to).toMatchObject({ environment: 'stable', registry: target, labels: { revision: OLD_REV } });
    expect(alpha.to?.repository).toMatch(/^stable\//);
    const beta = body!.images!.find((i) => i.application === 'beta')!;
    expect(beta.from.labelsState).toBe('read');
    expect(beta.from.labels).toBeUndefined();
  });
});
