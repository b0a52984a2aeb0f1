// Sharding on the real control plane: two controller processes, each a shard owning the namespaces
// labelled promotions.kpromo.dev/shard=<its name> and campaigning for its own Lease.
// - Every plan is reconciled by exactly one shard, its namespace's: the Events on each plan name one
//   reporting instance, and each Lease is held by its shard.
// - A namespace no shard owns is left alone; labelling it hands it to a shard, relabelling it to
//   another, without a restart.
// - Killing one shard does not stop the other; a new replica of the killed shard takes its Lease
//   over and finishes the work that waited.
import { readFileSync } from 'node:fs';
import { SHARD_LABEL } from '@kpromo/api';
import {
  applyCrds,
  type ControllerProcess,
  kubeConfigFor,
  startControllerProcess,
  waitFor,
} from '@kpromo/test-harness';
import {
  applyCr,
  deleteNs,
  deploymentImage,
  ensureNs,
  getPlan,
  restFor,
  seedTwoStageRelease,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { NamespaceShard, ShardSelectorError } from '../src/kube/namespaceShard.js';
import { LEASE, resourcePath } from '../src/kube/paths.js';

const RUN = Math.random().toString(36).slice(2, 7);
const SHARDS = { a: `a${RUN}`, b: `b${RUN}` } as const;
/** kpromo namespaces: one per shard and one that starts unowned. */
const NS = { a: `shard-a-${RUN}`, b: `shard-b-${RUN}`, c: `shard-c-${RUN}` } as const;
const LEASE_NS = `shard-leases-${RUN}`;
const LEASE_BASE = 'kpromo-shard-test';
const APPS = ['w1', 'w2'];
const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
const procs: ControllerProcess[] = [];

const appsNs = (ns: string) => `${ns}-apps`;

async function label(ns: string, shard: string | null) {
  await dev.request('PATCH', `/api/v1/namespaces/${ns}`, {
    body: { metadata: { labels: { [SHARD_LABEL]: shard } } },
    contentType: 'application/merge-patch+json',
  });
}

function startShard(shard: string, identity: string): ControllerProcess {
  const p = startControllerProcess({
    identity,
    kubeconfig,
    namespace: LEASE_NS,
    lease: LEASE_BASE,
    config: {
      namespaces: [],
      shard: { name: shard },
      defaultNamespace: LEASE_NS,
      clusterAccess: [
        { namespaces: Object.values(NS), contexts: ['dev', 'stable'], targetNamespaces: Object.values(NS).map(appsNs) },
      ],
    },
  });
  procs.push(p);
  return p;
}

/** An approved plan promoting one app dev -> stable, pinned to the digest running in dev. */
async function promote(ns: string, plan: string, app: string) {
  const image = await deploymentImage(dev, appsNs(ns), app);
  await applyCr(dev, {
    kind: 'PromotionPlan',
    metadata: { name: plan, namespace: ns },
    spec: {
      flow: 'main',
      from: 'dev',
      to: 'stable',
      candidates: [{ application: app, from: { tag: 'v3.0.0', digest: image?.split('@')[1] } }],
      approvals: [{ user: 'kpromo-admin' }],
    },
  } as never);
}

/** reportingInstance of every Event the controllers recorded on a plan. */
async function reporters(ns: string, plan: string): Promise<string[]> {
  const l = await dev.get<{ items: Array<{ reportingInstance?: string; involvedObject: { kind: string } }> }>(
    `/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name=${plan}`,
  );
  return l.items.filter((e) => e.involvedObject.kind === 'PromotionPlan').map((e) => e.reportingInstance ?? '');
}

/** Waits until a shard's log says its namespaces changed and now do (or do not) include `ns`. */
const shardHas = (p: ControllerProcess, ns: string, has: boolean) =>
  waitFor(
    `${p.identity} ${has ? 'owns' : 'let go of'} ${ns}`,
    async () =>
      readFileSync(p.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes('kpromo objects relisted'))
        .map((l) => JSON.parse(l) as { namespaces: string[] })
        .at(-1)
        ?.namespaces.includes(ns) === has || undefined,
    30_000,
  );

/**
 * Who acted on a plan: the reporting instances of its Events, once there are at least two (Events
 * follow status writes in the background).
 */
const actedOn = (ns: string, plan: string) =>
  waitFor(
    `events on ${plan}`,
    async () => {
      const r = await reporters(ns, plan);
      return r.length >= 2 ? r : undefined;
    },
    30_000,
  );

const holder = async (shard: string) =>
  (
    await dev.getOrUndefined<{ spec?: { holderIdentity?: string } }>(
      resourcePath(LEASE, LEASE_NS, `${LEASE_BASE}-${shard}`),
    )
  )?.spec?.holderIdentity;

const complete = (ns: string, plan: string, timeoutMs = 120_000) =>
  waitPlan(dev, ns, plan, (p) => p.status?.phase === 'Complete', timeoutMs);

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await ensureNs(dev, LEASE_NS);
  for (const [key, ns] of Object.entries(NS)) {
    await ensureNs(dev, ns);
    if (key !== 'c') await label(ns, SHARDS[key as 'a' | 'b']);
    await seedTwoStageRelease({
      dev,
      stable,
      ns,
      appsNs: appsNs(ns),
      source,
      target,
      repo: `shard${RUN}${key}`,
      apps: APPS,
      newTag: 'v3.0.0',
      oldTag: 'v2.0.0',
      seed: `shard-${RUN}-${key}`,
      applications: {},
    });
  }
  startShard(SHARDS.a, 'shard-a-1');
  startShard(SHARDS.b, 'shard-b-1');
  await waitFor(
    'both shards lead their own Lease',
    async () => ((await holder(SHARDS.a)) === 'shard-a-1' && (await holder(SHARDS.b)) === 'shard-b-1') || undefined,
    90_000,
  );
}, 300_000);

afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop()));
  for (const ns of [...Object.values(NS), LEASE_NS]) await deleteNs(dev, ns);
  for (const ns of Object.values(NS)) for (const c of [dev, stable]) await deleteNs(c, appsNs(ns));
});

describe('sharding by namespace', () => {
  it('each plan is reconciled by exactly one shard, the one its namespace is labelled for', async () => {
    await promote(NS.a, 'p-a1', 'w1');
    await promote(NS.b, 'p-b1', 'w1');
    await Promise.all([complete(NS.a, 'p-a1'), complete(NS.b, 'p-b1')]);
    for (const [ns, plan, who] of [
      [NS.a, 'p-a1', 'shard-a-1'],
      [NS.b, 'p-b1', 'shard-b-1'],
    ] as const) {
      const seen = await actedOn(ns, plan);
      expect(new Set(seen)).toEqual(new Set([who]));
    }
    expect(await holder(SHARDS.a)).toBe('shard-a-1');
    expect(await holder(SHARDS.b)).toBe('shard-b-1');
  }, 240_000);

  it('a namespace no shard owns is left alone until labelled; labelled, then relabelled, it moves between shards without a restart', async () => {
    await promote(NS.c, 'p-c1', 'w1');
    await new Promise((r) => setTimeout(r, 6_000));
    expect((await getPlan(dev, NS.c, 'p-c1')).status?.phase).toBeUndefined();
    await label(NS.c, SHARDS.b);
    await complete(NS.c, 'p-c1');
    const seen = await actedOn(NS.c, 'p-c1');
    expect(new Set(seen)).toEqual(new Set(['shard-b-1']));
    // Moved to the other shard: b lets go, a takes over; the next plan there is a's alone.
    await label(NS.c, SHARDS.a);
    await Promise.all([
      shardHas(procs[0], NS.c, true), // a
      shardHas(procs[1], NS.c, false), // b
    ]);
    await promote(NS.c, 'p-c2', 'w2');
    await complete(NS.c, 'p-c2');
    const moved = await actedOn(NS.c, 'p-c2');
    expect(new Set(moved)).toEqual(new Set(['shard-a-1']));
  }, 240_000);

  it('a killed shard does not stop the other; a new replica of it takes its Lease over and finishes its work', async () => {
    const [a] = procs;
    await a.stop('SIGKILL');
    await promote(NS.a, 'p-a2', 'w2');
    await promote(NS.b, 'p-b2', 'w2');
    await complete(NS.b, 'p-b2');
    expect((await getPlan(dev, NS.a, 'p-a2')).status?.phase).toBeUndefined();
    startShard(SHARDS.a, 'shard-a-2');
    // The killed replica never released its Lease: the new one waits for it to expire (4 s), then leads.
    await waitFor('shard-a-2 leads', async () => (await holder(SHARDS.a)) === 'shard-a-2' || undefined, 60_000);
    await complete(NS.a, 'p-a2');
    expect(await holder(SHARDS.b)).toBe('shard-b-1');
  }, 240_000);

  it('a namespaceSelector the apiserver cannot parse stops the start with an error naming the setting', async () => {
    const bad = new NamespaceShard(dev, 'team in (a,');
    const err = await bad.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ShardSelectorError);
    expect((err as Error).message).toMatch(
      /^shard\.namespaceSelector "team in \(a," is not a valid label selector: .*400/,
    );
    bad.stop();
  });
});
