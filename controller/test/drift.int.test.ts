// Drift, detected from the watches kpromo already has (issue 51, first slice: onDrift report): an
// app promoted to stable, then a cluster admin changes its image with a plain Deployment patch. The
// Application shows the drift in status, a Drifted condition and one DriftDetected Event within
// seconds, and GET /applications, the MCP state and /metrics show it; promoting again clears it.
// Real controller, real apiservers and registries, workloads on kwok.
import type { Application, ApplicationDrift, Environment } from '@kpromo/api';
import type { ApplicationView, ListResponse } from '@kpromo/contract';
import { waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  callApi,
  isTerminalPlan,
  promoteAndWait,
  TEST_ADMIN,
  testTokensFile,
  twoStageWorld,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { call, httpClient, ok, text } from '@kpromo/test-harness/mcpClient';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEPLOYMENT, KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import type { Running } from '../src/runtime.js';
import { receiverSecret, type SaasReceivers, startSaasReceivers } from './support/saasReceivers.js';

const world = twoStageWorld('drift', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  // web is promoted; api never is (kpromo delivered nothing of it to stable: never drift).
  apps: ['web', 'api'],
  flow: { rolloutTimeoutSeconds: 600 },
});
const { ns: NS, appsNs: APPS_NS, dev, stable, repo: REPO, target: TARGET } = world;
let ctl: Running;
/** The generic webhook stand-in a Notification subscribed to DriftDetected sends to. */
let receivers: SaasReceivers;

const appPath = (name: string) => resourcePath(KPROMO_TYPES.Application, NS, name);
const readApp = (name: string) => dev.get<Application>(appPath(name));
/** web from dev to stable, approved and finished; it must end Complete. */
async function promoteWeb() {
  const plan = await promoteAndWait(ctl.port, dev, { namespace: NS, from: 'dev', to: 'stable', applications: ['web'] });
  expect(plan.status?.phase, JSON.stringify(plan.status?.apps)).toBe('Complete');
  return plan;
}
const drifted = (a: Application) => a.status?.conditions?.find((c) => c.type === 'Drifted');
/** The Drifted condition of Environment `name` once it is `status` (the Environment's status follows the Applications'). */
const envDrifted = (name: string, status: 'True' | 'False') =>
  waitFor(
    `Environment ${name} Drifted=${status}`,
    async () => {
      const e = await dev.get<Environment>(resourcePath(KPROMO_TYPES.Environment, NS, name));
      const c = e.status?.conditions?.find((x) => x.type === 'Drifted');
      return c?.status === status ? { ...c, generation: e.metadata.generation } : undefined;
    },
    30_000,
  );

/** DriftDetected Events on Application `name`. */
async function driftEvents(name: string): Promise<Array<{ message: string; type: string }>> {
  const l = await dev.get<{
    items: Array<{ reason: string; message: string; type: string; involvedObject: { kind: string } }>;
  }>(`/api/v1/namespaces/${NS}/events?fieldSelector=involvedObject.name=${name}`);
  return l.items.filter((e) => e.involvedObject.kind === 'Application' && e.reason === 'DriftDetected');
}

async function driftGauge(): Promise<string | undefined> {
  const m = await (await fetch(`http://127.0.0.1:${ctl.port}/metrics`)).text();
  return m
    .split('\n')
    .find((l) => l.startsWith('kpromo_drifted_applications{') && l.includes(`namespace="${NS}"`))
    ?.split(' ')
    .pop();
}

beforeAll(async () => {
  receivers = await startSaasReceivers({ slackToken: 'unused', githubToken: 'unused' });
  await world.seed();
  await receiverSecret(dev, receivers, NS, 'hmac', { secret: 'drift-hmac' });
  await applyCr(dev, {
    kind: 'Notification',
    metadata: { name: 'drift', namespace: NS },
    spec: { events: ['DriftDetected'], webhook: { url: receivers.urls.generic, secretRef: { name: 'hmac' } } },
  });
  ctl = await world.start({
    mcp: { enabled: true, host: '127.0.0.1', port: 0, write: false },
    auth: { staticTokensFile: testTokensFile([]), anonymousMetrics: true },
  });
}, 400_000);

afterAll(async () => {
  await world.stop();
  await receivers?.close();
});

describe('drift', () => {
  let promotedDigest: string;
  let admin: string;

  it('none after a promotion: stable runs what the plan delivered', async () => {
    const plan = await promoteWeb();
    promotedDigest = plan.status?.apps?.[0]?.digest ?? '';
    expect(promotedDigest).toBe(world.devDigest.web);
    const app = await waitFor(
      'web Drifted=False',
      async () => {
        const a = await readApp('web');
        return drifted(a)?.status === 'False' ? a : undefined;
      },
      30_000,
    );
    expect(app.status?.drift).toBeUndefined();
  }, 300_000);

  it("a cluster admin's image patch in stable: status.drift, condition Drifted and one Event within seconds", async () => {
    // What `kubectl patch` sends (field manager kubectl-patch), as the harness's cluster admin.
    admin = `${TARGET}/stable/${REPO}/web:v1.0.0@${world.stableOld.web}`;
    const changedAt = Date.now();
    await stable.request('PATCH', resourcePath(DEPLOYMENT, APPS_NS, 'web'), {
      contentType: 'application/strategic-merge-patch+json',
      body: { spec: { template: { spec: { containers: [{ name: 'main', image: admin }] } } } },
      query: { fieldManager: 'kubectl-patch' },
    });
    const app = await waitFor(
      'web drift recorded',
      async () => {
        const a = await readApp('web');
        return a.status?.drift?.length ? a : undefined;
      },
      20_000,
    );
    // The status write is debounced 5 s after the workload event: well within 20 s.
    expect(Date.now() - changedAt).toBeLessThan(20_000);
    const want: Partial<ApplicationDrift> = {
      environment: 'stable',
      // The flow's tag template adds the promotion time to the tag.
      expected: expect.objectContaining({ digest: promotedDigest, tag: expect.stringMatching(/^v2\.0\.0/) }),
      found: expect.objectContaining({ digest: world.stableOld.web, tag: 'v1.0.0' }),
      changedBy: 'kubectl-patch',
    };
    expect(app.status?.drift).toEqual([expect.objectContaining(want)]);
    const cond = drifted(app);
    expect(cond).toMatchObject({
      status: 'True',
      reason: 'DriftDetected',
      observedGeneration: app.metadata.generation,
    });
    expect(cond?.message).toContain('kubectl-patch');
    const events = await waitFor('DriftDetected Event', async () => {
      const ev = await driftEvents('web');
      return ev.length ? ev : undefined;
    });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'Warning' });
    expect(events[0].message).toContain('kubectl-patch');
    // api was never delivered to stable by kpromo: it runs the seeded version and is not drift.
    expect((await readApp('api')).status?.drift).toBeUndefined();
    expect(await driftGauge()).toBe('1');
    // The Environment says it too, naming the application (kubectl get penv stable).
    const env = await envDrifted('stable', 'True');
    expect(env).toMatchObject({ reason: 'DriftDetected', observedGeneration: env.generation });
    expect(env.message).toMatch(/^1 application\(s\) run what kpromo did not deliver .*web: stable runs v1\.0\.0/);
    expect((await envDrifted('dev', 'False')).reason).toBe('AsDelivered');
    // And the Notification subscribed to DriftDetected got it, once, with what runs now.
    const sent = await waitFor('DriftDetected webhook', async () =>
      receivers.of('generic').length ? receivers.of('generic') : undefined,
    );
    expect(sent.map((c) => c.headers['x-kpromo-event'])).toEqual(['DriftDetected']);
    expect(sent[0].json).toMatchObject({
      type: 'DriftDetected',
      data: { namespace: NS, to: 'stable', application: 'web', tag: 'v1.0.0', digest: world.stableOld.web },
    });
    expect(receivers.problems).toEqual([]);
  }, 90_000);

  it('GET /applications and the MCP state show it; reconciles after it tell no second Event or notification', async () => {
    const r = await callApi(ctl.port, `/api/v1/applications?namespace=${NS}`);
    expect(r.status).toBe(200);
    const list = (await r.json()) as ListResponse<ApplicationView>;
    const web = list.items.find((a) => a.name === 'web');
    expect(web?.drift).toEqual([expect.objectContaining({ environment: 'stable', changedBy: 'kubectl-patch' })]);
    expect(list.items.find((a) => a.name === 'api')?.drift).toBeUndefined();

    const mcp = await httpClient(ctl.mcp!.url, TEST_ADMIN.token);
    try {
      const s = await call(mcp, 'state', { namespace: NS, application: 'web' });
      const out = ok<{
        application: { drift?: ApplicationDrift[] };
        conditions: Array<{ type: string; status: string }>;
      }>(s);
      expect(out.application.drift?.[0]).toMatchObject({
        environment: 'stable',
        found: { digest: world.stableOld.web },
      });
      expect(out.conditions).toContainEqual(expect.objectContaining({ type: 'Drifted', status: 'True' }));
      expect(text(s)).toContain('DRIFT');
    } finally {
      await mcp.close();
    }
    // The Application is reconciled again (a spec change): the drift stays, no second Event.
    await dev.mergePatch(appPath('web'), { spec: { description: 'drift test' } });
    await waitFor('web reconciled at its new generation', async () => {
      const a = await readApp('web');
      return drifted(a)?.observedGeneration === a.metadata.generation ? a : undefined;
    });
    expect(await driftEvents('web')).toHaveLength(1);
    expect(receivers.of('generic')).toHaveLength(1);
  }, 60_000);

  it('promoting again restores the approved digest and clears the drift', async () => {
    const plan = await promoteWeb();
    await waitPlan(dev, NS, plan.metadata.name, isTerminalPlan);
    const app = await waitFor(
      'web drift cleared',
      async () => {
        const a = await readApp('web');
        return !a.status?.drift && drifted(a)?.status === 'False' ? a : undefined;
      },
      30_000,
    );
    expect(drifted(app)?.reason).toBe('AsDelivered');
    expect(await driftGauge()).toBe('0');
    expect((await envDrifted('stable', 'False')).reason).toBe('AsDelivered');
  }, 300_000);
});
