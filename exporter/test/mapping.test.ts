import { fleetPlan } from '@kpromo/test-harness/fleetPlan';
import { describe, expect, it } from 'vitest';
import { chunkByCountAndSize, staleIdentifiers } from '../src/batching.js';
import { ConfigError, parseConfig } from '../src/config.js';
import { crdToResource } from '../src/discoverCrds.js';
import { compileResource, finishEntity, mapObjects, STATE_KEY_PROPERTY } from '../src/mapEntity.js';
import { retryDelayMs } from '../src/portClient.js';
import { missingAfterRelist } from '../src/watchResources.js';

const base = { stateKey: 'test', clusters: [{ name: 'dev', context: 'dev' }] };

describe('config', () => {
  it('fills defaults for the four kpromo kinds', async () => {
    const cfg = await parseConfig(base);
    expect(cfg.resources.map((r) => r.kind.split('/')[2])).toEqual([
      'environments',
      'applications',
      'promotionflows',
      'promotionplans',
    ]);
    expect(cfg.blueprints.map((b) => b.identifier)).toContain('kpromoApplication');
  });

  it('reports schema problems with their location', async () => {
    const err = await parseConfig({
      ...base,
      resources: [{ kind: 'a/b/c', port: { entity: { mappings: [{ title: '.x' }] } } }],
      bogus: 1,
    }).catch((e) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain('unknown field "bogus"');
    expect(err.message).toContain('resources.0.port.entity.mappings.0: missing required field "identifier"');
  });

  it('rejects jq expressions that do not compile, naming the field', async () => {
    const err = await parseConfig({
      ...base,
      includeDefaults: false,
      resources: [
        {
          kind: 'x.io/v1/things',
          port: {
            entity: { mappings: [{ identifier: '.metadata.name', blueprint: '"t"', properties: { a: '.spec | [[' } }] },
          },
        },
      ],
    }).catch((e) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(/properties\.a: jq expression ".spec \| \[\[" does not compile/);
  });

  it('rejects a malformed kind', async () => {
    const err = await parseConfig({
      ...base,
      includeDefaults: false,
      resources: [{ kind: 'things', port: { entity: { mappings: [{ identifier: '.a', blueprint: '"b"' }] } } }],
    }).catch((e) => e);
    expect(err.message).toContain('resources.0.kind');
  });
});

const app = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'Application',
  metadata: { name, namespace: 'shop' },
  spec: { owner: 'team-a', image: { repository: 'shop/checkout' }, workloads: [{ name }] },
  status: {
    versions: [
      { environment: 'dev', tag: 'v1', health: 'Healthy' },
      { environment: 'prod', tag: 'v0', health: 'Degraded' },
    ],
  },
  ...extra,
});

describe('mapping', () => {
  it('maps the default Application with cluster-qualified identifier and env relations', async () => {
    const cfg = await parseConfig(base);
    const res = cfg.resources.find((r) => r.kind.endsWith('/applications'))!;
    const [r] = await mapObjects(compileResource(res)('dev'), [app('checkout')], 'test');
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const [m] = r.entities;
    expect(m.blueprint).toBe('kpromoApplication');
    expect(m.entity.identifier).toBe('dev:shop:checkout');
    expect(m.entity.team).toBe('team-a');
    expect(m.entity.relations.environments).toEqual(['dev:shop:dev', 'dev:shop:prod']);
    expect(m.entity.properties).toMatchObject({
      cluster: 'dev',
      repository: 'shop/checkout',
      versions: { dev: { tag: 'v1' } },
      [STATE_KEY_PROPERTY]: 'test',
    });
  });

  it("maps an Application's drift and its Drifted condition (Unknown until the controller reported)", async () => {
    const cfg = await parseConfig(base);
    const res = cfg.resources.find((r) => r.kind.endsWith('/applications'))!;
    const drift = {
      environment: 'prod',
      expected: { tag: 'v1', digest: 'sha256:1' },
      found: { digest: 'sha256:9' },
      since: '2026-01-01T00:00:00Z',
      changedBy: 'kubectl-patch',
    };
    const drifted = app('checkout', {
      status: { drift: [drift], conditions: [{ type: 'Drifted', status: 'True' }] },
    });
    const results = await mapObjects(compileResource(res)('dev'), [drifted, app('web')], 'test');
    const [a, b] = results.map((r) => (r.ok ? r.entities[0].entity.properties : r));
    expect(a).toMatchObject({
      drifted: 'True',
      drift: [
        {
          environment: 'prod',
          expected: 'v1',
          expectedDigest: 'sha256:1',
          found: 'sha256:9',
          foundDigest: 'sha256:9',
          changedBy: 'kubectl-patch',
        },
      ],
    });
    expect(b).toMatchObject({ drifted: 'Unknown', drift: [] });
  });

  it("maps an Environment's Ready and DeliveryPermitted conditions (Unknown until the controller reported)", async () => {
    const cfg = await parseConfig(base);
    const res = cfg.resources.find((r) => r.kind.endsWith('/environments'))!;
    const env = (conditions?: Array<{ type: string; status: string }>) => ({
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'Environment',
      metadata: { name: 'prod', namespace: 'shop' },
      spec: { cluster: { context: 'prod' }, namespace: 'web', registry: { host: 'r' }, delivery: { method: 'patch' } },
      ...(conditions ? { status: { conditions } } : {}),
    });
    const results = await mapObjects(
      compileResource(res)('dev'),
      [
        env([
          { type: 'Ready', status: 'True' },
          { type: 'DeliveryPermitted', status: 'False' },
        ]),
        env(),
      ],
      'test',
    );
    const props = results.map((r) => (r.ok ? r.entities[0].entity.properties : undefined));
    expect(props.map((p) => [p?.ready, p?.deliveryPermitted])).toEqual([
      ['True', 'False'],
      ['Unknown', 'Unknown'],
    ]);
  });

  it('maps a plan to its applications, flow and environments', async () => {
    const cfg = await parseConfig(base);
    const res = cfg.resources.find((r) => r.kind.endsWith('/promotionplans'))!;
    const plan = {
      metadata: { name: 'p1', namespace: 'shop' },
      spec: { flow: 'f', from: 'dev', to: 'prod', candidates: [{ application: 'a' }, { application: 'b' }] },
    };
    const [r] = await mapObjects(compileResource(res)('stable'), [plan], 'k');
    expect(r.ok && r.entities[0].entity.relations).toEqual({
      flow: 'stable:shop:f',
      from: 'stable:shop:dev',
      to: 'stable:shop:prod',
      applications: ['stable:shop:a', 'stable:shop:b'],
    });
  });

  it("maps a flow's cooldowns in the controller's words, none when no stage waits", async () => {
    const cfg = await parseConfig(base);
    const res = cfg.resources.find((r) => r.kind.endsWith('/promotionflows'))!;
    const flow = (status?: object) => ({
      metadata: { name: 'shop', namespace: 'shop' },
      spec: { stages: [{ environment: 'dev' }, { environment: 'stable', approval: 'auto' }] },
      ...(status ? { status } : {}),
    });
    const message = 'cooldown: waiting until 14:32:05 UTC for dev to be quiet for 10m; will take web v1.4.2';
    const waiting = flow({
      cooldowns: [{ environment: 'stable', until: '2026-12-05T14:32:05Z', candidates: 1, takes: [], message }],
    });
    const out = await mapObjects(compileResource(res)('dev'), [waiting, flow(), flow({ cooldowns: [] })], 'k');
    const props = out.map((r) => (r.ok ? r.entities[0].entity.properties : r));
    expect(props[0]).toMatchObject({ cooldowns: `stable: ${message}` });
    expect(props[1]).not.toHaveProperty('cooldowns');
    expect(props[2]).not.toHaveProperty('cooldowns');
    const bp = cfg.blueprints.find((b) => b.identifier === 'kpromoPromotionFlow')!;
    expect(bp.schema.properties.cooldowns).toBeDefined();
  });

  it("maps a plan's gate: approved by policy, approvers, who it waits for, freeze, soak and what restarted it", async () => {
    const cfg = await parseConfig(base);
    const res = cfg.resources.find((r) => r.kind.endsWith('/promotionplans'))!;
    const spec = { flow: 'f', from: 'dev', to: 'prod', candidates: [{ application: 'a' }] };
    const plans = [
      // Approved by one of two required approvers: not approved yet.
      {
        metadata: { name: 'waiting', namespace: 'shop' },
        spec: { ...spec, approvals: [{ user: 'user:default/alice', groups: ['group:default/ops'] }] },
        status: {
          phase: 'Pending',
          gate: { approved: false, required: 2, waitingFor: '1 more approval from groups group:default/ops' },
        },
      },
      {
        metadata: { name: 'frozen', namespace: 'shop' },
        spec: { ...spec, approvals: [{ user: 'user:default/alice' }, { user: 'port:bob@example.com' }] },
        status: {
          phase: 'Pending',
          gate: {
            approved: true,
            required: 1,
            frozen: { window: 'friday', until: '2026-12-07T08:00:00Z' },
            eligibleAt: '2026-12-05T10:00:00Z',
            // Two identities of one person, counted once by the controller.
            approvers: [
              { user: 'user:default/alice', person: 'alice@example.com', counted: true },
              { user: 'port:bob@example.com', person: 'alice@example.com', counted: true },
            ],
          },
          soakResets: [
            {
              at: '2026-12-05T09:00:00Z',
              environment: 'dev',
              alert: 'WebErrors',
              fingerprint: 'f1',
              reason: 'alert WebErrors{app="a"}',
            },
          ],
        },
      },
      {
        metadata: { name: 'overridden', namespace: 'shop' },
        spec: {
          ...spec,
          approvals: [
            { user: 'user:default/carol', overrideFreeze: true, overrideReason: 'payments down, hotfix v1.1.1' },
          ],
        },
        status: {
          phase: 'Promoting',
          gate: {
            approved: true,
            required: 2,
            frozen: { window: 'friday', until: '2026-12-07T08:00:00Z', overriddenBy: 'user:default/carol' },
            orgRules: [
              {
                orgPolicy: 'kpromo-system/platform',
                rule: 'prod-gates',
                field: 'spec.rules[0].approvals.minCount',
                requires: '2 approvals at least',
                flowHas: 'stages[1].approvers.count 1',
                stricter: true,
              },
              {
                orgPolicy: 'kpromo-system/platform',
                rule: 'prod-gates',
                field: 'spec.rules[0].minSoakTime',
                requires: 'soak 1h at least',
                flowHas: 'stages[1].requiredSoakTime 2h',
                stricter: false,
              },
            ],
          },
        },
      },
      // Not reconciled yet: no gate, no approvals.
      { metadata: { name: 'new', namespace: 'shop' }, spec },
    ];
    const out = await mapObjects(compileResource(res)('dev'), plans, 'k');
    const props = out.map((r) => (r.ok ? r.entities[0].entity.properties : r));
    expect(props[0]).toMatchObject({
      approved: false,
      approvers: ['user:default/alice'],
      approverPersons: [],
      waitingFor: '1 more approval from groups group:default/ops',
      requiredApprovals: 2,
    });
    expect(props[0]).not.toHaveProperty('frozenUntil');
    expect(props[1]).toMatchObject({
      approved: true,
      approvers: ['user:default/alice', 'port:bob@example.com'],
      approverPersons: ['alice@example.com'],
      frozenUntil: '2026-12-07T08:00:00Z',
      eligibleAt: '2026-12-05T10:00:00Z',
      soakRestarted: '2026-12-05T09:00:00Z: alert WebErrors{app="a"}',
    });
    expect(props[1]).not.toHaveProperty('waitingFor');
    expect(props[0]).not.toHaveProperty('soakRestarted');
    expect(props[2]).toMatchObject({
      approved: true,
      approvers: ['user:default/carol'],
      override: 'user:default/carol: payments down, hotfix v1.1.1',
      orgRules:
        'OrgPolicy kpromo-system/platform rule prod-gates (spec.rules[0].approvals.minCount): 2 approvals at least; the flow has stages[1].approvers.count 1',
    });
    expect(props[1]).not.toHaveProperty('orgRules');
    // Approved: the count is no longer news.
    expect(props[2]).not.toHaveProperty('requiredApprovals');
    expect(props[2]).not.toHaveProperty('frozenUntil');
    expect(props[1]).not.toHaveProperty('override');
    expect(props[3]).toMatchObject({ approved: false, approvers: [], phase: 'Pending' });
    // The blueprint declares every mapped property.
    const bp = cfg.blueprints.find((b) => b.identifier === 'kpromoPromotionPlan')!;
    for (const k of [
      'approved',
      'approvers',
      'waitingFor',
      'requiredApprovals',
      'orgRules',
      'frozenUntil',
      'override',
      'eligibleAt',
      'soakRestarted',
    ])
      expect(bp.schema.properties[k], k).toBeDefined();
  });

  it("maps a plan's stopped line, its verification evidence and the rollback a failed check caused", async () => {
    const cfg = await parseConfig(base);
    const res = cfg.resources.find((r) => r.kind.endsWith('/promotionplans'))!;
    const spec = { flow: 'f', from: 'dev', to: 'prod', candidates: [{ application: 'a' }] };
    const check = (verdict: string, values: Array<number | undefined>) => ({
      name: 'error-rate',
      kind: 'prometheus',
      condition: '≤ 0.05',
      verdict,
      samples: values.map((value, i) => ({ at: `2026-12-05T10:0${i}:00Z`, ...(value === undefined ? {} : { value }) })),
    });
    const plans = [
      {
        metadata: { name: 'held', namespace: 'shop' },
        spec,
        status: {
          phase: 'Pending',
          gate: {
            approved: true,
            required: 1,
            lineStopped: { lineStop: 'shop/inc-1', reason: 'INC-1', stoppedBy: 'alice' },
          },
        },
      },
      {
        metadata: { name: 'bad', namespace: 'shop' },
        spec,
        status: {
          phase: 'RolledBack',
          gate: {
            approved: true,
            required: 1,
            lineStopped: { lineStop: 'shop/inc-1', reason: 'INC-1', stoppedBy: 'alice', overriddenBy: 'carol' },
          },
          apps: [
            {
              application: 'a',
              phase: 'RolledBack',
              verification: {
                verdict: 'Failed',
                checks: [
                  check('Failed', [0.01, 0.2, undefined]),
                  {
                    name: 'e2e',
                    kind: 'job',
                    condition: 'Job completes',
                    verdict: 'Passed',
                    samples: [{ at: '2026-12-05T10:00:00Z', ok: true }],
                    durationSeconds: 42,
                    output: 'ok',
                  },
                ],
              },
            },
            { application: 'b', phase: 'Failed' },
          ],
          automaticRollbacks: [
            { plan: 'bad-rollback', scope: 'release', application: 'a', check: 'error-rate', message: 'm', at: 't' },
          ],
        },
      },
    ];
    const out = await mapObjects(compileResource(res)('dev'), plans, 'k');
    const props = out.map((r) => (r.ok ? r.entities[0].entity.properties : r));
    expect(props[0]).toMatchObject({ lineStopped: 'alice: INC-1' });
    expect(props[0]).not.toHaveProperty('verification');
    expect(props[0]).not.toHaveProperty('automaticRollbacks');
    // An overridden stop no longer holds the plan.
    expect(props[1]).not.toHaveProperty('lineStopped');
    expect(props[1]).toMatchObject({
      verification: [
        {
          application: 'a',
          verdict: 'Failed',
          checks: [
            { name: 'error-rate', verdict: 'Failed', condition: '≤ 0.05', last: 0.2 },
            // A job check: how long its Job ran (its log stays in the plan).
            { name: 'e2e', verdict: 'Passed', condition: 'Job completes', last: null, durationSeconds: 42 },
          ],
        },
      ],
      automaticRollbacks: 'bad-rollback: a failed check error-rate',
    });
    const bp = cfg.blueprints.find((b) => b.identifier === 'kpromoPromotionPlan')!;
    for (const k of ['lineStopped', 'verification', 'automaticRollbacks'])
      expect(bp.schema.properties[k], k).toBeDefined();
  });

  it("maps each candidate's signature verdict and the promotion attestations signed", async () => {
    const cfg = await parseConfig(base);
    const res = cfg.resources.find((r) => r.kind.endsWith('/promotionplans'))!;
    const d = (c: string) => `sha256:${c.repeat(64)}`;
    const judged = (verdict: string, message: string, digest = d('a')) => ({
      digest,
      verdict,
      mode: 'Enforce',
      checks: [],
      message,
      checkedAt: 't',
    });
    const spec = {
      flow: 'f',
      from: 'dev',
      to: 'prod',
      candidates: [
        { application: 'a', from: { tag: 'v1', digest: d('a') } },
        { application: 'b', from: { tag: 'v1', digest: d('b') } },
      ],
    };
    const plans = [
      {
        metadata: { name: 'waiting', namespace: 'shop' },
        spec,
        status: {
          phase: 'Pending',
          candidateSignatures: [
            { application: 'a', ...judged('Verified', 'signature by k') },
            // Judged for another digest: not this candidate's.
            { application: 'b', ...judged('Verified', 'stale', d('c')) },
          ],
        },
      },
      {
        metadata: { name: 'done', namespace: 'shop' },
        spec,
        status: {
          phase: 'Incomplete',
          candidateSignatures: [{ application: 'a', ...judged('Error', 'could not check') }],
          apps: [
            {
              application: 'a',
              phase: 'Succeeded',
              signature: judged('Verified', 'signature by k2'),
              attestation: { predicateType: 'p', manifestDigest: d('e'), signedBy: 'kp/key.pem' },
            },
            { application: 'b', phase: 'Failed', signature: judged('Unsigned', 'signature: none found', d('b')) },
          ],
        },
      },
      { metadata: { name: 'none', namespace: 'shop' }, spec, status: { phase: 'Pending' } },
    ];
    const out = await mapObjects(compileResource(res)('dev'), plans, 'k');
    const props = out.map((r) => (r.ok ? r.entities[0].entity.properties : r));
    expect(props[0]).toMatchObject({
      signatures: [{ application: 'a', verdict: 'Verified', mode: 'Enforce', message: 'signature by k' }],
    });
    expect(props[0]).not.toHaveProperty('promotionAttestations');
    expect(props[1]).toMatchObject({
      signatures: [
        { application: 'a', verdict: 'Verified', message: 'signature by k2' },
        { application: 'b', verdict: 'Unsigned', message: 'signature: none found' },
      ],
      promotionAttestations: 'a: signed by kp/key.pem',
    });
    expect(props[2]).not.toHaveProperty('signatures');
    const bp = cfg.blueprints.find((b) => b.identifier === 'kpromoPromotionPlan')!;
    for (const k of ['signatures', 'promotionAttestations']) expect(bp.schema.properties[k], k).toBeDefined();
  });

  it("maps the order of the release: each app's step before approval, what each waits for, and the failed app that held it", async () => {
    const cfg = await parseConfig(base);
    const res = cfg.resources.find((r) => r.kind.endsWith('/promotionplans'))!;
    const spec = {
      flow: 'f',
      from: 'dev',
      to: 'prod',
      candidates: ['db', 'api', 'web'].map((application) => ({
        application,
        from: { tag: 'v1', digest: `sha256:${'a'.repeat(64)}` },
      })),
    };
    const plans = [
      {
        metadata: { name: 'ordered', namespace: 'shop' },
        spec,
        status: {
          phase: 'Promoting',
          apps: [
            { application: 'db', phase: 'Failed', reason: 'ImageNotFound' },
            { application: 'api', phase: 'Failed', reason: 'DependencyFailed', heldBy: 'db' },
            { application: 'web', phase: 'Pending', waitsFor: ['api', 'db'] },
          ],
        },
      },
      { metadata: { name: 'plain', namespace: 'shop' }, spec, status: { phase: 'Pending' } },
      {
        metadata: { name: 'awaiting', namespace: 'shop' },
        spec,
        status: {
          phase: 'Pending',
          order: [
            { application: 'web', after: ['api', 'db'] },
            { application: 'api', after: ['db'] },
          ],
        },
      },
    ];
    const out = await mapObjects(compileResource(res)('dev'), plans, 'k');
    const props = out.map((r) => (r.ok ? r.entities[0].entity.properties : r));
    expect(props[0]).toMatchObject({ order: 'api: held by db; web: waits for api, db' });
    expect(props[1]).not.toHaveProperty('order');
    // Before approval: each app's step from the read model; none for a plan without an order.
    expect(props[2]).toMatchObject({ steps: 'db: step 1; api: step 2, after db; web: step 3, after api, db' });
    expect(props[0]).not.toHaveProperty('steps');
    expect(props[1]).not.toHaveProperty('steps');
    const bp = cfg.blueprints.find((b) => b.identifier === 'kpromoPromotionPlan')!;
    expect(bp.schema.properties.order).toBeDefined();
    expect(bp.schema.properties.steps).toBeDefined();
  });

  it("maps a fleet plan's waves and the current wave; a plan without waves has none", async () => {
    const cfg = await parseConfig(base);
    const res = cfg.resources.find((r) => r.kind.endsWith('/promotionplans'))!;
    const fleet = fleetPlan();
    const done = (last: string) => ({
      ...fleet,
      metadata: { name: `release-${last}`, namespace: 'shop' },
      status: {
        ...fleet.status,
        phase: 'Failed',
        waves: [
          { name: 'canary', clusters: ['prod-eu-1'], phase: 'Failed', succeeded: 0, failed: 1 },
          { name: 'rest', clusters: ['prod-us-1'], phase: last },
        ],
      },
    });
    const oneCluster = {
      metadata: { name: 'release-7', namespace: 'shop' },
      spec: fleet.spec,
      status: { phase: 'Complete' },
    };
    const out = await mapObjects(compileResource(res)('dev'), [fleet, done('Halted'), oneCluster], 'k');
    expect(out.map((r) => r.ok)).toEqual([true, true, true]);
    const [plan, failed, single] = out.map((r) => (r.ok ? r.entities[0].entity : undefined));
    expect(plan).toEqual({
      identifier: 'dev:shop:release-42',
      title: 'release-42',
      properties: {
        cluster: 'dev',
        namespace: 'shop',
        phase: 'Promoting',
        approved: true,
        approvers: ['alice'],
        // Not judged by the controller yet (no status.gate.approvers): nobody counted.
        approverPersons: [],
        action: 'promote',
        waves: [
          { name: 'canary', phase: 'Succeeded', clusters: ['prod-eu-1'], succeeded: 1, failed: 0 },
          { name: 'eu', phase: 'Waiting', clusters: ['prod-eu-2', 'prod-eu-3'], succeeded: 0, failed: 0 },
          { name: 'rest', phase: 'Pending', clusters: ['prod-us-1'], succeeded: 0, failed: 0 },
        ],
        currentWave: 'eu',
        [STATE_KEY_PROPERTY]: 'k',
      },
      relations: {
        flow: 'dev:shop:main',
        from: 'dev:shop:stable',
        to: 'dev:shop:prod',
        applications: ['dev:shop:cart'],
      },
    });
    // Every wave final (a failed one halts the rest): no current wave, left out like every null.
    expect(failed?.properties.waves).toEqual([
      { name: 'canary', phase: 'Failed', clusters: ['prod-eu-1'], succeeded: 0, failed: 1 },
      { name: 'rest', phase: 'Halted', clusters: ['prod-us-1'], succeeded: 0, failed: 0 },
    ]);
    expect(failed?.properties).not.toHaveProperty('currentWave');
    // A plan into a one-cluster Environment has no waves.
    expect(single?.properties).toMatchObject({ phase: 'Complete', waves: [] });
    expect(single?.properties).not.toHaveProperty('currentWave');
    // Port's own dialect sends the null as null.
    const [port] = await mapObjects(compileResource(res)('dev'), [oneCluster], {
      stateKey: 'k',
      dialect: 'port-k8s-exporter',
    });
    expect(port.ok && port.entities[0].entity.properties).toMatchObject({ waves: [], currentWave: null });
    const bp = cfg.blueprints.find((b) => b.identifier === 'kpromoPromotionPlan')!;
    expect(bp.schema.properties.waves).toEqual({ title: 'Waves', type: 'array' });
    expect(bp.schema.properties.currentWave).toEqual({ title: 'Current wave', type: 'string' });
  });

  it('maps the pull request a plan promotes through: its http(s) link, state, reviews that count and why not', async () => {
    const cfg = await parseConfig(base);
    const res = cfg.resources.find((r) => r.kind.endsWith('/promotionplans'))!;
    const C = 'c'.repeat(40);
    const throughPr = (name: string, url: string, extra: Record<string, unknown> = {}) => ({
      metadata: { name, namespace: 'shop' },
      spec: { flow: 'main', from: 'stable', to: 'prod', candidates: [] },
      status: {
        phase: 'Promoting',
        gate: { approved: true, required: 1, approvers: [{ user: 'gitea:carol', person: 'carol', counted: true }] },
        pullRequest: {
          forge: 'gitea',
          repository: 'platform/gitops',
          branch: `kpromo/${name}`,
          base: 'main',
          commit: C,
          number: 12,
          url,
          state: 'merged',
          reviews: [
            { login: 'carol', user: 'gitea:carol', state: 'APPROVED', commit: C, eligible: true },
            { login: 'bob', user: 'gitea:bob', state: 'APPROVED', commit: C, eligible: false, why: 'no RBAC' },
          ],
          merged: { by: 'carol', commit: 'f'.repeat(40) },
          message: 'approved',
          ...extra,
        },
      },
    });
    const out = await mapObjects(
      compileResource(res)('dev'),
      [
        throughPr('p1', 'https://gitea.example.com/platform/gitops/pulls/12'),
        throughPr('p2', 'javascript:alert(1)', { number: undefined, state: undefined, merged: undefined, reviews: [] }),
      ],
      'k',
    );
    const [linked, unlinked] = out.map((r) => (r.ok ? r.entities[0].entity.properties : r));
    expect(linked).toMatchObject({
      pullRequest: 'https://gitea.example.com/platform/gitops/pulls/12',
      pullRequestState: `#12 merged, merged by carol as ${'f'.repeat(12)}`,
      pullRequestReviews: 'carol (gitea:carol) APPROVED: counts; bob (gitea:bob) APPROVED: does not count: no RBAC',
      pullRequestMessage: 'approved',
    });
    // A URL that is not http(s) is no link; no reviews, nothing to say.
    expect(unlinked).toMatchObject({ pullRequestState: 'not opened yet' });
    expect(unlinked).not.toHaveProperty('pullRequest');
    expect(unlinked).not.toHaveProperty('pullRequestReviews');
    const bp = cfg.blueprints.find((b) => b.identifier === 'kpromoPromotionPlan')!;
    expect(bp.schema.properties.pullRequest).toEqual({ title: 'Pull request (link)', type: 'string' });
  });

  it("maps an Environment's clusters: a fleet's names, a one-cluster Environment as a fleet of one", async () => {
    const cfg = await parseConfig(base);
    const res = cfg.resources.find((r) => r.kind.endsWith('/environments'))!;
    const shared = { namespace: 'shop', registry: { host: 'r' }, delivery: { method: 'patch' } };
    const fleet = {
      metadata: { name: 'prod', namespace: 'shop' },
      spec: {
        ...shared,
        tier: 'production',
        clusters: [
          { name: 'prod-eu-1', cluster: { context: 'prod-eu-1' }, labels: { region: 'eu' } },
          { name: 'prod-us-1', cluster: { context: 'prod-us-1' }, namespace: 'shop-us' },
        ],
      },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    };
    const single = { metadata: { name: 'stable', namespace: 'shop' }, spec: { ...shared, cluster: { context: 's' } } };
    const out = await mapObjects(compileResource(res)('dev'), [fleet, single], 'k');
    const [f, s] = out.map((r) => (r.ok ? r.entities[0].entity : r));
    expect(f).toEqual({
      identifier: 'dev:shop:prod',
      title: 'prod',
      properties: {
        cluster: 'dev',
        namespace: 'shop',
        tier: 'production',
        targetNamespace: 'shop',
        registry: 'r',
        delivery: 'patch',
        ready: 'True',
        deliveryPermitted: 'Unknown',
        clusters: ['prod-eu-1', 'prod-us-1'],
        clusterCount: 2,
        [STATE_KEY_PROPERTY]: 'k',
      },
      relations: {},
    });
    expect(s).toMatchObject({ properties: { clusters: ['stable'], clusterCount: 1 } });
    const bp = cfg.blueprints.find((b) => b.identifier === 'kpromoEnvironment')!;
    expect(bp.schema.properties.clusters).toEqual({ title: 'Clusters', type: 'array' });
    expect(bp.schema.properties.clusterCount).toEqual({ title: 'Cluster count', type: 'number' });
  });

  it('applies the selector, itemsToParse, and isolates a failing object', async () => {
    const program = compileResource({
      kind: 'x/v1/y',
      selector: { query: '.metadata.name != "skip"' },
      port: {
        itemsToParse: '.status.versions',
        entity: {
          mappings: [
            {
              identifier: '.metadata.name + "-" + .item.environment',
              blueprint: '"ver"',
              properties: { tag: '.item.tag' },
            },
          ],
        },
      },
    })('dev');
    const out = await mapObjects(program, [app('a'), app('skip'), app('bad', { status: { versions: 3 } })], 'k');
    expect(out[0].ok && out[0].entities.map((e) => e.entity.identifier)).toEqual(['a-dev', 'a-prod']);
    expect(out[1]).toEqual({ ok: true, entities: [] });
    // `[]?` swallows the iteration error; a broken identifier is reported instead.
    const broken = await mapObjects(
      compileResource({
        kind: 'x/v1/y',
        port: { entity: { mappings: [{ identifier: '.spec.workloads', blueprint: '"b"' }] } },
      })('dev'),
      [app('x')],
      'k',
    );
    expect(broken[0].ok).toBe(false);
  });

  it('rejects relations that are not identifiers', () => {
    expect(() => finishEntity({ identifier: 'a', blueprint: 'b', properties: {}, relations: { r: 5 } }, 'k')).toThrow(
      /relation r/,
    );
  });

  it('hash changes with content only', () => {
    const a = finishEntity({ identifier: 'a', blueprint: 'b', properties: { x: 1, y: 2 }, relations: {} }, 'k');
    const b = finishEntity({ identifier: 'a', blueprint: 'b', properties: { y: 2, x: 1 }, relations: {} }, 'k');
    const c = finishEntity({ identifier: 'a', blueprint: 'b', properties: { y: 3, x: 1 }, relations: {} }, 'k');
    expect(a.hash).toBe(b.hash);
    expect(a.hash).not.toBe(c.hash);
  });
});

describe('batching and diffing', () => {
  it('splits by 20 entities and by 1 MiB', () => {
    const small = Array.from({ length: 45 }, (_, i) => ({ identifier: `e${i}` }));
    expect(chunkByCountAndSize(small).chunks.map((c) => c.length)).toEqual([20, 20, 5]);
    const big = Array.from({ length: 5 }, (_, i) => ({ identifier: `b${i}`, blob: 'x'.repeat(400_000) }));
    const { chunks, tooLarge } = chunkByCountAndSize([...big, { identifier: 'huge', blob: 'x'.repeat(1_100_000) }]);
    expect(chunks.map((c) => c.length)).toEqual([2, 2, 1]);
    for (const c of chunks) expect(Buffer.byteLength(JSON.stringify({ entities: c }))).toBeLessThanOrEqual(1024 * 1024);
    expect(tooLarge.map((t) => t.identifier)).toEqual(['huge']);
  });

  it('finds stale owned identifiers and deletes missed at relist', () => {
    expect(staleIdentifiers(['a', 'b', 'c'], new Set(['b']))).toEqual(['a', 'c']);
    expect(missingAfterRelist(['ns/a', 'ns/b'], new Set(['ns/b', 'ns/c']))).toEqual(['ns/a']);
  });

  it('honours retry-after and x-ratelimit-reset', () => {
    expect(retryDelayMs(new Headers({ 'retry-after': '2' }), 0)).toBe(2000);
    expect(retryDelayMs(new Headers({ 'x-ratelimit-reset': '3' }), 0)).toBe(3000);
    expect(retryDelayMs(new Headers({ 'x-ratelimit-reset': '2000000005' }), 0, 2_000_000_000_000)).toBe(5000);
    expect(retryDelayMs(new Headers(), 3)).toBeLessThanOrEqual(1600);
  });

  it('derives a blueprint and mapping from a CRD storage version', () => {
    const { blueprint, resource } = crdToResource({
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        names: { kind: 'Widget', plural: 'widgets' },
        versions: [
          { name: 'v1beta1', storage: false },
          {
            name: 'v1',
            storage: true,
            schema: {
              openAPIV3Schema: {
                properties: { spec: { properties: { size: { type: 'integer' }, color: { type: 'string' } } } },
              },
            },
          },
        ],
      },
    });
    expect(resource.kind).toBe('example.com/v1/widgets');
    expect(blueprint.schema.properties.size).toEqual({ title: 'size', type: 'number' });
    expect(resource.port.entity.mappings[0].properties?.color).toBe('.spec["color"]');
  });
});
