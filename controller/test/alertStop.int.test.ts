// Alerts stop the line (issue 33): a real Prometheus Alertmanager (built from its Go module by
// test/alertmanager/build.sh) sends its webhook to the controller's receiver with its own bearer
// token; a firing alert labelled kpromo_stop_line="true" creates a LineStop recorded as caused by
// that alert and stopped by Alertmanager's identity, which holds a plan; the resolved notification
// lifts it (lineStopAlerts.liftOnResolve) and the plan runs. The test plays Prometheus: it posts
// the alerts to Alertmanager's API v2 as a Prometheus server would.
import type { LineStop, PromotionPlan } from '@kpromo/api';
import {
  type Alertmanager,
  applyCrds,
  kubeConfigFor,
  needComponents,
  startAlertmanager,
  waitFor,
} from '@kpromo/test-harness';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../src/observability/logger.js';
import { type Running, startController } from '../src/runtime.js';
import {
  callApi,
  controllerConfig,
  deleteNs,
  ensureNs,
  grantRole,
  isTerminalPlan,
  restFor,
  runNamespaces,
  seedTwoStageRelease,
  type TestUser,
  waitPlan,
  withShown,
} from './e2eHelpers.js';

await needComponents('alertmanager');

const names = runNamespaces('amstop');
const NS = names.ns;
const GLOBAL = `amstop-global-${names.run}`;
const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
const stops = (ns: string) => `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${ns}/linestops`;

const user = (name: string): TestUser => ({
  token: `${name}-${names.run}-0123456789abcdef`,
  username: `${name}-${names.run}`,
});
/** Alertmanager's identity at the controller: may create and delete LineStops, nothing else. */
const alerting = user('alertmanager');
/** Any other caller of the receiver. */
const stranger = user('stranger');

let ctl: Running;
let am: Alertmanager;

const listStops = async (ns: string) => (await dev.get<{ items: LineStop[] }>(stops(ns))).items;

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  for (const ns of [NS, GLOBAL]) await ensureNs(dev, ns);
  await seedTwoStageRelease({
    dev,
    stable,
    ns: NS,
    appsNs: names.apps,
    source,
    target,
    repo: `amstop${names.run}`,
    apps: ['web'],
    newTag: 'v2.0.0',
    oldTag: 'v1.0.0',
    seed: `amstop-${names.run}`,
    applications: {},
  });
  const rules = [
    { apiGroups: ['promotions.kpromo.dev'], resources: ['linestops'], verbs: ['get', 'list', 'create', 'delete'] },
  ];
  for (const ns of [NS, GLOBAL]) await grantRole(dev, ns, 'alerting', rules, [alerting]);
  ctl = await startController(
    controllerConfig(
      kubeconfig,
      NS,
      {
        leaderElection: { enabled: false },
        namespaces: [NS, GLOBAL],
        lineStopNamespace: GLOBAL,
        lineStopAlerts: { liftOnResolve: true },
      },
      [alerting, stranger],
    ),
    { log: createLogger({ level: 'warn' }) },
  );
  am = await startAlertmanager({
    webhook: `http://127.0.0.1:${ctl.port}/api/v1/alertmanager`,
    bearerToken: alerting.token,
  });
}, 300_000);

afterAll(async () => {
  await am?.stop();
  await ctl?.stop().catch(() => undefined);
  for (const ns of [NS, GLOBAL]) await deleteNs(dev, ns);
  for (const c of [dev, stable]) await deleteNs(c, names.apps);
});

describe('Alertmanager stops the line', () => {
  it('a firing alert stops the line as Alertmanager, holds a plan, and its resolution lifts the stop', async () => {
    const startsAt = new Date().toISOString();
    const alert = {
      labels: { alertname: 'CheckoutErrors', severity: 'page', kpromo_stop_line: 'true', kpromo_namespace: NS },
      annotations: { summary: 'checkout 5xx above 2%' },
      startsAt,
    };
    // An alert without the label changes nothing.
    await am.postAlerts([alert, { labels: { alertname: 'DiskFilling', severity: 'warning' }, startsAt }]);
    const [stop] = await waitFor('the LineStop of the alert', async () => {
      const s = await listStops(NS);
      return s.length ? s : undefined;
    });
    expect(stop.metadata.name).toMatch(/^alert-[0-9a-f]+$/);
    expect(stop.spec).toMatchObject({
      reason: 'alert CheckoutErrors: checkout 5xx above 2%',
      stoppedBy: alerting.username,
      source: { kind: 'Alert', alert: 'CheckoutErrors' },
    });
    expect(stop.spec.source?.fingerprint).toBe(stop.metadata.name.slice('alert-'.length));

    const created = await callApi(ctl.port, '/api/v1/plans', {
      method: 'POST',
      body: await withShown(ctl.port, { namespace: NS, from: 'dev', to: 'stable', name: 'held', approve: true }),
    });
    expect(created.status).toBe(201);
    const held = await waitPlan(
      dev,
      NS,
      'held',
      (p: PromotionPlan) => p.status?.conditions?.find((c) => c.type === 'Ready')?.reason === 'LineStopped',
    );
    expect(held.status?.gate?.lineStopped).toMatchObject({
      lineStop: `${NS}/${stop.metadata.name}`,
      stoppedBy: alerting.username,
    });

    // Prometheus resolves it: Alertmanager sends the resolved notification, the stop is lifted.
    await am.postAlerts([{ ...alert, endsAt: new Date(Date.now() - 1000).toISOString() }]);
    await waitFor('the LineStop lifted', async () => (await listStops(NS)).length === 0, 30_000);
    const done = await waitPlan(dev, NS, 'held', isTerminalPlan, 120_000);
    expect(done.status?.phase).toBe('Complete');
  });

  it('an alert naming no namespace stops every namespace from the line-stop namespace', async () => {
    await am.postAlerts([
      { labels: { alertname: 'RegionDown', kpromo_stop_line: 'true' }, startsAt: new Date().toISOString() },
    ]);
    const [stop] = await waitFor('the global LineStop', async () => {
      const s = await listStops(GLOBAL);
      return s.length ? s : undefined;
    });
    expect(stop.spec).toMatchObject({
      scope: 'AllNamespaces',
      reason: 'alert RegionDown',
      stoppedBy: alerting.username,
    });
  });

  it('the receiver authorises its caller: another identity is refused and stops nothing', async () => {
    const r = await callApi(ctl.port, '/api/v1/alertmanager', {
      method: 'POST',
      token: stranger.token,
      body: {
        version: '4',
        status: 'firing',
        alerts: [
          {
            status: 'firing',
            labels: { alertname: 'Fake', kpromo_stop_line: 'true', kpromo_namespace: NS },
            annotations: {},
            fingerprint: 'aaaaaaaaaaaaaaaa',
          },
        ],
      },
    });
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error: string }).error).toContain(
      `forbidden: ${stranger.username} may not create linestops in namespace ${NS}`,
    );
    expect(await dev.getOrUndefined(`${stops(NS)}/alert-aaaaaaaaaaaaaaaa`)).toBeUndefined();
    // Without a token at all: 401.
    expect((await callApi(ctl.port, '/api/v1/alertmanager', { method: 'POST', token: null, body: {} })).status).toBe(
      401,
    );
  });
});
