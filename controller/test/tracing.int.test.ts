// Traces end to end: the controller exports OTLP/HTTP to a real OpenTelemetry Collector (built from
// Go modules by test/otel/build.sh: the core OTLP receiver and the contrib file exporter) while it
// runs a dev -> stable plan on the local clusters with real registries; the spans the collector
// received are read back from its file exporter. Checks the tree plan -> app -> copy/write/rollout
// (and the registry copy under copy), their attributes, and the release events recorded on them.
import { type CollectedSpan, type Collector, needComponents, startCollector, waitFor } from '@kpromo/test-harness';
import { callApi, isTerminalPlan, twoStageWorld, waitPlan, withShown } from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('otel');

const world = twoStageWorld('trace', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: ['api', 'web'],
});
const { ns: NS, dev } = world;
let collector: Collector;
let ctl: Running | undefined;

beforeAll(async () => {
  collector = await startCollector();
  await world.seed();
  ctl = await world.start({ tracing: { otlpEndpoint: collector.endpoint } });
}, 300_000);

afterAll(async () => {
  await world.stop();
  await collector?.stop();
});

describe('OpenTelemetry traces through a real collector', () => {
  it('a plan is a tree plan -> app -> copy/write/rollout with its attributes and release events', async () => {
    const plan = await waitFor(
      'candidates in dev',
      async () => {
        const r = await callApi(ctl!.port, '/api/v1/plans', {
          method: 'POST',
          body: await withShown(ctl!.port, { namespace: NS, from: 'dev', to: 'stable', approve: true }),
        });
        return r.status === 201 ? ((await r.json()) as { plan: { metadata: { name: string } } }).plan : undefined;
      },
      60_000,
    );
    const done = await waitPlan(dev, NS, plan.metadata.name, isTerminalPlan, 300_000);
    expect(done.status?.phase).toBe('Complete');
    // Stopping flushes the batch span processor; the file exporter writes within 100 ms.
    await ctl!.stop();
    ctl = undefined;
    const planRef = `${NS}/${plan.metadata.name}`;
    const spans = await waitFor(
      'the rollout spans of both apps at the collector',
      async () => {
        const s = collector.spans().filter((x) => x.service === 'kpromo-controller');
        return s.filter((x) => x.name === 'promote.rollout').length >= 2 ? s : undefined;
      },
      30_000,
    );
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parent = (s: CollectedSpan) => byId.get(s.parentSpanId);

    const planSpans = spans.filter((s) => s.name === 'promote.plan' && s.attributes['kpromo.plan'] === planRef);
    expect(planSpans.length).toBeGreaterThan(0);
    expect(planSpans[0].attributes).toMatchObject({
      'kpromo.action': 'promote',
      'kpromo.flow': 'main',
      'kpromo.from': 'dev',
      'kpromo.to': 'stable',
    });
    for (const app of ['api', 'web']) {
      const of = (name: string) => spans.filter((s) => s.name === name && s.attributes['kpromo.app'] === app);
      const appSpans = of('promote.app');
      expect(appSpans.length, app).toBeGreaterThan(0);
      for (const a of appSpans) {
        expect(parent(a)?.name).toBe('promote.plan');
        expect(parent(a)?.traceId).toBe(a.traceId);
      }
      const [copy] = of('promote.copy');
      expect(parent(copy)?.name).toBe('promote.app');
      // The registry copy itself is a child of the step.
      const registryCopy = spans.find((s) => s.name === 'oci.copyImage' && s.parentSpanId === copy.spanId);
      expect(registryCopy, `oci.copyImage under promote.copy of ${app}`).toBeDefined();
      const [write] = of('promote.write');
      expect(parent(write)?.name).toBe('promote.app');
      expect(write.attributes['kpromo.delivery']).toBe('patch');
      const rollouts = of('promote.rollout');
      expect(rollouts.length).toBeGreaterThan(0);
      for (const r of rollouts) expect(parent(r)?.name).toBe('promote.app');
      // The app's success is an event on the span where it was decided.
      const succeeded = rollouts.flatMap((r) => r.events).find((e) => e.name === 'kpromo.AppPromoted');
      expect(succeeded?.attributes).toMatchObject({ 'kpromo.plan': planRef, 'kpromo.app': app });
      expect(String(succeeded?.attributes['kpromo.digest'])).toMatch(/^sha256:[0-9a-f]{64}$/);
      for (const s of [copy, write, ...rollouts]) expect(s.status.code ?? 0).not.toBe(2); // not ERROR
    }
    const planEvents = planSpans.flatMap((s) => s.events.map((e) => e.name));
    expect(planEvents).toEqual(expect.arrayContaining(['kpromo.PlanApproved', 'kpromo.PlanComplete']));
  }, 420_000);
});
