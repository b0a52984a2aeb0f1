// Alerts stop the line (issue 33): a real Prometheus Alertmanager (built from its Go module by
// test/alertmanager/build.sh) sends its webhook to the controller's receiver with its own bearer
// token; a firing alert labelled kpromo_stop_line="true" creates a LineStop recorded as caused by
// that alert and stopped by Alertmanager's identity, which holds a plan; the resolved notification
// lifts it (lineStopAlerts.liftOnResolve) and the plan runs. The test plays Prometheus: it posts
// the alerts to Alertmanager's API v2 as a Prometheus server would. The attacks at the end post to
// the receiver directly, as other authenticated callers would.
import type { LineStop, PromotionPlan } from '@kpromo/api';
import { type Alertmanager, needComponents, startAlertmanager, waitFor } from '@kpromo/test-harness';
import {
  callApi,
  grantClusterRole,
  grantRole,
  isTerminalPlan,
  twoStageWorld,
  waitPlan,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

await needComponents('alertmanager');

const world = twoStageWorld('amstop', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: ['web'],
});
const { ns: NS, run, dev, user } = world;
const GLOBAL = world.namespace('global');
const stops = (ns: string) => `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${ns}/linestops`;

/** Alertmanager's identity at the controller: may create and delete LineStops, nothing else. */
const alerting = user('alertmanager');
/** Any other caller of the receiver. */
const stranger = user('stranger');
/** A release manager: may stop and lift the line in NS by hand (create, delete), but is no alert source. */
const manager = user('manager');
/** May record alerts in the line-stop namespace only (a Role there), not in every namespace. */
const regional = user('regional');
const ALERTS_EVERYWHERE = `amstop-alerts-everywhere-${run}`;
let revokeEverywhere: (() => Promise<void>) | undefined;

let ctl: Running;
let am: Alertmanager;

const listStops = async (ns: string) => (await dev.get<{ items: LineStop[] }>(stops(ns))).items;

beforeAll(async () => {
  await world.seed();
  const lineStops = (verbs: string[]) => [{ apiGroups: ['promotions.kpromo.dev'], resources: ['linestops'], verbs }];
  // Alertmanager: the verb `alert` lets it record alerts as the cause of the stops it creates;
  // bound cluster-wide, an alert naming no namespace may stop every namespace.
  for (const ns of [NS, GLOBAL])
    await grantRole(dev, ns, 'alerting', lineStops(['get', 'list', 'create', 'delete', 'alert']), [alerting]);
  revokeEverywhere = await grantClusterRole(dev, ALERTS_EVERYWHERE, lineStops(['alert']), [alerting]);
  await grantRole(dev, NS, 'manager', lineStops(['get', 'list', 'create', 'delete']), [manager]);
  await grantRole(dev, GLOBAL, 'regional', lineStops(['get', 'list', 'create', 'delete', 'alert']), [regional]);
  ctl = await world.start(
    { namespaces: [NS, GLOBAL], lineStopNamespace: GLOBAL, lineStopAlerts: { liftOnResolve: true } },
    [alerting, stranger, manager, regional],
  );
  am = await startAlertmanager({
    webhook: `http://127.0.0.1:${ctl.port}/api/v1/alertmanager`,
    bearerToken: alerting.token,
  });
}, 300_000);

afterAll(async () => {
  await am?.stop();
  await revokeEverywhere?.();
  await world.stop();
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
      `forbidden: ${stranger.username} may not stop or lift the line from alerts in namespace ${NS}`,
    );
    expect(await dev.getOrUndefined(`${stops(NS)}/alert-aaaaaaaaaaaaaaaa`)).toBeUndefined();
    // Without a token at all: 401.
    expect((await callApi(ctl.port, '/api/v1/alertmanager', { method: 'POST', token: null, body: {} })).status).toBe(
      401,
    );
  });
});

/** An Alertmanager notification of one firing alert, as a caller other than Alertmanager posts it. */
const forgedAlert = (fingerprint: string, labels: Record<string, string>) => ({
  version: '4',
  status: 'firing',
  alerts: [{ status: 'firing', labels: { kpromo_stop_line: 'true', ...labels }, annotations: {}, fingerprint }],
});

describe('attacks on the Alertmanager receiver', () => {
  it('a release manager allowed to stop the line posts a forged alert: refused, no LineStop claims an alert as its cause', async () => {
    const r = await callApi(ctl.port, '/api/v1/alertmanager', {
      method: 'POST',
      token: manager.token,
      body: forgedAlert('bbbbbbbbbbbbbbbb', { alertname: 'Forged', kpromo_namespace: NS }),
    });
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error: string }).error).toBe(
      `forbidden: ${manager.username} may not stop or lift the line from alerts in namespace ${NS} (Kubernetes RBAC: needs verb alert on linestops there)`,
    );
    expect(await dev.getOrUndefined(`${stops(NS)}/alert-bbbbbbbbbbbbbbbb`)).toBeUndefined();
  });

  it('an alert source allowed in the line-stop namespace only sends an alert naming no namespace: refused, no namespace is stopped', async () => {
    const r = await callApi(ctl.port, '/api/v1/alertmanager', {
      method: 'POST',
      token: regional.token,
      body: forgedAlert('cccccccccccccccc', { alertname: 'Everything' }),
    });
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error: string }).error).toBe(
      `forbidden: ${regional.username} may not stop every namespace from an alert (Kubernetes RBAC: needs verb alert on linestops in all namespaces, a ClusterRole bound with a ClusterRoleBinding)`,
    );
    expect(await dev.getOrUndefined(`${stops(GLOBAL)}/alert-cccccccccccccccc`)).toBeUndefined();
    // The same source may still stop the line where it holds the verb: in the line-stop namespace, by label.
    const own = await callApi(ctl.port, '/api/v1/alertmanager', {
      method: 'POST',
      token: regional.token,
      body: forgedAlert('dddddddddddddddd', { alertname: 'Regional', kpromo_namespace: GLOBAL }),
    });
    expect(own.status).toBe(200);
    expect((await dev.get<LineStop>(`${stops(GLOBAL)}/alert-dddddddddddddddd`)).spec).toMatchObject({
      scope: 'Namespace',
      stoppedBy: regional.username,
      source: { kind: 'Alert', alert: 'Regional', fingerprint: 'dddddddddddddddd' },
    });
  });
});
