import type { PromotionPlan } from '@kpromo/api';
import { app, dg, env, flow } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { HELMRELEASE, resourcePath, SECRET } from '../src/kube/paths.js';
import { FencedError } from '../src/leader/leaderElection.js';
import { reconcilePlan } from '../src/reconcile/plan/index.js';
import { StatusConflictError } from '../src/reconcile/statusWriter.js';
import { type PlanWorld, planWorld, type TraceEntry } from './support/planWorld.js';

const TAG = 'v2-20261202T100000Z'; // the flow's default tagTemplate at the plan start

/** Reconciles until the plan is terminal (or `max` passes), as the work queue would; returns the outcomes. */
async function drive(w: PlanWorld, name: string, max = 8, between?: (pass: number) => void) {
  const outcomes: Array<{ requeueAfterMs?: number }> = [];
  for (let i = 0; i < max; i++) {
    outcomes.push(await reconcilePlan(w.deps, 'ns', name));
    w.syncPlan(name);
    const phase = w.plan(name).status?.phase;
    if (phase && ['Complete', 'Incomplete', 'Failed', 'RolledBack'].includes(phase)) break;
    if (phase === 'Pending' && outcomes.at(-1)?.requeueAfterMs === undefined) break;
    between?.(i);
    w.tick(1000);
  }
  return outcomes;
}

const apps = (p: PromotionPlan) => Object.fromEntries((p.status?.apps ?? []).map((a) => [a.application, a]));
const ops = (t: TraceEntry[]) =>
  t.map((e) =>
    e.op === 'status'
      ? `status ${(e.status as PromotionPlan['status'])?.phase}: ${(e.status as PromotionPlan['status'])?.apps?.map((a) => `${a.application}=${a.phase}`).join(',') ?? ''}`
      : e.op === 'event'
        ? `event ${e.reason}`
        : e.op === 'notify'
          ? `notify ${(e.event as { type: string }).type}`
          : e.op === 'write'
            ? `${e.method} ${e.cluster}`
            : e.op,
  );

/** dev and stable patch; prod commits to a GitOps repository. */
const gitProd = (git: { path: string; credentialsSecretRef?: { name: string } }) => [
  env('dev'),
  env('stable'),
  env('prod', { delivery: { method: 'git', git: { repository: 'https://git.local/gitops.git', ...git } } }),
];

function world(over: Parameters<typeof planWorld>[0] = {}) {
  const w = planWorld(over);
  for (const e of ['dev', 'stable', 'prod']) {
    w.deploy(e, 'cart', `reg-${e}.local:5000/shop/cart:v1@${dg('b')}`);
    w.deploy(e, 'search', `reg-${e}.local:5000/shop/search:v1@${dg('c')}`);
  }
  return w;
}

describe('reconcilePlan (journal around every side effect)', () => {
  it('patch: records intent before and result after each step, then completes', async () => {
    const w = world();
    w.addPlan('p1', {
      candidates: [
        { application: 'cart', from: { tag: 'v2', digest: dg('a') } },
        { application: 'search', from: { tag: 'v7', digest: dg('d') } },
      ],
    });
    const out = await drive(w, 'p1');
    expect(out.at(-1)).toEqual({});
    const p = w.plan('p1');
    expect(p.status?.phase).toBe('Complete');
    expect(apps(p).cart).toMatchObject({ phase: 'Succeeded', targetTag: TAG, copied: true, written: true });
    expect(apps(p).cart.previous).toEqual({ tag: 'v1', digest: dg('b') });
    const o = ops(w.trace);
    // Pending is stored before the copy, Writing (copied) before the delivery write, RollingOut after it.
    const cart = (s: string) => o.findIndex((x) => x.startsWith('status') && x.includes(`cart=${s}`));
    expect(cart('Copying')).toBeLessThan(o.indexOf('copy'));
    expect(cart('Writing')).toBeGreaterThan(o.indexOf('copy'));
    expect(cart('Writing')).toBeLessThan(o.indexOf('PATCH stable'));
    expect(cart('RollingOut')).toBeGreaterThan(o.indexOf('PATCH stable'));
    expect(o.filter((x) => x.startsWith('notify'))).toEqual([
      'notify PlanApproved',
      'notify AppPromoted',
      'notify AppPromoted',
      'notify PlanComplete',
    ]);
    // Idempotent: another reconcile of the finished plan does nothing.
    const n = w.trace.length;
    expect(await reconcilePlan(w.deps, 'ns', 'p1')).toEqual({});
    expect(w.trace.length).toBe(n);
  });

  it('git: commits through commitImageChange with the rendered path and message', async () => {
    const w = world({ envs: gitProd({ path: 'apps/{app}/{environment}.yaml' }) });
    w.addPlan('g1', {
      from: 'stable',
      to: 'prod',
      candidates: [{ application: 'cart', from: { tag: 'v2', digest: dg('a') } }],
    });
    await drive(w, 'g1', 3, () => {
      // The GitOps agent applies the commit.
      w.deploy('prod', 'cart', `reg-prod.local:5000/shop/cart:v2@${dg('a')}`);
    });
    const p = w.plan('g1');
    expect(p.status?.phase).toBe('Complete');
    expect(apps(p).cart.commit).toBe(`01${'c'.repeat(38)}`);
    const c = w.trace.find((e) => e.op === 'commit');
    expect(c).toMatchObject({ path: 'apps/cart/prod.yaml', tag: TAG });
  });

  it('helmRelease: merge-patches the values of the HelmRelease', async () => {
    const w = world({
      envs: [
        env('dev'),
        env('stable', {
          delivery: { method: 'helmRelease', helmRelease: { valuesPath: 'image.tag', digestPath: 'image.digest' } },
        }),
        env('prod'),
      ],
    });
    const stable = w.clusters.get('stable')!;
    const hrPath = resourcePath(HELMRELEASE, 'app-stable', 'cart');
    stable.seed(hrPath, { metadata: { name: 'cart', generation: 1 }, spec: { values: {} } } as never);
    w.addPlan('h1');
    await drive(w, 'h1', 3, () => {
      // What helm-controller does once the values changed: release them, report it for the new generation.
      const hr = stable.objects.get(hrPath)!;
      const Ready = { type: 'Ready', status: 'True', reason: 'UpgradeSucceeded', message: '', observedGeneration: 2 };
      const history = [{ chartName: 'cart', chartVersion: '1.0.0', version: 2, status: 'deployed' }];
      stable.objects.set(hrPath, {
        ...hr,
        metadata: { ...hr.metadata, generation: 2 },
        status: { observedGeneration: 2, conditions: [Ready], history },
      } as never);
      w.deploy('stable', 'cart', `reg-stable.local:5000/shop/cart:v2@${dg('a')}`);
    });
    expect(w.plan('h1').status?.phase).toBe('Complete');
    expect(w.trace.find((e) => e.op === 'write' && e.method === 'PATCH')).toMatchObject({
      body: { spec: { values: { image: { tag: TAG, digest: dg('a') } } } },
    });
  });

  it('a permanent copy error fails the app at once; the plan is Incomplete', async () => {
    const w = world();
    w.failCopy(Object.assign(new Error('manifest unknown'), { code: 'NOT_FOUND' }));
    w.addPlan('f1');
    await drive(w, 'f1');
    const p = w.plan('f1');
    expect(p.status?.phase).toBe('Incomplete');
    expect(apps(p).cart).toMatchObject({ phase: 'Failed', reason: 'ImageNotFound', attempts: 1 });
  });

  it('transient errors are retried with backoff, then the app fails after maxAttempts', async () => {
    const w = world();
    for (let i = 0; i < 2; i++) w.failCopy(Object.assign(new Error('503'), { code: 'UNAVAILABLE' }));
    w.addPlan('t1');
    const out = await drive(w, 't1');
    expect(out.slice(0, 3)).toEqual([{ requeueAfterMs: 1000 }, { requeueAfterMs: 2000 }, {}]);
    expect(apps(w.plan('t1')).cart).toMatchObject({ phase: 'Succeeded', attempts: 2 });

    const w2 = world();
    for (let i = 0; i < 3; i++) w2.failCopy(Object.assign(new Error('503'), { code: 'UNAVAILABLE' }));
    w2.addPlan('t2');
    await drive(w2, 't2');
    expect(apps(w2.plan('t2')).cart).toMatchObject({ phase: 'Failed', reason: 'RegistryUnavailable' });
    expect(apps(w2.plan('t2')).cart.message).toBe('gave up after 3 attempts: 503');
  });

  it('waits for approval without side effects, then starts once approved', async () => {
    const w = world();
    w.addPlan('a1', { approvals: [] });
    expect(await reconcilePlan(w.deps, 'ns', 'a1')).toEqual({});
    expect(w.plan('a1').status).toMatchObject({ phase: 'Pending', gate: { approved: false } });
    const n = w.trace.length;
    expect(await reconcilePlan(w.deps, 'ns', 'a1')).toEqual({});
    expect(w.trace.length).toBe(n); // nothing changed, nothing written
    const p = w.plan('a1');
    p.spec.approvals = [{ user: 'bob' }];
    p.metadata.generation = 2;
    w.syncPlan('a1');
    await drive(w, 'a1');
    expect(w.plan('a1').status?.phase).toBe('Complete');
  });

  it('an emergency override: the Approved Event and the PlanApproved notification say who overrode and why', async () => {
    const w = world();
    const why = 'payments down, hotfix v1.1.1';
    w.addPlan('e1', { approvals: [{ user: 'carol', overrideFreeze: true, overrideReason: why }] });
    await reconcilePlan(w.deps, 'ns', 'e1');
    const approved = w.trace.find((e) => e.op === 'event' && e.reason === 'Approved');
    expect(approved).toMatchObject({
      message: `promotion of 1 application(s) dev -> stable started, overriding freeze windows and line stops: carol: ${why}`,
    });
    expect(w.trace.find((e) => e.op === 'notify')).toMatchObject({
      event: { type: 'PlanApproved', message: `overriding freeze windows and line stops: carol: ${why}` },
    });
  });

  it('rejects a plan with bad references before any side effect', async () => {
    const w = world();
    w.addPlan('v1', { flow: 'nope' });
    expect(await reconcilePlan(w.deps, 'ns', 'v1')).toEqual({});
    expect(w.plan('v1').status).toMatchObject({ phase: 'Failed' });
    expect(ops(w.trace)).toEqual(['status Failed: ', 'event FlowNotFound']);
  });

  it('stops a started plan whose Application disappeared, keeping finished apps', async () => {
    const w = world();
    w.hold('stable', 'cart');
    w.addPlan('s1', {
      candidates: [
        { application: 'cart', from: { tag: 'v2', digest: dg('a') } },
        { application: 'search', from: { tag: 'v7', digest: dg('d') } },
      ],
    });
    await reconcilePlan(w.deps, 'ns', 's1');
    w.cache.apps = w.cache.apps.filter((a) => a.metadata.name !== 'cart');
    await reconcilePlan(w.deps, 'ns', 's1');
    const p = w.plan('s1');
    expect(p.status?.phase).toBe('Incomplete');
    expect(apps(p).cart).toMatchObject({ phase: 'Failed', reason: 'ApplicationNotFound' });
    expect(apps(p).search.phase).toBe('Succeeded');
  });

  it('rolls back to the recorded previous versions and marks the original plan', async () => {
    const w = world();
    w.addPlan('p1');
    await drive(w, 'p1');
    w.addPlan('rb', { action: 'rollback', rollbackOf: 'p1', candidates: [] });
    await drive(w, 'rb');
    expect(w.plan('rb').status?.phase).toBe('RolledBack');
    expect(apps(w.plan('rb')).cart).toMatchObject({ phase: 'Succeeded', targetTag: 'v1', digest: dg('b') });
    expect(w.plan('p1').status?.phase).toBe('RolledBack');
    expect(w.trace.filter((e) => e.op === 'copy')).toHaveLength(1); // the previous image is there already
  });

  it('one plan at a time per app and environment: the newer plan waits', async () => {
    const w = world();
    w.hold('stable', 'cart');
    w.addPlan('older');
    await reconcilePlan(w.deps, 'ns', 'older');
    w.syncPlan('older');
    w.addPlan(
      'newer',
      {},
      { metadata: { name: 'newer', namespace: 'ns', generation: 1, creationTimestamp: '2026-12-02T09:30:00Z' } },
    );
    expect(await reconcilePlan(w.deps, 'ns', 'newer')).toEqual({ requeueAfterMs: 10_000 });
    expect(apps(w.plan('newer')).cart).toMatchObject({ phase: 'Pending', reason: 'WaitingForPlan' });
    w.release('stable', 'cart');
    await drive(w, 'older');
    await drive(w, 'newer');
    expect(w.plan('newer').status?.phase).toBe('Complete');
  });

  it('missing credentials Secrets fail the app with the reason, naming the Environment', async () => {
    const w = world({
      envs: [
        env('dev'),
        env('stable', { registry: { host: 'reg-stable.local:5000', credentialsSecretRef: { name: 'regcred' } } }),
        env('prod'),
      ],
    });
    w.addPlan('c1');
    await drive(w, 'c1');
    expect(apps(w.plan('c1')).cart).toMatchObject({ phase: 'Failed', reason: 'CredentialsNotFound' });
    expect(apps(w.plan('c1')).cart.message).toContain('(Environment stable registry credentials)');

    const g = world({ envs: gitProd({ path: 'a.yaml', credentialsSecretRef: { name: 'gitcred' } }) });
    g.addPlan('c2', { from: 'stable', to: 'prod' });
    await drive(g, 'c2');
    expect(apps(g.plan('c2')).cart).toMatchObject({ phase: 'Failed', reason: 'CredentialsNotFound' });
    expect(apps(g.plan('c2')).cart.message).toContain('(Environment prod delivery.git)');
    // A git Secret of the right type, opted in as a credential for the repository's host.
    g.control.seed(resourcePath(SECRET, 'ns', 'gitcred'), {
      metadata: {
        name: 'gitcred',
        labels: { 'promotions.kpromo.dev/credential': 'true' },
        annotations: { 'promotions.kpromo.dev/destinations': 'https://git.local/' },
      },
      type: 'kubernetes.io/basic-auth',
      data: { username: Buffer.from('bot').toString('base64'), password: Buffer.from('pw').toString('base64') },
    } as never);
    g.addPlan('c3', { from: 'stable', to: 'prod' });
    await drive(g, 'c3', 2);
    expect(g.trace.find((e) => e.op === 'commit')).toMatchObject({ auth: { username: 'bot', password: 'pw' } });
  });

  it('a fenced replica stops before the next side effect and records nothing', async () => {
    const w = world();
    let calls = 0;
    w.deps.fence = () => {
      if (++calls > 2) throw new FencedError('lost the lease');
    };
    w.addPlan('x1');
    await expect(reconcilePlan(w.deps, 'ns', 'x1')).rejects.toBeInstanceOf(FencedError);
    // The intent (Copying) is stored; the copy itself never starts.
    expect(ops(w.trace)).toEqual([
      'status Promoting: cart=Pending',
      'event Approved',
      'notify PlanApproved',
      'status Promoting: cart=Copying',
    ]);
  });

  it('a status changed by another writer is not overwritten', async () => {
    const w = world();
    w.addPlan('k1');
    const realPut = w.control.put.bind(w.control);
    let once = true;
    w.control.put = async <T>(path: string, body: never): Promise<T> => {
      if (once) {
        once = false;
        // Another writer changed the status after we read the plan.
        const p = w.plan('k1');
        w.control.objects.set(w.planPath('k1'), {
          ...p,
          status: { phase: 'Promoting' },
          metadata: { ...p.metadata, resourceVersion: '999' },
        });
      }
      return realPut(path, body);
    };
    await expect(reconcilePlan(w.deps, 'ns', 'k1')).rejects.toBeInstanceOf(StatusConflictError);
  });

  it('rollouts past the flow timeout fail the app; progress is re-checked meanwhile', async () => {
    const w = world({ flow: flow(['dev', 'stable', 'prod'], { rolloutTimeoutSeconds: 5, tagPattern: '^v\\d+' }) });
    w.hold('stable', 'cart');
    w.addPlan('r1');
    const out = await drive(w, 'r1', 10);
    expect(out[0].requeueAfterMs).toBeGreaterThan(0);
    expect(apps(w.plan('r1')).cart).toMatchObject({ phase: 'Failed', reason: 'RolloutTimeout' });
  });

  it('runs apps in parallel up to the flow concurrency, sharing status writes', async () => {
    const w = world({
      apps: [app('cart'), app('search'), app('a3')],
      flow: flow(['dev', 'stable', 'prod'], { concurrency: 2, tagPattern: '^v\\d+' }),
    });
    w.deploy('stable', 'a3', `reg-stable.local:5000/shop/a3:v1@${dg('e')}`);
    w.addPlan('c4', {
      candidates: ['cart', 'search', 'a3'].map((application) => ({
        application,
        from: { tag: 'v9', digest: dg('9') },
      })),
    });
    await drive(w, 'c4');
    expect(w.plan('c4').status).toMatchObject({ phase: 'Complete', succeeded: 3 });
  });

  it('a plan whose content changed after it started stops its unfinished apps (ContentChanged) and writes nothing more', async () => {
    const w = world({ flow: flow(['dev', 'stable', 'prod'], { concurrency: 1, tagPattern: '^v\\d+' }) });
    w.hold('stable', 'cart');
    w.addPlan('c1', {
      candidates: [
        { application: 'cart', from: { tag: 'v2', digest: dg('a') } },
        { application: 'search', from: { tag: 'v7', digest: dg('d') } },
      ],
    });
    await reconcilePlan(w.deps, 'ns', 'c1');
    w.syncPlan('c1');
    expect(w.plan('c1').status?.contentDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // Written behind the controller's back (an older CRD without the content rule, say).
    (w.plan('c1').spec.candidates[1].from as { digest: string }).digest = dg('e');
    w.syncPlan('c1');
    const writes = w.trace.filter((e) => e.op === 'write' || e.op === 'copy').length;
    await reconcilePlan(w.deps, 'ns', 'c1');
    const p = w.plan('c1');
    expect(apps(p).search).toMatchObject({ phase: 'Failed', reason: 'ContentChanged' });
    expect(p.status?.conditions?.find((c) => c.type === 'Valid')?.message).toContain(
      "the plan's content changed after it started",
    );
    expect(w.trace.filter((e) => e.op === 'write' || e.op === 'copy').length).toBe(writes);
  });

  it('a stage made stricter while a plan runs holds its apps that have not started (AwaitingApproval); approvals of another plan do not count', async () => {
    const w = world({ flow: flow(['dev', 'stable', 'prod'], { concurrency: 1, tagPattern: '^v\\d+' }) });
    w.hold('stable', 'cart');
    w.addPlan('s1', {
      candidates: [
        { application: 'cart', from: { tag: 'v2', digest: dg('a') } },
        { application: 'search', from: { tag: 'v7', digest: dg('d') } },
      ],
    });
    await reconcilePlan(w.deps, 'ns', 's1');
    w.syncPlan('s1');
    expect(apps(w.plan('s1')).cart.phase).not.toBe('Pending');
    // Two approvers now; bob's approval was given to another plan (uid), so only alice counts.
    w.cache.flowList = [
      flow(['dev', 'stable', 'prod'], {
        concurrency: 1,
        tagPattern: '^v\\d+',
        stages: [{ environment: 'dev' }, { environment: 'stable', approvers: { count: 2 } }, { environment: 'prod' }],
      }),
    ];
    w.plan('s1').metadata.uid = 'uid-s1';
    w.plan('s1').spec.approvals = [{ user: 'alice' }, { user: 'bob', planUID: 'uid-of-another-plan' }];
    w.syncPlan('s1');
    w.release('stable', 'cart');
    await drive(w, 's1', 4);
    const p = w.plan('s1');
    expect(apps(p).cart.phase).toBe('Succeeded');
    expect(apps(p).search).toMatchObject({ phase: 'Pending', reason: 'AwaitingApproval' });
    expect(p.status?.gate?.approvers).toEqual([
      expect.objectContaining({ user: 'alice', counted: true }),
      expect.objectContaining({ user: 'bob', counted: false }),
    ]);
    expect(w.trace.some((e) => e.op === 'copy' && e.from.includes('search'))).toBe(false);
  });

  it('a plan whose source Environment has not synced waits (SourceNotSynced) without side effects, then starts', async () => {
    const w = world();
    w.cache.envStates.set('dev', { synced: false, helmReleases: false });
    w.addPlan('src');
    const out = await reconcilePlan(w.deps, 'ns', 'src');
    w.syncPlan('src');
    expect(out).toEqual({ requeueAfterMs: 2_000 });
    const p = w.plan('src');
    expect(p.status?.apps).toBeUndefined();
    expect(p.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'SourceNotSynced',
      message: 'waiting to read the versions running in dev before starting (its cluster has not synced yet)',
    });
    expect(w.trace.some((e) => e.op === 'copy' || (e.op === 'write' && e.cluster !== 'control'))).toBe(false);
    w.cache.envStates.delete('dev');
    await drive(w, 'src');
    expect(w.plan('src').status?.phase).toBe('Complete');
  });
});

describe('reconcilePlan: the order inside a release (Application spec.dependsOn)', () => {
  /** search depends on cart; the plan lists search first, so the order is dependsOn's, not the plan's. */
  function ordered(searchDependsOn = ['cart'], cartDependsOn: string[] = []) {
    const withDeps = (name: string, dependsOn: string[]) => {
      const a = app(name);
      return { ...a, spec: { ...a.spec, dependsOn } };
    };
    const w = world({ apps: [withDeps('cart', cartDependsOn), withDeps('search', searchDependsOn)] });
    w.addPlan('o1', {
      candidates: [
        { application: 'search', from: { tag: 'v7', digest: dg('d') } },
        { application: 'cart', from: { tag: 'v2', digest: dg('a') } },
      ],
    });
    return w;
  }
  const patched = (w: PlanWorld) =>
    w.trace.flatMap((e) => (e.op === 'write' && e.method === 'PATCH' ? [e.path.split('/').at(-1)] : []));

  it('starts an app once its dependency succeeded, saying what it waits for; a rollback goes in reverse', async () => {
    const w = ordered();
    w.hold('stable', 'cart');
    await reconcilePlan(w.deps, 'ns', 'o1');
    expect(apps(w.plan('o1')).cart.phase).toBe('RollingOut');
    expect(apps(w.plan('o1')).search).toMatchObject({
      phase: 'Pending',
      reason: 'WaitingForDependency',
      message: 'waits for cart',
      waitsFor: ['cart'],
    });
    w.release('stable', 'cart');
    await drive(w, 'o1');
    const p = w.plan('o1');
    expect(p.status?.phase).toBe('Complete');
    expect(apps(p).search).toMatchObject({ phase: 'Succeeded' });
    expect(apps(p).search).not.toHaveProperty('waitsFor');
    expect(Date.parse(apps(p).search.startedAt!)).toBeGreaterThanOrEqual(Date.parse(apps(p).cart.finishedAt!));
    expect(patched(w)).toEqual(['cart', 'search']);

    w.trace.length = 0;
    w.addPlan('o1-rb', { action: 'rollback', rollbackOf: 'o1', candidates: [] });
    w.hold('stable', 'search');
    await reconcilePlan(w.deps, 'ns', 'o1-rb');
    expect(apps(w.plan('o1-rb')).cart).toMatchObject({
      phase: 'Pending',
      reason: 'WaitingForDependency',
      waitsFor: ['search'],
      message: 'waits for search (they depend on it: rolled back first)',
    });
    w.release('stable', 'search');
    await drive(w, 'o1-rb');
    expect(w.plan('o1-rb').status?.phase).toBe('RolledBack');
    expect(patched(w)).toEqual(['search', 'cart']);
  });

  it('a failed dependency holds its dependant: it never starts and fails with DependencyFailed, naming it', async () => {
    const w = ordered();
    w.failCopy(Object.assign(new Error('manifest unknown'), { code: 'NOT_FOUND' }));
    await drive(w, 'o1');
    const p = w.plan('o1');
    expect(p.status).toMatchObject({ phase: 'Incomplete', succeeded: 0, failed: 2 });
    expect(apps(p).cart).toMatchObject({ phase: 'Failed', reason: 'ImageNotFound' });
    expect(apps(p).search).toMatchObject({
      phase: 'Failed',
      reason: 'DependencyFailed',
      heldBy: 'cart',
      message: 'held: dependency cart failed',
    });
    expect(apps(p).search.startedAt).toBeUndefined();
    expect(w.trace.filter((e) => e.op === 'copy')).toHaveLength(1); // cart's only
    expect(patched(w)).toEqual([]);
    expect(ops(w.trace)).toContain('event DependencyFailed');
  });

  it('a plan created around the API whose applications form a dependsOn cycle fails before it starts (DependencyCycle)', async () => {
    const w = ordered(['cart'], ['search']);
    expect(await reconcilePlan(w.deps, 'ns', 'o1')).toEqual({});
    const p = w.plan('o1');
    const message =
      'dependsOn cycle: search → cart → search; remove one edge: cart from spec.dependsOn of Application search, or search from spec.dependsOn of Application cart';
    expect(p.status?.phase).toBe('Failed');
    expect(p.status?.conditions?.find((c) => c.type === 'Valid')).toMatchObject({
      status: 'False',
      reason: 'DependencyCycle',
      message,
    });
    expect(ops(w.trace)).toEqual(['status Failed: ', 'event DependencyCycle']);
  });
});

describe('reconcilePlan: a tag-only source binds the digest its tag names in the source registry', () => {
  /** dev runs cart by tag only; the plan names that tag with `digest`. */
  function tagOnly(digest: string) {
    const w = world();
    w.addPlan('t1', { candidates: [{ application: 'cart', from: { tag: 'v2', digest } }] });
    w.deploy('dev', 'cart', 'reg-dev.local:5000/shop/cart:v2');
    return w;
  }
  const sideEffects = (w: PlanWorld) =>
    w.trace.filter((e) => e.op === 'copy' || (e.op === 'write' && e.cluster !== 'control'));

  it('the candidate names an older digest of the tag: refused before the start (CandidateDigestMismatch), nothing copied or written', async () => {
    const w = tagOnly(dg('0'));
    w.tagDigest('reg-dev.local:5000/shop/cart:v2', dg('a'));
    await drive(w, 't1');
    const p = w.plan('t1');
    expect(p.status?.phase).toBe('Failed');
    expect(p.status?.apps).toBeUndefined();
    expect(p.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'CandidateDigestMismatch',
      message: `candidates must be the version running in dev when the plan starts (for a workload that runs a tag only, the digest that tag names in the registry of Environment dev): cart: dev runs v2 by tag only, and v2 names ${dg('a')} in the registry of Environment dev, not the candidate's ${dg('0')}; create a new plan from the candidates shown now (kpromo diff), which carry the digest the tag names`,
    });
    expect(sideEffects(w)).toEqual([]);
  });

  it('the candidate names the digest the tag names: the plan runs it', async () => {
    const w = tagOnly(dg('a'));
    w.tagDigest('reg-dev.local:5000/shop/cart:v2', dg('a'));
    await drive(w, 't1');
    expect(w.plan('t1').status?.phase).toBe('Complete');
    expect(w.trace.find((e) => e.op === 'copy')).toMatchObject({ from: `reg-dev.local:5000/shop/cart@${dg('a')}` });
  });

  it('the source registry faults: the plan waits (SourceTagUnresolved, naming the app, the tag and the fault) without side effects, then starts once it answers', async () => {
    const w = tagOnly(dg('a'));
    w.tagDigest('reg-dev.local:5000/shop/cart:v2', new Error('registry reg-dev.local:5000: 503 Service Unavailable'));
    const out = await reconcilePlan(w.deps, 'ns', 't1');
    w.syncPlan('t1');
    expect(out).toEqual({ requeueAfterMs: 10_000 });
    const p = w.plan('t1');
    expect(p.status?.phase ?? 'Pending').toBe('Pending');
    expect(p.status?.apps).toBeUndefined();
    expect(p.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'SourceTagUnresolved',
      message:
        'waiting to read the digest of the tag dev runs from the registry of Environment dev before starting (a candidate is bound to it; nothing starts until the registry answers): cart (dev runs v2 by tag only): registry reg-dev.local:5000: 503 Service Unavailable',
    });
    // The same wait again writes nothing more.
    const writes = w.trace.length;
    expect(await reconcilePlan(w.deps, 'ns', 't1')).toEqual({ requeueAfterMs: 10_000 });
    expect(w.trace.length).toBe(writes);
    expect(sideEffects(w)).toEqual([]);
    w.tagDigest('reg-dev.local:5000/shop/cart:v2', dg('a'));
    await drive(w, 't1');
    expect(w.plan('t1').status?.phase).toBe('Complete');
  });

  it("reads the tag's digest in the source Environment's registry with that Environment's credentials", async () => {
    const registry = { host: 'reg-dev.local:5000', insecure: true, credentialsSecretRef: { name: 'pull' } };
    const w = world({ envs: [env('dev', { registry }), env('stable'), env('prod')] });
    const auths = { auths: { 'reg-dev.local:5000': { username: 'bot', password: 'pw' } } };
    w.control.seed(resourcePath(SECRET, 'ns', 'pull'), {
      metadata: { name: 'pull', labels: { 'promotions.kpromo.dev/credential': 'true' } },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': Buffer.from(JSON.stringify(auths)).toString('base64') },
    } as never);
    w.addPlan('t1', { candidates: [{ application: 'cart', from: { tag: 'v2', digest: dg('a') } }] });
    w.deploy('dev', 'cart', 'reg-dev.local:5000/shop/cart:v2');
    const asked: unknown[] = [];
    w.deps.resolveDigest = async (ep, repository, tag) => {
      asked.push({ host: ep.host, auth: ep.auth, repository, tag });
      return dg('a');
    };
    await drive(w, 't1');
    expect(w.plan('t1').status?.phase).toBe('Complete');
    expect(asked[0]).toEqual({
      host: 'reg-dev.local:5000',
      auth: { username: 'bot', password: 'pw' },
      repository: 'shop/cart',
      tag: 'v2',
    });
  });

  it('the registry has no such tag: refused (CandidateDigestMismatch), saying the digest cannot be bound', async () => {
    const w = tagOnly(dg('a'));
    await drive(w, 't1');
    const ready = w.plan('t1').status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready?.reason).toBe('CandidateDigestMismatch');
    expect(ready?.message).toContain(
      `cart: dev runs v2 by tag only, and the registry of Environment dev has no tag v2 for shop/cart: the candidate's ${dg('a')} cannot be bound to what runs`,
    );
    expect(sideEffects(w)).toEqual([]);
  });
});
