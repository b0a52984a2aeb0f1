// "Approved is what runs", attacked as insiders with ordinary roles would attack it, on the real
// control plane with the admission policies of examples/deploy/admission-policy.yaml installed
// (applyCrds): direct writes as the users (like `kubectl --as`), the HTTP API and MCP doors. Every
// test states the attack in its title and checks that nothing reached the target environment: no
// tag in stable's registry, stable's workload unchanged.
import type { PromotionPlan } from '@kpromo/api';
import { waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  callApi,
  deploymentImage,
  ensureNs,
  getPlan,
  insiderWorld,
  pushTestImage,
  rejection,
  type TestUser,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { call, httpClient, ok, text } from '@kpromo/test-harness/mcpClient';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

const APPS = ['alpha', 'beta', 'gamma', 'delta'];
const world = insiderWorld('awr', { kubeconfig: inject('kubeconfig'), registries: inject('registries'), apps: APPS });
const {
  ns: NS,
  appsNs: APPS_NS,
  repo: REPO,
  run: RUN,
  dev,
  stable,
  source,
  target,
  base,
  as,
  untouched,
  flowOf,
} = world;
const GROUP = 'promotions.kpromo.dev';
const planPath = (name: string) => `${base}/promotionplans/${name}`;

/** The example kpromo-developer: creates plans, approves into stable, edits flows (not their policy). */
const dev1 = world.insider('devon', 'developer');
/** A second developer. */
const dev2 = world.insider('dana', 'developer');
/** Release managers: approve anywhere in the namespace. */
const rm1 = world.insider('rita', 'release-manager');
const rm2 = world.insider('rick', 'release-manager');
/** Platform admin: holds govern. */
const admin = world.insider('pat', 'platform-admin');

let ctl: Running;
let devDigest: Record<string, string> = {};

const post = (path: string, who: TestUser, body: unknown = {}) =>
  callApi(ctl.port, path, { method: 'POST', body, token: who.token });
const errorOf = async (r: Response) => ((await r.json()) as { error: string }).error;

const planBody = (name: string, flow: string, app: string, from: { tag: string; digest: string }) => ({
  apiVersion: `${GROUP}/v1alpha1`,
  kind: 'PromotionPlan',
  metadata: { name, namespace: NS },
  spec: { flow, from: 'dev', to: 'stable', candidates: [{ application: app, from }] },
});

beforeAll(async () => {
  // The insiders' roles: kpromo-developer (examples/deploy/rbac-examples.yaml) plus the edit rights a
  // team often has on its flows and environments, and even on plan status (INSIDER_ROLES).
  await world.setUp();
  ({ devDigest } = world);
  // One flow per app into stable (the seeded catch-all would govern them all as well).
  await dev.delete(`${base}/promotionflows/main`);
  await applyCr(
    dev,
    flowOf('strict', ['alpha', 'beta'], {
      approvers: { groups: ['release-managers'], count: 2, forbidSelfApproval: true },
    }),
  );
  await applyCr(dev, flowOf('lax', ['gamma', 'delta'], {}));
  ctl = await world.start({ mcp: { enabled: true, host: '127.0.0.1', port: 0, write: true } }, [], 'lax');
}, 240_000);

afterAll(() => world.stop());

describe('a plan cannot be changed under an approval (or without one)', () => {
  it('a developer retargets a pending plan to another environment or swaps its digest: the CRD refuses both', async () => {
    const p = await as(dev1).create<PromotionPlan>(`${base}/promotionplans`, {
      ...planBody('retarget', 'lax', 'gamma', { tag: 'v2.0.0', digest: devDigest.gamma }),
    });
    const fixed =
      'the content of a plan (flow, from, to, action, rollbackOf, applications, candidates, requestedBy, requestedByAgent) is fixed at creation';
    const to = await rejection(
      as(dev1).jsonPatch(planPath('retarget'), [{ op: 'replace', path: '/spec/to', value: 'prod' }]),
    );
    expect(to.message).toContain(fixed);
    const swap = await rejection(
      as(dev1).jsonPatch(planPath('retarget'), [
        { op: 'replace', path: '/spec/candidates/0/from/digest', value: devDigest.delta },
      ]),
    );
    expect(swap.message).toContain(fixed);
    // Nor may they make it an automatic plan that skips approval.
    const auto = await rejection(
      as(dev1).jsonPatch(planPath('retarget'), [
        { op: 'add', path: '/metadata/labels', value: { 'promotions.kpromo.dev/auto': 'true' } },
      ]),
    );
    expect(auto.message).toContain('only the controller labels plans promotions.kpromo.dev/auto');
    expect((await getPlan(dev, NS, 'retarget')).spec).toEqual(p.spec);
    await as(dev1).delete(planPath('retarget'));
  });

  it('the requester recreates a plan under the same name with another digest between review and approval: the approval of the reviewed uid is refused (API 409, admission for kubectl) and nothing runs', async () => {
    const reviewed = await as(dev1).create<PromotionPlan>(`${base}/promotionplans`, {
      ...planBody('swap', 'lax', 'delta', { tag: 'v2.0.0', digest: devDigest.delta }),
    });
    // An image that never ran in dev, pushed under a tag the flow accepts.
    const evil = await pushTestImage({ host: source, repository: `${REPO}/delta`, tag: 'v2.0.1', seed: `evil-${RUN}` });
    await as(dev1).delete(planPath('swap'));
    const replaced = await as(dev1).create<PromotionPlan>(`${base}/promotionplans`, {
      ...planBody('swap', 'lax', 'delta', { tag: 'v2.0.1', digest: evil.digest }),
    });
    expect(replaced.metadata.uid).not.toBe(reviewed.metadata.uid);
    // The release manager clicks Approve on what they opened (the portal sends its uid).
    const r = await post(`/api/v1/plans/${NS}/swap/approve`, rm1, { uid: reviewed.metadata.uid });
    expect(r.status).toBe(409);
    expect(await errorOf(r)).toContain(
      `PromotionPlan ${NS}/swap changed since you opened it: you reviewed uid ${reviewed.metadata.uid}`,
    );
    // With kubectl: the approval names the reviewed plan; admission refuses it on the new one.
    const k = await rejection(
      as(rm1).jsonPatch(planPath('swap'), [
        { op: 'add', path: '/spec/approvals', value: [{ user: rm1.username, planUID: reviewed.metadata.uid }] },
      ]),
    );
    expect(k.message).toContain(`set planUID to ${replaced.metadata.uid}`);
    // And an approval that names no plan at all.
    const bare = await rejection(
      as(rm1).jsonPatch(planPath('swap'), [{ op: 'add', path: '/spec/approvals', value: [{ user: rm1.username }] }]),
    );
    expect(bare.message).toContain('an approval must name the plan it approves');
    expect((await getPlan(dev, NS, 'swap')).spec.approvals).toBeUndefined();
    await untouched('delta');
  });
});

describe('a plan is governed by the flow of its applications', () => {
  it('a plan names the lax flow for an app the strict flow guards: refused before anything is copied (NotGovernedByFlow)', async () => {
    await as(dev1).create(`${base}/promotionplans`, {
      ...planBody('borrow', 'lax', 'alpha', { tag: 'v2.0.0', digest: devDigest.alpha }),
    });
    const uid = (await getPlan(dev, NS, 'borrow')).metadata.uid;
    await as(dev1).jsonPatch(planPath('borrow'), [
      { op: 'add', path: '/spec/approvals', value: [{ user: dev1.username, planUID: uid }] },
    ]);
    const p = await waitPlan(dev, NS, 'borrow', (x) => x.status?.phase === 'Failed');
    const valid = p.status?.conditions?.find((c) => c.type === 'Valid');
    expect(valid).toMatchObject({ status: 'False', reason: 'NotGovernedByFlow' });
    expect(valid?.message).toContain('alpha is not selected by PromotionFlow lax (spec.selector)');
    await untouched('alpha');
  });

  it('a second, laxer flow is created over an app a strict flow governs: the plan is refused, naming both flows (GovernedBySeveralFlows)', async () => {
    await applyCr(dev, flowOf('shadow', ['beta'], {}));
    await waitFor('shadow cached', async () => ctl.controller.cache.getFlow(NS, 'shadow'));
    await as(dev1).create(`${base}/promotionplans`, {
      ...planBody('shadowed', 'shadow', 'beta', { tag: 'v2.0.0', digest: devDigest.beta }),
    });
    const uid = (await getPlan(dev, NS, 'shadowed')).metadata.uid;
    await as(dev1).jsonPatch(planPath('shadowed'), [
      { op: 'add', path: '/spec/approvals', value: [{ user: dev1.username, planUID: uid }] },
    ]);
    const p = await waitPlan(dev, NS, 'shadowed', (x) => x.status?.phase === 'Failed');
    const valid = p.status?.conditions?.find((c) => c.type === 'Valid');
    expect(valid).toMatchObject({ status: 'False', reason: 'GovernedBySeveralFlows' });
    expect(valid?.message).toContain(
      'beta is governed into stable by PromotionFlow shadow and also by PromotionFlow strict',
    );
    await dev.delete(`${base}/promotionflows/shadow`);
    await untouched('beta');
  });

  it('an image that never ran in dev (pushed under an accepted tag) is named as a candidate: refused when the plan starts (CandidateNotInSource)', async () => {
    const unreviewed = await pushTestImage({
      host: source,
      repository: `${REPO}/gamma`,
      tag: 'v2.0.9',
      seed: `side-${RUN}`,
    });
    await as(dev1).create(`${base}/promotionplans`, {
      ...planBody('sideload', 'lax', 'gamma', { tag: 'v2.0.9', digest: unreviewed.digest }),
    });
    const uid = (await getPlan(dev, NS, 'sideload')).metadata.uid;
    await as(dev1).jsonPatch(planPath('sideload'), [
      { op: 'add', path: '/spec/approvals', value: [{ user: dev1.username, planUID: uid }] },
    ]);
    const p = await waitPlan(dev, NS, 'sideload', (x) => x.status?.phase === 'Failed');
    const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'CandidateNotInSource' });
    expect(ready?.message).toContain(
      `gamma: dev runs v2.0.0@${devDigest.gamma}, not the candidate v2.0.9@${unreviewed.digest}`,
    );
    await untouched('gamma');
  });

  it('a tag outside the flow tag pattern is named as a candidate: refused (TagPatternMismatch)', async () => {
    await as(dev1).create(`${base}/promotionplans`, {
      ...planBody('debugtag', 'lax', 'gamma', { tag: 'debug-build', digest: devDigest.gamma }),
    });
    const uid = (await getPlan(dev, NS, 'debugtag')).metadata.uid;
    await as(dev1).jsonPatch(planPath('debugtag'), [
      { op: 'add', path: '/spec/approvals', value: [{ user: dev1.username, planUID: uid }] },
    ]);
    const p = await waitPlan(dev, NS, 'debugtag', (x) => x.status?.phase === 'Failed');
    expect(p.status?.conditions?.find((c) => c.type === 'Valid')).toMatchObject({ reason: 'TagPatternMismatch' });
    await untouched('gamma');
  });
});

describe('status is the controller journal, never a source of authority', () => {
  it('a developer with RBAC on promotionplans/status writes a started status to skip the gate: admission refuses it', async () => {
    await as(dev2).create(`${base}/promotionplans`, {
      ...planBody('skipgate', 'strict', 'beta', { tag: 'v2.0.0', digest: devDigest.beta }),
    });
    const forged = await rejection(
      as(dev2).mergePatch(`${planPath('skipgate')}/status`, {
        status: {
          phase: 'Promoting',
          apps: [{ application: 'beta', phase: 'Pending' }],
          gate: { approved: true, required: 0 },
        },
      }),
    );
    expect(forged.status).toBe(403);
    expect(forged.message).toContain('only the kpromo controller writes the status of promotionplans');
    // Nor may they fake how long a version has run Healthy (soak time reads it).
    const soak = await rejection(as(dev2).mergePatch(`${base}/applications/beta/status`, { status: { versions: [] } }));
    expect(soak.message).toContain('only the kpromo controller writes the status of applications');
    await untouched('beta');
  });
});

describe('four eyes stay four', () => {
  it("a release manager cannot rewrite someone else's pending plan and approve it alone; two others are needed", async () => {
    const created = await post('/api/v1/plans', dev2, {
      namespace: NS,
      flow: 'strict',
      from: 'dev',
      to: 'stable',
      name: 'four-eyes',
      applications: ['alpha'],
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const plan = ((await created.json()) as { plan: PromotionPlan }).plan;
    const rewrite = await rejection(
      as(rm1).jsonPatch(planPath('four-eyes'), [{ op: 'replace', path: '/spec/requestedBy', value: rm1.username }]),
    );
    expect(rewrite.message).toContain('is fixed at creation');
    expect((await post(`/api/v1/plans/${NS}/four-eyes/approve`, rm1, { uid: plan.metadata.uid })).status).toBe(200);
    const waiting = await waitPlan(dev, NS, 'four-eyes', (p) => (p.status?.gate?.approvers ?? []).length === 1);
    expect(waiting.status).toMatchObject({ phase: 'Pending', gate: { approved: false, required: 2 } });
    await untouched('alpha');
    expect((await post(`/api/v1/plans/${NS}/four-eyes/approve`, rm2, { uid: plan.metadata.uid })).status).toBe(200);
    const done = await waitPlan(dev, NS, 'four-eyes', (p) =>
      ['Complete', 'Incomplete', 'Failed'].includes(p.status?.phase ?? ''),
    );
    expect(done.status?.phase).toBe('Complete');
    expect(done.status?.contentDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await deploymentImage(stable, APPS_NS, 'alpha')).toContain(devDigest.alpha);
  });
});

describe('release policy needs the govern verb', () => {
  it('a developer who may edit flows makes the stage automatic, drops its approvers, widens its selector or deletes the flow: refused without govern; a platform admin may, recorded as a PolicyChanged Event naming them', async () => {
    const flowPath = `${base}/promotionflows/strict`;
    const current = await dev.get<{ spec: { stages: Array<Record<string, unknown>> } }>(flowPath);
    const weaken = async (stable: Record<string, unknown>) =>
      rejection(
        as(dev1).jsonPatch(flowPath, [
          { op: 'replace', path: '/spec/stages/1', value: { ...current.spec.stages[1], ...stable } },
        ]),
      );
    const auto = await weaken({ approval: 'auto' });
    expect(auto.status).toBe(403);
    expect(auto.message).toContain(
      `user ${dev1.username} may not change stages of PromotionFlow ${NS}/strict: that is release policy (RBAC: needs verb govern on promotionflows/strict in namespace ${NS})`,
    );
    const fewer = await weaken({ approvers: { count: 1 } });
    expect(fewer.message).toContain('needs verb govern');
    const broader = await rejection(
      as(dev1).jsonPatch(flowPath, [{ op: 'replace', path: '/spec/selector', value: { applications: ['*'] } }]),
    );
    expect(broader.message).toContain('may not change selector of PromotionFlow');
    // Deleting the strict flow would leave the application to whichever flow remains.
    const gone = await rejection(as(dev1).delete(flowPath));
    expect(gone.message).toContain(`user ${dev1.username} may not delete PromotionFlow ${NS}/strict`);
    // What decides nothing about a release stays the team's (every spec field of a flow does:
    // docs/security.md, "What is governed").
    await as(dev1).jsonPatch(flowPath, [{ op: 'add', path: '/metadata/labels', value: { team: 'shop' } }]);
    // A platform admin with govern may, and may not pretend to be someone else doing it.
    const lie = await rejection(
      as(admin).jsonPatch(flowPath, [
        { op: 'add', path: '/metadata/annotations', value: { 'promotions.kpromo.dev/changed-by': dev1.username } },
        { op: 'replace', path: '/spec/tagPattern', value: '^v\\d+\\.\\d+\\.\\d+$' },
      ]),
    );
    expect(lie.message).toContain(`annotation promotions.kpromo.dev/changed-by names ${dev1.username}`);
    // The controller has recorded the policy it saw, so it can tell what changes.
    await waitFor('strict policy recorded', async () =>
      (await dev.get<{ status?: { policyDigests?: object } }>(flowPath)).status?.policyDigests ? true : undefined,
    );
    await as(admin).jsonPatch(flowPath, [
      { op: 'add', path: '/metadata/annotations', value: { 'promotions.kpromo.dev/changed-by': admin.username } },
      { op: 'replace', path: '/spec/tagPattern', value: '^v\\d+\\.\\d+\\.\\d+$' },
    ]);
    // Recorded as a Kubernetes Event on the flow, naming the field and the writer.
    const event = await waitFor('PolicyChanged event', async () => {
      const l = await dev.get<{ items: Array<{ reason: string; message: string; involvedObject: { kind: string } }> }>(
        `/api/v1/namespaces/${NS}/events?fieldSelector=involvedObject.name=strict`,
      );
      return l.items.find((e) => e.involvedObject.kind === 'PromotionFlow' && e.reason === 'PolicyChanged');
    });
    expect(event.message).toMatch(
      new RegExp(
        `^release policy of PromotionFlow ${NS}/strict changed \\(tagPattern; generation \\d+\\) by ${admin.username}$`,
      ),
    );
    // A later update that changes no policy may keep the annotation, but not name someone else.
    const relabel = await rejection(
      as(dev1).jsonPatch(flowPath, [
        { op: 'replace', path: '/metadata/annotations', value: { 'promotions.kpromo.dev/changed-by': dev2.username } },
      ]),
    );
    expect(relabel.message).toContain(`annotation promotions.kpromo.dev/changed-by names ${dev2.username}`);
  });

  it('a developer points an Environment at another namespace or registry, or creates a new Environment: refused without govern', async () => {
    const envPath = `${base}/environments/stable`;
    const other = await rejection(
      as(dev1).jsonPatch(envPath, [{ op: 'replace', path: '/spec/namespace', value: 'kube-system' }]),
    );
    expect(other.message).toContain(`user ${dev1.username} may not change namespace of Environment ${NS}/stable`);
    const registry = await rejection(
      as(dev1).jsonPatch(envPath, [{ op: 'replace', path: '/spec/registry/host', value: 'attacker.example:5000' }]),
    );
    expect(registry.message).toContain('may not change registry of Environment');
    const created = await rejection(
      as(dev1).create(`${base}/environments`, {
        apiVersion: `${GROUP}/v1alpha1`,
        kind: 'Environment',
        metadata: { name: 'sneaky', namespace: NS },
        spec: {
          cluster: { context: 'stable' },
          namespace: APPS_NS,
          registry: { host: target },
          delivery: { method: 'patch' },
        },
      }),
    );
    expect(created.status).toBe(403);
    expect(created.message).toContain(`user ${dev1.username} may not create Environment ${NS}/sneaky`);
    expect(await dev.getOrUndefined(`${base}/environments/sneaky`)).toBeUndefined();
  });
});

describe('governance does not stand in the way of cleanup', () => {
  it("deleting a whole namespace removes its flows and Environments (the namespace controller's deletes are not refused); a developer's delete of every flow at once is", async () => {
    const doomed = `awr-doomed-${RUN}`;
    await ensureNs(dev, doomed);
    await applyCr(dev, { ...flowOf('temp', ['*'], {}), metadata: { name: 'temp', namespace: doomed } });
    await applyCr(dev, {
      kind: 'Environment',
      metadata: { name: 'temp', namespace: doomed },
      spec: {
        cluster: { context: 'dev' },
        namespace: doomed,
        registry: { host: source },
        delivery: { method: 'patch' },
      },
    });
    // A collection delete (kubectl delete promotionflows --all) names no object: still governed.
    const all = await rejection(as(dev1).delete(`${base}/promotionflows`));
    expect(all.message).toContain(`user ${dev1.username} may not delete PromotionFlow ${NS}/`);
    await dev.delete(`/api/v1/namespaces/${doomed}`);
    await waitFor(
      `namespace ${doomed} deleted`,
      async () => ((await dev.getOrUndefined(`/api/v1/namespaces/${doomed}`)) === undefined ? true : undefined),
      90_000,
    );
  });
});

describe('the MCP and API doors bind approvals to what they showed', () => {
  it('an API approval records the uid of the plan it names, and the plan runs', async () => {
    const created = await post('/api/v1/plans', dev1, {
      namespace: NS,
      flow: 'lax',
      from: 'dev',
      to: 'stable',
      name: 'bound',
      applications: ['delta'],
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const plan = ((await created.json()) as { plan: PromotionPlan }).plan;
    const r = await post(`/api/v1/plans/${NS}/bound/approve`, dev1, { uid: plan.metadata.uid });
    expect(r.status, await r.clone().text()).toBe(200);
    const approved = (await r.json()) as PromotionPlan;
    expect(approved.spec.approvals).toEqual([
      { user: dev1.username, groups: ['shop-developers'], planUID: plan.metadata.uid },
    ]);
    const done = await waitPlan(dev, NS, 'bound', (p) =>
      ['Complete', 'Incomplete', 'Failed'].includes(p.status?.phase ?? ''),
    );
    expect(done.status?.phase).toBe('Complete');
  });

  it('an agent approves through MCP promote with the uid of a plan that was recreated since it listed it: refused, the new plan stays unapproved', async () => {
    await as(dev1).create(`${base}/promotionplans`, {
      ...planBody('agent', 'lax', 'gamma', { tag: 'v2.0.0', digest: devDigest.gamma }),
    });
    const listed = await getPlan(dev, NS, 'agent');
    await as(dev1).delete(planPath('agent'));
    await as(dev1).create(`${base}/promotionplans`, {
      ...planBody('agent', 'lax', 'gamma', { tag: 'v2.0.0', digest: devDigest.gamma }),
    });
    const client = await httpClient(ctl.mcp!.url, dev2.token);
    try {
      const stale = await call(client, 'promote', { namespace: NS, plan: 'agent', uid: listed.metadata.uid });
      expect(stale.isError).toBe(true);
      expect(text(stale)).toContain(`PromotionPlan ${NS}/agent changed since you opened it`);
      expect((await getPlan(dev, NS, 'agent')).spec.approvals).toBeUndefined();
      const current = await getPlan(dev, NS, 'agent');
      const approved = ok<{ plan: { approvals: Array<{ user: string }> } }>(
        await call(client, 'promote', { namespace: NS, plan: 'agent', uid: current.metadata.uid }),
      );
      expect(approved.plan.approvals).toEqual([{ user: dev2.username }]);
      expect((await getPlan(dev, NS, 'agent')).spec.approvals?.[0]?.planUID).toBe(current.metadata.uid);
    } finally {
      await client.close();
    }
  });
});
