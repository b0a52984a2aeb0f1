// The demo's bad days (scripts/demoStory.ts tells the rest): a release whose verification fails
// against the real Prometheus and rolls back as a whole by itself, and a line stop during an
// incident that holds a plan while a hotfix with override-freeze passes.

import type { PromotionPlan } from '@kpromo/api';
import type { ApplicationView, ListResponse } from '@kpromo/contract';
import {
  applyManifest,
  cosignSign,
  kubeConfigFor,
  type MetricsEndpoint,
  pushTestImage,
  startMetricsEndpoint,
  startPrometheus,
  waitFor,
} from '@kpromo/test-harness';
import * as k8s from '@kubernetes/client-node';
import { type Api, isFinished, type People, type Sample, watchPlan } from './demoKit.js';

/** What both steps need of the story. */
export interface Stage {
  ns: string;
  sample: Sample;
  control: k8s.KubeConfig;
  people: People;
  api: Api;
  read: (name: string) => Promise<PromotionPlan>;
  build: { dir: string; key: string; pub: string; password: string };
  print: {
    step: (title: string, ...why: string[]) => void;
    next: (m: string) => void;
    ok: (m: string) => void;
    no: (m: string) => void;
    more: (m: string) => void;
    check: (cond: unknown, what: string) => void;
  };
}

/** Each app's error ratio, as the stable stage's verification measures it (check error-rate). */
export const ERROR_RATE =
  'sum(rate(http_requests_total{app="{application}",code="500"}[10s])) / sum(rate(http_requests_total{app="{application}"}[10s]))';

/**
 * The shop's metrics (a stand-in for its pods: kwok runs no containers) scraped every second by a
 * real Prometheus, built from its Go module once and cached. Every app serves 20 requests a second,
 * none failing, until the story says otherwise.
 */
export async function startShopMetrics(apps: readonly string[]) {
  const metrics = await startMetricsEndpoint();
  for (const app of apps) metrics.setTraffic(app, 'any', 20, 0);
  const prom = await startPrometheus({ targets: [metrics.target] });
  await prom.waitForTargets();
  return {
    metrics,
    prom,
    stop: async () => {
      await prom.stop().catch(() => undefined);
      await metrics.close().catch(() => undefined);
    },
  };
}

/** The stable Environment measures its apps with that Prometheus (a field of its own, applied apart). */
export async function measureStable(control: k8s.KubeConfig, ns: string, prometheusUrl: string) {
  await applyManifest(
    control,
    {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'Environment',
      metadata: { name: 'stable', namespace: ns },
      spec: { metrics: { prometheus: { url: prometheusUrl } } },
    },
    'kpromo-demo',
  );
}

/** A new signed build of `app` pushed to dev and deployed there, as the team's CI would. */
async function shipToDev(s: Stage, app: string, tag: string): Promise<string> {
  const dev = s.sample.registries.dev;
  const { digest } = await pushTestImage({ host: dev, repository: `shop/${app}`, tag, seed: `${app}-${tag}` });
  await cosignSign(s.build, `${dev}/shop/${app}@${digest}`);
  await applyManifest(kubeConfigFor('dev', s.sample.kubeconfigPath), {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: app, namespace: s.ns, labels: { app } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app } },
      template: {
        metadata: { labels: { app } },
        spec: { containers: [{ name: 'app', image: `${dev}/shop/${app}:${tag}@${digest}` }] },
      },
    },
  } as k8s.V1Deployment);
  return digest;
}

/** Waits until dev -> stable offers `tag` of each app as a candidate (the controller saw it run in dev). */
async function candidatesOffered(s: Stage, apps: string[], tag: string) {
  await waitFor(
    `${apps.join(', ')} ${tag} offered dev -> stable`,
    async () => {
      const q = new URLSearchParams({ namespace: s.ns, flow: 'shop', from: 'dev', to: 'stable' });
      const d = await s.api<{ candidates?: Array<{ application: string; from: { tag?: string } }> }>(
        `/diff?${q}`,
        'developer',
      );
      return apps.every((a) => d.body.candidates?.some((c) => c.application === a && c.from.tag === tag));
    },
    60_000,
    300,
  );
}

/** Creates dev -> stable for `apps` as the developer, approved at once with the digests shown. */
async function promoteToStable(s: Stage, name: string, apps: string[], digests: Record<string, string>) {
  const res = await s.api<{ plan: PromotionPlan; error?: string }>('/plans', 'developer', {
    namespace: s.ns,
    flow: 'shop',
    from: 'dev',
    to: 'stable',
    name,
    applications: apps,
    approve: true,
    expect: digests,
  });
  if (!res.ok) throw new Error(`creating plan ${name}: HTTP ${res.status} ${res.body.error}`);
  s.print.ok(`developer created and approved ${name}: ${apps.join(', ')}`);
  return res.body.plan;
}

const stableImage = async (s: Stage, app: string) => {
  const apps = kubeConfigFor('stable', s.sample.kubeconfigPath).makeApiClient(k8s.AppsV1Api);
  const d = await apps.readNamespacedDeployment({ name: app, namespace: s.ns });
  return d.spec?.template.spec?.containers[0]?.image ?? '';
};

const verificationLine = (p: PromotionPlan) =>
  (p.status?.apps ?? [])
    .map((a) => {
      const c = a.verification?.checks?.[0];
      const last = c?.samples?.at(-1)?.value;
      return `${a.application}:${a.phase}${last !== undefined ? ` (error rate ${Number(last).toFixed(3)})` : ''}`;
    })
    .join(' ');

/** Step: cart v1.2.0 fails its verification in stable; the whole release rolls back by itself. */
export async function aBadRelease(s: Stage, metrics: MetricsEndpoint) {
  s.print.step(
    'A bad release: verification fails against Prometheus and the release rolls back by itself',
    'Stable measures every promoted app for a few seconds with a real Prometheus: the error rate must stay',
    '≤ 5%. When a check fails, the flow says roll back the whole release (onFailure: rollbackRelease).',
  );
  const apps = ['cart', 'search'];
  s.print.next('the team ships cart and search v1.2.0 to dev, signed by the pipeline');
  const digests: Record<string, string> = {};
  for (const app of apps) digests[app] = await shipToDev(s, app, 'v1.2.0');
  await candidatesOffered(s, apps, 'v1.2.0');
  const before = Object.fromEntries(await Promise.all(apps.map(async (a) => [a, await stableImage(s, a)])));
  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15).toLowerCase();
  const plan = await promoteToStable(s, `shop-stable-${stamp}-bad`, apps, digests);
  s.print.next('once cart v1.2.0 rolls out, half of its requests fail (in the metrics Prometheus scrapes)');
  let broken = false;
  const done = await watchPlan(
    s.read,
    plan.metadata.name,
    (p) => {
      const cart = p.status?.apps?.find((a) => a.application === 'cart');
      if (!broken && cart && ['RollingOut', 'Verifying'].includes(cart.phase)) {
        // Half: the 10 s rate crosses 5% within a second or two, well inside the 4 s window.
        metrics.setTraffic('cart', 'any', 20, 0.5);
        broken = true;
      }
      return (p.status?.automaticRollbacks?.some((r) => r.plan) ?? false) || isFinished(p);
    },
    verificationLine,
  );
  const auto = done.status?.automaticRollbacks?.[0];
  s.print.check(auto?.plan, `the failed verification of ${plan.metadata.name} to create an automatic rollback`);
  const failed = done.status?.apps?.find((a) => a.application === 'cart');
  s.print.no(`cart: ${failed?.reason}: ${failed?.message}`);
  s.print.ok(
    `the controller rolls the release back itself: plan ${auto?.plan} (${auto?.scope}; caused by ${auto?.check} of ${auto?.application})`,
  );
  const rb = await watchPlan(s.read, auto?.plan ?? '', (p) => p.status?.phase === 'RolledBack' || isFinished(p));
  s.print.check(
    rb.status?.phase === 'RolledBack',
    `rollback ${auto?.plan} to end RolledBack, it ended ${rb.status?.phase}`,
  );
  s.print.check((rb.spec.approvals ?? []).length === 0 && !rb.spec.requestedBy, 'the rollback to be nobody’s act');
  const cause = rb.metadata.annotations?.['promotions.kpromo.dev/caused-by'];
  s.print.ok(`${auto?.plan}: RolledBack, requested and approved by nobody; caused-by: ${cause}`);
  for (const a of apps) {
    const now = await stableImage(s, a);
    s.print.check(now === before[a], `stable to run ${a} as before the release (${before[a]}), it runs ${now}`);
  }
  s.print.ok(
    `stable runs cart and search on their previous digests again (${before.cart.split(':').at(-2)?.split('@')[0]})`,
  );
  metrics.setTraffic('cart', 'any', 20, 0);
  s.print.more('(the team fixes cart; its error rate is back to 0)');
}

/** Step: an incident stops the line; a plan waits, a hotfix with override-freeze passes, the line is lifted. */
export async function aLineStop(s: Stage) {
  s.print.step(
    'An incident: the line stops; a plan waits, a hotfix passes, the line is lifted',
    'During an incident nobody should ship. A LineStop holds every plan that has not started; a hotfix',
    'approved with override-freeze (a verb only release managers hold) still passes.',
  );
  const stop = await s.api<{ name?: string; stoppedBy?: string; error?: string }>('/linestops', 'release-manager', {
    namespace: s.ns,
    name: 'inc-7',
    reason: 'INC-7: checkout latency in prod',
  });
  if (!stop.ok) throw new Error(`stopping the line: HTTP ${stop.status} ${stop.body.error}`);
  s.print.ok(`release-manager stops the line: LineStop ${s.ns}/inc-7, stopped by ${stop.body.stoppedBy}`);

  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15).toLowerCase();
  await candidatesOffered(s, ['search'], 'v1.2.0');
  const searchDigest = await digestOffered(s, 'search');
  const held = await promoteToStable(s, `shop-stable-${stamp}-search`, ['search'], { search: searchDigest });
  const waiting = await watchPlan(
    s.read,
    held.metadata.name,
    (p) => !!p.status?.gate?.lineStopped,
    () => '',
    60_000,
  );
  s.print.no(
    `${held.metadata.name} is approved but waits: ${waiting.status?.phase}, held by ${waiting.status?.gate?.lineStopped?.lineStop}`,
  );

  s.print.next('the fix: checkout v1.1.1, shipped to dev, promoted as a hotfix');
  const fix = await shipToDev(s, 'checkout', 'v1.1.1');
  await candidatesOffered(s, ['checkout'], 'v1.1.1');
  const hotfix = await promoteToStable(s, `shop-stable-${stamp}-hotfix`, ['checkout'], { checkout: fix });
  const override = await s.api<{ error?: string }>(
    `/plans/${s.ns}/${hotfix.metadata.name}/approve`,
    'release-manager',
    {
      uid: hotfix.metadata.uid,
      overrideFreeze: true,
      overrideReason: 'INC-7: checkout v1.1.1 fixes the 5xx that stopped the line',
    },
  );
  if (!override.ok)
    throw new Error(`override-freeze on ${hotfix.metadata.name}: HTTP ${override.status} ${override.body.error}`);
  s.print.ok('release-manager adds override-freeze to the hotfix, with the reason');
  const fixed = await watchPlan(s.read, hotfix.metadata.name, isFinished);
  s.print.check(
    fixed.status?.phase === 'Complete',
    `hotfix ${hotfix.metadata.name} to complete, it ended ${fixed.status?.phase}`,
  );
  // Admission binds each approval to its writer: this is who overrode the stop.
  const overriddenBy = fixed.spec.approvals?.find((x) => x.overrideFreeze)?.user;
  s.print.check(
    overriddenBy === 'release-manager',
    `the hotfix's override to be the release manager's, not ${overriddenBy}`,
  );
  const still = await s.read(held.metadata.name);
  s.print.check(
    still.status?.phase === 'Pending' && !(still.status?.apps ?? []).some((a) => a.copied || a.written),
    `${held.metadata.name} to stay Pending with nothing started while the line is stopped`,
  );
  s.print.ok(
    `${hotfix.metadata.name}: Complete through the stopped line (override by ${overriddenBy}); ${held.metadata.name} still waits`,
  );

  const lift = await s.api<{ error?: string }>(`/linestops/${s.ns}/inc-7/lift`, 'release-manager', {});
  if (!lift.ok) throw new Error(`lifting the line: HTTP ${lift.status} ${lift.body.error}`);
  s.print.ok('release-manager lifts the line: the held plan goes on, nothing to re-approve');
  const after = await watchPlan(s.read, held.metadata.name, isFinished);
  s.print.check(
    after.status?.phase === 'Complete',
    `${held.metadata.name} to complete after the lift, it ended ${after.status?.phase}`,
  );
  s.print.ok(`${held.metadata.name}: Complete`);
  const apps = await s.api<ListResponse<ApplicationView>>(`/applications?namespace=${s.ns}`, 'developer');
  const tagIn = (app: string) =>
    apps.body.items.find((a) => a.name === app)?.versions.find((v) => v.environment === 'stable')?.tag ?? '';
  s.print.more(`stable now runs checkout ${tagIn('checkout')}, search ${tagIn('search')}`);
}

async function digestOffered(s: Stage, app: string): Promise<string> {
  const q = new URLSearchParams({ namespace: s.ns, flow: 'shop', from: 'dev', to: 'stable' });
  const d = await s.api<{ candidates?: Array<{ application: string; from: { digest: string } }> }>(
    `/diff?${q}`,
    'developer',
  );
  const c = d.body.candidates?.find((x) => x.application === app);
  if (!c) throw new Error(`${app} is not a candidate dev -> stable`);
  return c.from.digest;
}
