import { app, env, flow } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { changedPolicyFields, policyChangeMessage, policyDigests } from '../src/reconcile/policyChange.js';

describe('policy changes of flows and Environments', () => {
  const strict = flow(['dev', 'stable'], {
    stages: [{ environment: 'dev' }, { environment: 'stable', approvers: { count: 2, groups: ['rm'] } }],
  });
  it('digests each governed field, independent of key order', () => {
    const d = policyDigests(strict);
    expect(Object.keys(d)).toEqual([
      'stages',
      'approval',
      'selector',
      'tagPattern',
      'tagTemplate',
      'concurrency',
      'rolloutTimeoutSeconds',
      'signaturePolicy',
      'promotionAttestation',
    ]);
    const reordered = flow(['dev', 'stable'], {
      stages: [{ environment: 'dev' }, { approvers: { groups: ['rm'], count: 2 }, environment: 'stable' }],
    });
    expect(policyDigests(reordered)).toEqual(d);
    expect(Object.keys(policyDigests(env('stable')))).toEqual([
      'cluster',
      'clusters',
      'namespace',
      'registry',
      'delivery',
      'freezeWindows',
      'tier',
      'metrics',
    ]);
    expect(Object.keys(policyDigests(app('web')))).toEqual([
      'owner',
      'labels',
      'metadata.labels',
      'image',
      'workloads',
      'healthChecks',
      'verification',
      'dependsOn',
    ]);
  });
  it('names each field that decides what is delivered where, or how it is judged, when it changes', () => {
    const fleet = env('prod', {
      cluster: undefined,
      clusters: [
        { name: 'eu-1', cluster: { context: 'eu-1' } },
        { name: 'us-1', cluster: { context: 'us-1' } },
      ],
    });
    const prom = { prometheus: { url: 'http://prometheus.monitoring:9090' } };
    const checks = { checks: [{ name: 'errors', prometheus: { query: 'x', max: 0.01 } }] };
    // [what, before, after, the fields named]
    const table: Array<[string, Parameters<typeof policyDigests>[0], Parameters<typeof policyDigests>[0], string[]]> = [
      [
        'a fleet re-pointed at another cluster',
        fleet,
        env('prod', { cluster: undefined, clusters: [{ name: 'eu-1', cluster: { context: 'attacker' } }] }),
        ['clusters'],
      ],
      [
        'stage checks measured elsewhere',
        env('prod', { metrics: prom }),
        env('prod', { metrics: { prometheus: { url: 'http://mine:9090' } } }),
        ['metrics'],
      ],
      ['metrics removed', env('prod', { metrics: prom }), env('prod'), ['metrics']],
      ['a display name', env('prod'), env('prod', { displayName: 'Production' }), []],
      [
        'tag template, concurrency, timeout',
        strict,
        { ...strict, spec: { ...strict.spec, tagTemplate: '{tag}', concurrency: 64, rolloutTimeoutSeconds: 86400 } },
        ['tagTemplate', 'concurrency', 'rolloutTimeoutSeconds'],
      ],
      [
        'workloads of an app',
        app('web'),
        app('web', { workloads: [{ kind: 'Deployment', name: 'payments' }] }),
        ['workloads'],
      ],
      ['its image repository', app('web'), app('web', { image: { repository: 'other/web' } }), ['image']],
      ['its own checks removed', app('web', { verification: checks }), app('web'), ['verification']],
      ['the order of its release', app('web'), app('web', { dependsOn: ['db'] }), ['dependsOn']],
      ['a selector label', app('web', {}, { tier: 'critical' }), app('web'), ['metadata.labels']],
      [
        'spec labels and owner',
        app('web', { labels: { a: 'b' } }),
        app('web', { owner: 'team-b' }),
        ['owner', 'labels'],
      ],
      ['its description', app('web'), app('web', { description: 'the shop' }), []],
    ];
    for (const [what, before, after, fields] of table)
      expect(changedPolicyFields(policyDigests(before), policyDigests(after)), what).toEqual(fields);
  });
  it('records a field that became governed after its status was written without an Event (nobody changed it)', () => {
    const { clusters: _, metrics: __, ...old } = policyDigests(env('stable'));
    expect(
      changedPolicyFields(old, policyDigests(env('stable', { metrics: { prometheus: { url: 'http://p:9090' } } }))),
    ).toEqual([]);
    expect(changedPolicyFields(old, policyDigests(env('stable', { tier: 'production' })))).toEqual(['tier']);
  });
  it('names the fields that changed since the recorded digests; nothing when none were recorded', () => {
    const before = policyDigests(strict);
    const auto = flow(['dev', 'stable'], {
      stages: [{ environment: 'dev' }, { environment: 'stable', approval: 'auto' }],
      tagPattern: '.*',
      concurrency: 9,
    });
    expect(changedPolicyFields(before, policyDigests(auto))).toEqual(['stages', 'tagPattern', 'concurrency']);
    expect(changedPolicyFields(before, policyDigests(strict))).toEqual([]);
    expect(changedPolicyFields(undefined, policyDigests(auto))).toEqual([]);
    const moved = env('stable', { namespace: 'other-team' });
    expect(changedPolicyFields(policyDigests(env('stable')), policyDigests(moved))).toEqual(['namespace']);
  });
  it('says who changed it when the writer named themselves, and where to look when not', () => {
    const named = {
      ...strict,
      metadata: { ...strict.metadata, generation: 4, annotations: { 'promotions.kpromo.dev/changed-by': 'pat' } },
    };
    expect(policyChangeMessage(named, ['stages'])).toBe(
      'release policy of PromotionFlow ns/main changed (stages; generation 4) by pat',
    );
    expect(policyChangeMessage(strict, ['selector'])).toContain(
      'by a writer who did not set promotions.kpromo.dev/changed-by (the apiserver audit log names them',
    );
  });
});
