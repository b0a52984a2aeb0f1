// "Nothing weakens a gate quietly": every field that decides what is delivered where, or how it is
// judged, is governed (GOVERNED_FIELDS, packages/api/src/governance.ts). Attacked as the example
// developer role would attack it, with kubectl-equivalent writes (impersonation) on the real control
// plane with the admission policies of examples/deploy/admission-policy.yaml installed (applyCrds).
// Neighbour of approvedIsWhatRuns.int.test.ts ("release policy needs the govern verb").
import { waitFor } from '@kpromo/test-harness';
import {
  insiderWorld,
  rejection,
  type TestUser,
  untilAdmissionRefuses,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const world = insiderWorld('gov', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: ['alpha', 'beta'],
});
const { ns: NS, repo: REPO, dev, base, as } = world;
const GROUP = 'promotions.kpromo.dev';
const CHANGED_BY = 'promotions.kpromo.dev/changed-by';

/** The example kpromo-developer, plus edit rights on applications, flows and Environments. */
const dev1 = world.insider('devon', 'developer');
/** Platform admin: holds govern on flows, Environments and Applications. */
const admin = world.insider('pat', 'platform-admin');

let devDigest: Record<string, string> = {};
const policyRefusal = (field: string, kind: string, resource: string, name: string) =>
  `user ${dev1.username} may not change ${field} of ${kind} ${NS}/${name}: that is release policy (RBAC: needs verb govern on ${resource}/${name} in namespace ${NS})`;

/** The PolicyChanged Event of `kind` `name` whose message names exactly `fields`, by `who`. */
async function policyChanged(kind: string, name: string, fields: string, who: TestUser): Promise<string> {
  const want = new RegExp(
    `^release policy of ${kind} ${NS}/${name} changed \\(${fields.replace('.', '\\.')}; generation \\d+\\) by ${who.username}$`,
  );
  const event = await waitFor(`PolicyChanged ${kind} ${name} (${fields})`, async () => {
    const l = await dev.get<{ items: Array<{ reason: string; message: string; involvedObject: { kind: string } }> }>(
      `/api/v1/namespaces/${NS}/events?fieldSelector=involvedObject.name=${name}`,
    );
    return l.items.find((e) => e.involvedObject.kind === kind && e.reason === 'PolicyChanged' && want.test(e.message));
  });
  return event.message;
}

/** The controller has recorded the digest of `field` of an object (so it can tell when it changes). */
const digestRecorded = (path: string, field: string) =>
  waitFor(`${field} of ${path} recorded`, async () =>
    (await dev.get<{ status?: { policyDigests?: Record<string, string> } }>(path)).status?.policyDigests?.[field]
      ? true
      : undefined,
  );

beforeAll(async () => {
  // App teams own their Applications; a team often may edit its flows and Environments too
  // (INSIDER_ROLES): admission must hold without relying on RBAC being narrow.
  await world.setUp();
  ({ devDigest } = world);
  await world.start();
}, 240_000);

afterAll(() => world.stop());

describe('every field that decides what is delivered where, or how it is judged, needs govern', () => {
  it('a developer who may edit Environments points the stage checks at their own Prometheus, or re-points the Environment at a fleet: refused naming the field and the verb; a platform admin may, recorded as a PolicyChanged Event', async () => {
    const envPath = `${base}/environments/stable`;
    const mine = {
      op: 'add',
      path: '/spec/metrics',
      value: { prometheus: { url: 'http://prometheus.attacker:9090' } },
    };
    await untilAdmissionRefuses(as(dev1), envPath, [mine], 'may not change metrics');
    const measured = await rejection(as(dev1).jsonPatch(envPath, [mine]));
    expect(measured.status).toBe(403);
    expect(measured.message).toContain(policyRefusal('metrics', 'Environment', 'environments', 'stable'));
    const fleet = await rejection(
      as(dev1).jsonPatch(envPath, [
        { op: 'remove', path: '/spec/cluster' },
        { op: 'add', path: '/spec/clusters', value: [{ name: 'elsewhere', cluster: { context: 'dev' } }] },
      ]),
    );
    expect(fleet.message).toContain(policyRefusal('cluster, clusters', 'Environment', 'environments', 'stable'));
    // The platform admin sets it; the developer may not take it away again (every release would
    // then have nothing to measure).
    await digestRecorded(envPath, 'metrics');
    await as(admin).jsonPatch(envPath, [
      { op: 'add', path: '/metadata/annotations', value: { [CHANGED_BY]: admin.username } },
      { op: 'add', path: '/spec/metrics', value: { prometheus: { url: 'http://prometheus.monitoring:9090' } } },
    ]);
    await policyChanged('Environment', 'stable', 'metrics', admin);
    const removed = await rejection(as(dev1).jsonPatch(envPath, [{ op: 'remove', path: '/spec/metrics' }]));
    expect(removed.message).toContain(policyRefusal('metrics', 'Environment', 'environments', 'stable'));
  });

  it('a developer who may edit flows rewrites the tag template, raises concurrency or stretches the rollout timeout: refused naming each field and the verb; a platform admin may, recorded as a PolicyChanged Event', async () => {
    const flowPath = `${base}/promotionflows/main`;
    const tagTemplate = { op: 'add', path: '/spec/tagTemplate', value: '{tag}' };
    await untilAdmissionRefuses(as(dev1), flowPath, [tagTemplate], 'may not change tagTemplate');
    for (const [field, op] of [
      ['tagTemplate', tagTemplate],
      ['concurrency', { op: 'add', path: '/spec/concurrency', value: 64 }],
      ['rolloutTimeoutSeconds', { op: 'replace', path: '/spec/rolloutTimeoutSeconds', value: 86400 }],
    ] as const) {
      const r = await rejection(as(dev1).jsonPatch(flowPath, [op]));
      expect(r.status, field).toBe(403);
      expect(r.message, field).toContain(policyRefusal(field, 'PromotionFlow', 'promotionflows', 'main'));
    }
    await digestRecorded(flowPath, 'concurrency');
    await as(admin).jsonPatch(flowPath, [
      { op: 'add', path: '/metadata/annotations', value: { [CHANGED_BY]: admin.username } },
      { op: 'add', path: '/spec/concurrency', value: 2 },
    ]);
    await policyChanged('PromotionFlow', 'main', 'concurrency', admin);
  });
});

describe('an Application is its team’s, but not while a plan releases it', () => {
  it('while a plan releases alpha, its developer retargets its workloads or image repository, drops its checks, relabels it out of a flow selector, reorders its release or deletes it: refused naming the field, the plan and the verb; a platform admin may, recorded as a PolicyChanged Event', async () => {
    const appPath = `${base}/applications/alpha`;
    // A release of alpha into stable, waiting for its approval: not finished.
    await as(dev1).create(`${base}/promotionplans`, {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: 'PromotionPlan',
      metadata: { name: 'release-alpha', namespace: NS },
      spec: {
        flow: 'main',
        from: 'dev',
        to: 'stable',
        candidates: [{ application: 'alpha', from: { tag: 'v2.0.0', digest: devDigest.alpha } }],
      },
    });
    const pending = await waitPlan(dev, NS, 'release-alpha', (p) => !!p.status?.phase);
    expect(pending.status?.phase).toBe('Pending');
    const workloads = { op: 'replace', path: '/spec/workloads', value: [{ kind: 'Deployment', name: 'beta' }] };
    await untilAdmissionRefuses(as(dev1), appPath, [workloads], 'may not change workloads');
    const refusal = (fields: string) =>
      `user ${dev1.username} may not change ${fields} of Application ${NS}/alpha while PromotionPlan ${NS}/release-alpha releases it (Pending): what a release targets and how it is judged stay as planned until it finishes. Wait for the plan or delete it, or ask someone with RBAC verb govern on applications/alpha in namespace ${NS}`;
    for (const [fields, ops] of [
      ['workloads', [workloads]],
      ['image', [{ op: 'replace', path: '/spec/image/repository', value: `${REPO}/beta` }]],
      [
        'verification',
        [
          {
            op: 'add',
            path: '/spec/verification',
            value: { checks: [{ name: 'smoke', http: { url: 'http://smoke.example/health' } }] },
          },
        ],
      ],
      ['metadata.labels', [{ op: 'add', path: '/metadata/labels', value: { tier: 'experimental' } }]],
      // The order of the release: which apps go before it, what a failure holds.
      ['dependsOn', [{ op: 'add', path: '/spec/dependsOn', value: ['beta'] }]],
      [
        'owner, labels',
        [
          { op: 'replace', path: '/spec/owner', value: 'team-b' },
          { op: 'add', path: '/spec/labels', value: { tier: 'experimental' } },
        ],
      ],
    ] as const) {
      const r = await rejection(as(dev1).jsonPatch(appPath, [...ops]));
      expect(r.status, fields).toBe(403);
      expect(r.message, fields).toContain(refusal(fields));
    }
    // Deleting and recreating it would change everything at once.
    const gone = await rejection(as(dev1).delete(appPath));
    expect(gone.message).toContain(`user ${dev1.username} may not delete Application ${NS}/alpha while PromotionPlan`);
    // What the plan does not read stays the team's.
    await as(dev1).jsonPatch(appPath, [{ op: 'add', path: '/spec/description', value: 'the alpha service' }]);
    // A platform admin may, and the controller records it.
    await digestRecorded(appPath, 'metadata.labels');
    await as(admin).jsonPatch(appPath, [
      { op: 'add', path: '/metadata/annotations', value: { [CHANGED_BY]: admin.username } },
      { op: 'add', path: '/metadata/labels', value: { tier: 'critical' } },
    ]);
    expect(await policyChanged('Application', 'alpha', 'metadata.labels', admin)).toContain('(metadata.labels;');
  });

  it('between releases the team changes its Application and onboards a new one without a platform admin, each change of a governed field recorded as a PolicyChanged Event', async () => {
    const betaPath = `${base}/applications/beta`;
    await digestRecorded(betaPath, 'workloads');
    await as(dev1).jsonPatch(betaPath, [
      { op: 'add', path: '/metadata/annotations', value: { [CHANGED_BY]: dev1.username } },
      {
        op: 'replace',
        path: '/spec/workloads',
        value: [
          { kind: 'Deployment', name: 'beta' },
          { kind: 'Deployment', name: 'beta-worker' },
        ],
      },
    ]);
    await policyChanged('Application', 'beta', 'workloads', dev1);
    await as(dev1).create(`${base}/applications`, {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: 'Application',
      metadata: { name: 'gamma', namespace: NS },
      spec: {
        owner: 'team-a',
        image: { repository: `${REPO}/gamma` },
        workloads: [{ kind: 'Deployment', name: 'gamma' }],
      },
    });
    // Once the plan of alpha is gone, alpha is the team's again (the change names its writer: the
    // admin's changed-by annotation may not stay on someone else's policy change).
    await as(dev1).delete(`${base}/promotionplans/release-alpha`);
    await waitFor('alpha released by no plan', () =>
      as(dev1)
        .jsonPatch(`${base}/applications/alpha?dryRun=All`, [
          { op: 'replace', path: '/metadata/annotations', value: { [CHANGED_BY]: dev1.username } },
          { op: 'replace', path: '/spec/owner', value: 'team-b' },
        ])
        .then(() => true),
    );
  });
});
