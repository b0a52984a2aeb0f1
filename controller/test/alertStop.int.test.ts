// Alerts stop the line (issue 33): a real Prometheus Alertmanager (built from its Go module by
// test/alertmanager/build.sh) sends its webhook to the controller's receiver with its own bearer
// token; a firing alert labelled kpromo_stop_line="true" creates a LineStop recorded as caused by
// that alert and stopped by Alertmanager's identity, which holds a plan; the resolved notification
// lifts it (lineStopAlerts.liftOnResolve) and the plan runs. The test plays Prometheus: it posts
// the alerts to Alertmanager's API v2 as a Prometheus server would. The attacks at the end post to
// the receiver directly, as other authenticated callers would.
// Alerts restart soaks (issue 53): in a second tenant whose stage stable has requiredSoakTime and
// soak.resetOn, an alert for dev fired through the same Alertmanager while a plan soaks restarts
// the soak, in the plan's status and read model; alerts for another namespace, environment or
// labels, and senders that are no alert source there, restart nothing. A failed sample of dev's
// http check while it soaks restarts it as well (soak.resetOn.failedChecks).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Application, LineStop, PromotionPlan } from '@kpromo/api';
import { type AlertReceipt, planProgress } from '@kpromo/contract';
import { type Alertmanager, needComponents, startAlertmanager, waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  callApi,
  createAndApprove,
  getPlan,
  grantClusterRole,
  grantRole,
  isTerminalPlan,
  testClusterAccess,
  twoStageWorld,
  waitPlan,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import type { Running } from '../src/runtime.js';

await needComponents('alertmanager');

const world = twoStageWorld('amstop', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: ['web'],
});
const { ns: NS, run, dev, user } = world;
const GLOBAL = world.namespace('global');
/** A second tenant whose flow (written by the soak test) soaks candidates in dev before stable. */
const { ns: SOAK } = world.release('soak', { apps: ['web'], flow: false });
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
  for (const ns of [NS, GLOBAL, SOAK])
    await grantRole(dev, ns, 'alerting', lineStops(['get', 'list', 'create', 'delete', 'alert']), [alerting]);
  revokeEverywhere = await grantClusterRole(dev, ALERTS_EVERYWHERE, lineStops(['alert']), [alerting]);
  await grantRole(dev, NS, 'manager', lineStops(['get', 'list', 'create', 'delete']), [manager]);
  await grantRole(dev, GLOBAL, 'regional', lineStops(['get', 'list', 'create', 'delete', 'alert']), [regional]);
  ctl = await world.start(
    {
      namespaces: [NS, GLOBAL, SOAK],
      clusterAccess: testClusterAccess(NS, SOAK),
      lineStopNamespace: GLOBAL,
      lineStopAlerts: { liftOnResolve: true },
    },
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

/** Posts an Alertmanager notification of one firing alert to the receiver as `token`. */
const postAlert = (token: string, alert: { labels: Record<string, string>; fingerprint: string; startsAt?: string }) =>
  callApi(ctl.port, '/api/v1/alertmanager', {
    method: 'POST',
    token,
    body: { version: '4', status: 'firing', alerts: [{ status: 'firing', annotations: {}, ...alert }] },
  });

// First in the file: the global LineStop the line-stop tests leave would hold the plan before its soak.
describe('Alertmanager restarts a soak (soak.resetOn)', () => {
  it('an alert for the soaking environment matching soak.resetOn restarts the soak, in status and progress; other alerts and senders restart nothing; a failed check sample in the source restarts it too', async () => {
    // The soak counts from when the controller saw web Healthy in dev (no verification there).
    const since = await waitFor('web Healthy in dev', async () => {
      const app = await dev.getOrUndefined<Application>(
        `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${SOAK}/applications/web`,
      );
      const h = app?.status?.versions?.find((v) => v.environment === 'dev')?.healthySince;
      return h ? Date.parse(h) : undefined;
    });
    // Long enough from then that the plan still soaks while the test sends the alerts.
    const soakSeconds = Math.ceil((Date.now() - since) / 1000) + 30;
    // web's health in dev as the dev stage's http check sees it: 200 until the test says otherwise.
    const health = { status: 200 };
    const server = createServer((_req, res) => res.writeHead(health.status).end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
    const healthUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/health`;
    await applyCr(dev, {
      kind: 'PromotionFlow',
      metadata: { name: 'main', namespace: SOAK },
      spec: {
        stages: [
          // Sampled only while a plan soaks (no plan goes into dev): its soak counts from healthySince.
          {
            environment: 'dev',
            verification: { checks: [{ name: 'smoke', http: { url: healthUrl } }], interval: '1s' },
          },
          {
            environment: 'stable',
            requiredSoakTime: `${soakSeconds}s`,
            soak: { resetOn: { alerts: [{ matchers: { app: 'web', severity: 'critical' } }], failedChecks: true } },
          },
        ],
        selector: { applications: ['*'] },
        rolloutTimeoutSeconds: 120,
      },
    });
    await waitFor('the flow and both Environments of the soak tenant in the cache', async () => {
      const c = ctl.controller.cache;
      return (
        !!c.getFlow(SOAK, 'main')?.spec.stages[1].soak &&
        c.environments(SOAK).filter((e) => c.environmentSynced(e)).length === 2
      );
    });
    // Retried until the cache has web's version in dev (a candidate to show).
    await waitFor('the plan created', () =>
      createAndApprove(ctl.port, { namespace: SOAK, from: 'dev', to: 'stable', name: 'soaking' }),
    );
    const held = await waitPlan(
      dev,
      SOAK,
      'soaking',
      (p: PromotionPlan) => p.status?.conditions?.find((c) => c.type === 'Ready')?.reason === 'Soaking',
    );
    const soakedAt = held.status?.gate?.eligibleAt;
    expect(Date.parse(soakedAt ?? '')).toBe(since + soakSeconds * 1000);

    // What may not restart it, while it soaks: a sender that is no alert source in its namespace
    // (another tenant's alert source included), and alerts for another namespace, another
    // environment, or without every matcher.
    const matching = { alertname: 'WebErrors', app: 'web', severity: 'critical' };
    for (const who of [stranger, regional]) {
      const r = await postAlert(who.token, {
        labels: { ...matching, kpromo_namespace: SOAK, kpromo_environment: 'dev' },
        fingerprint: 'eeeeeeeeeeeeeeee',
      });
      expect(r.status).toBe(403);
      expect(((await r.json()) as { error: string }).error).toBe(
        `forbidden: ${who.username} may not restart soaks from alerts in namespace ${SOAK} (Kubernetes RBAC: needs verb alert on linestops there)`,
      );
    }
    for (const labels of [
      { ...matching, kpromo_namespace: NS, kpromo_environment: 'dev' },
      { ...matching, kpromo_namespace: SOAK, kpromo_environment: 'stable' },
      { ...matching, kpromo_namespace: SOAK },
      { ...matching, severity: 'warning', kpromo_namespace: SOAK, kpromo_environment: 'dev' },
    ]) {
      const r = await postAlert(alerting.token, { labels, fingerprint: 'ffffffffffffffff' });
      expect(r.status, JSON.stringify(labels)).toBe(200);
      expect(((await r.json()) as AlertReceipt).soakRestarts, JSON.stringify(labels)).toEqual([]);
    }
    const untouched = await getPlan(dev, SOAK, 'soaking');
    expect(untouched.status?.soakResets).toBeUndefined();
    expect(untouched.status?.gate?.eligibleAt).toBe(soakedAt);

    // Prometheus fires the matching alert for dev: Alertmanager sends it, the soak restarts.
    const fired = Date.now();
    const alert = {
      labels: { ...matching, pod: 'web-1', kpromo_namespace: SOAK, kpromo_environment: 'dev' },
      annotations: { summary: 'web 5xx above 2%' },
      startsAt: new Date().toISOString(),
    };
    await am.postAlerts([alert]);
    const restarted = await waitPlan(
      dev,
      SOAK,
      'soaking',
      (p: PromotionPlan) => !!p.status?.soakResets?.length,
      30_000,
    );
    const [reset] = restarted.status!.soakResets!;
    expect(reset).toMatchObject({
      environment: 'dev',
      alert: 'WebErrors',
      reason: 'alert WebErrors{app="web",severity="critical"}: web 5xx above 2%',
      by: alerting.username,
    });
    expect(reset.fingerprint).toMatch(/^[0-9a-f]+$/);
    // Whole seconds, as every kpromo timestamp.
    expect(Date.parse(reset.at)).toBeGreaterThanOrEqual(fired - 1000);
    expect(Date.parse(reset.at)).toBeLessThanOrEqual(Date.now());
    // The gate counts the soak from the restart: eligibleAt moves, and the Ready condition says why.
    const until = Date.parse(reset.at) + soakSeconds * 1000;
    const moved = await waitPlan(
      dev,
      SOAK,
      'soaking',
      (p: PromotionPlan) => Date.parse(p.status?.gate?.eligibleAt ?? '') === until,
      30_000,
    );
    const ready = moved.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready?.reason).toBe('Soaking');
    expect(ready?.message).toContain(`the soak restarted at ${reset.at}: ${reset.reason}`);
    // The read model every door renders (from the plan the API serves) says when and why.
    const progress = planProgress(
      (await (await callApi(ctl.port, `/api/v1/plans/${SOAK}/soaking`)).json()) as PromotionPlan,
    );
    expect(progress.eligibleAt).toBe(moved.status?.gate?.eligibleAt);
    expect(progress.soakResets).toEqual([reset]);

    // A repeat of the same firing (Alertmanager repeats notifications) restarts nothing.
    const repeat = await postAlert(alerting.token, {
      labels: alert.labels,
      fingerprint: reset.fingerprint ?? '',
      ...(reset.startsAt ? { startsAt: reset.startsAt } : {}),
    });
    expect(((await repeat.json()) as AlertReceipt).soakRestarts).toEqual([]);
    expect((await getPlan(dev, SOAK, 'soaking')).status?.soakResets).toHaveLength(1);

    // Healthy soak: a failed sample of dev's check while it soaks restarts it too (soak.resetOn.failedChecks).
    health.status = 500;
    const failedAt = Date.now();
    const byCheck = await waitPlan(
      dev,
      SOAK,
      'soaking',
      (p: PromotionPlan) => !!p.status?.soakResets?.some((r) => r.check),
      30_000,
    );
    health.status = 200;
    const checkReset = byCheck.status!.soakResets!.find((r) => r.check)!;
    expect(checkReset).toMatchObject({ environment: 'dev', check: 'smoke', application: 'web' });
    expect(checkReset.reason).toMatch(/^check smoke of web failed in dev: /);
    expect(checkReset.alert).toBeUndefined();
    expect(Date.parse(checkReset.at)).toBeGreaterThanOrEqual(failedAt - 1000);
    const restartedByCheck = await waitPlan(dev, SOAK, 'soaking', (p: PromotionPlan) =>
      (p.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '').includes(
        'check smoke of web failed in dev',
      ),
    );
    // The read model every door renders carries it, why and when.
    expect(planProgress(restartedByCheck).soakResets).toEqual(restartedByCheck.status?.soakResets);

    // The plan starts only once the restarted soak is over, and goes through.
    const done = await waitPlan(dev, SOAK, 'soaking', isTerminalPlan, soakSeconds * 1000 + 120_000);
    expect(done.status?.phase).toBe('Complete');
    const last = done.status!.soakResets!.at(-1)!;
    expect(last.check).toBe('smoke');
    expect(Date.parse(done.status?.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(last.at) + soakSeconds * 1000);
    await am.postAlerts([{ ...alert, endsAt: new Date(Date.now() - 1000).toISOString() }]);
  }, 300_000);
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
