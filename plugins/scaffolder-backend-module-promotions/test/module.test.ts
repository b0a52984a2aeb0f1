import type { IncomingMessage } from 'node:http';
import { coreServices, createBackendPlugin } from '@backstage/backend-plugin-api';
import { mockCredentials, type TestBackend } from '@backstage/backend-test-utils';
import { catalogServiceMock } from '@backstage/plugin-catalog-node/testUtils';
import scaffolderBackend from '@backstage/plugin-scaffolder-backend';
import { startBackstageTestBackend } from '@kpromo/test-harness/backstage';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { scaffolderModulePromotions } from '../src/index.js';

// Real scaffolder tasks (the scaffolder backend, this module, templates from a catalog mock) against
// a stand-in `promotions` plugin that records who each call is authenticated as. The integration
// suite (plugins/promotions-backend/test/promotions.int.test.ts) runs the same actions through the
// real promotions backend and controller.

// biome-ignore lint/suspicious/noExplicitAny: untyped JSON from HTTP answers
type Json = Record<string, any>;

const ALICE = 'user:default/alice';
const BOB = 'user:default/bob';

/** What the stand-in promotions backend received. */
const calls: Array<{ method: string; path: string; principal: Json; authorization?: string; body?: Json }> = [];
let backend: TestBackend;
let base = '';

const plan = (namespace: string, name: string, apps: string[]) => ({
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'PromotionPlan',
  metadata: { namespace, name, uid: `uid-${name}` },
  spec: { candidates: apps.map((application) => ({ application, from: { tag: 'v2.0.0' } })) },
});

async function readJson(req: IncomingMessage): Promise<Json | undefined> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as Json) : undefined;
}

/** Stands in for @kpromo/plugin-promotions-backend's routes; bob may not approve. */
const promotionsStandIn = createBackendPlugin({
  pluginId: 'promotions',
  register(env) {
    env.registerInit({
      deps: { httpRouter: coreServices.httpRouter, httpAuth: coreServices.httpAuth },
      async init({ httpRouter, httpAuth }) {
        httpRouter.use(async (req, res) => {
          const credentials = await httpAuth.credentials(req, { allow: ['user', 'service'] });
          const url = new URL(req.url, 'http://x');
          const body = await readJson(req);
          const principal = credentials.principal as Json;
          calls.push({
            method: req.method,
            path: `${url.pathname}${url.search}`,
            principal,
            authorization: req.headers.authorization,
            body,
          });
          const send = (status: number, json: unknown) => {
            res.writeHead(status, { 'content-type': 'application/json' });
            res.end(JSON.stringify(json));
          };
          const m = /^\/plans\/([^/]+)\/([^/]+)(?:\/(approve|rollback|continue))?$/.exec(url.pathname);
          if (req.method === 'POST' && url.pathname === '/plans')
            return send(201, {
              plan: plan(body?.namespace ?? 'kpromo', body?.name ?? 'generated', body?.applications ?? []),
            });
          if (m && req.method === 'POST' && m[3] === 'approve') {
            if (principal.userEntityRef === BOB)
              return send(403, {
                error: { name: 'NotAllowedError', message: `forbidden: ${BOB} may not approve plans into stable` },
              });
            return send(200, {
              plan: plan(m[1], m[2], ['cart']),
              progress: {
                phase: 'Pending',
                approved: false,
                approvers: [{ user: principal.userEntityRef }],
                waitingFor: 'one more approval',
                done: false,
              },
            });
          }
          if (m && req.method === 'POST' && m[3] === 'continue')
            return send(200, {
              plan: {
                ...plan(m[1], m[2], ['cart']),
                spec: { candidates: [], continuations: [{ wave: body?.wave ?? 'eu', user: principal.userEntityRef }] },
              },
              progress: { phase: 'Promoting', currentWave: body?.wave ?? 'eu', done: false },
            });
          if (m && req.method === 'POST' && m[3] === 'rollback')
            return send(201, { plan: plan(m[1], body?.name ?? `${m[2]}-rollback`, ['cart']), progress: {} });
          if (m && req.method === 'GET' && !m[3])
            return send(200, {
              plan: plan(m[1], m[2], ['cart']),
              progress: { phase: 'Complete', done: true, approved: true, approvers: [{ user: ALICE }] },
            });
          if (req.method === 'GET' && url.pathname === '/applications')
            return send(200, { items: [{ name: 'cart', namespace: 'kpromo', versions: [{ environment: 'dev' }] }] });
          return send(404, { error: { name: 'NotFoundError', message: `no route ${req.method} ${url.pathname}` } });
        });
      },
    });
  },
});

/** A scaffolder template expression, `${{ e }}`. */
const tpl = (e: string) => `$\{{ ${e} }}`;

const template = {
  apiVersion: 'scaffolder.backstage.io/v1beta3',
  kind: 'Template',
  metadata: { name: 'kpromo-all', namespace: 'default' },
  spec: {
    owner: ALICE,
    type: 'service',
    parameters: [{ properties: { app: { type: 'string' }, confirm: { type: 'boolean' } } }],
    steps: [
      {
        id: 'create',
        action: 'kpromo:plan:create',
        input: { namespace: 'team-a', from: 'dev', to: 'stable', applications: [tpl('parameters.app')], name: 'p1' },
      },
      {
        id: 'promote',
        action: 'kpromo:plan:promote',
        input: {
          namespace: tpl('steps.create.output.namespace'),
          plan: tpl('steps.create.output.plan'),
          // The initiator's confirmation, and the plan they confirmed (here: the one just created).
          confirm: tpl('parameters.confirm'),
          uid: tpl('steps.create.output.uid'),
        },
      },
      // No namespace: promotions.controller.defaultNamespace.
      { id: 'status', action: 'kpromo:release:status', input: { plan: tpl('steps.create.output.plan') } },
      { id: 'app', action: 'kpromo:release:status', input: { application: tpl('parameters.app') } },
      {
        id: 'rollback',
        action: 'kpromo:plan:rollback',
        input: { namespace: 'team-a', plan: tpl('steps.create.output.plan'), approve: false },
      },
    ],
    output: {
      plan: tpl('steps.create.output.plan'),
      applications: tpl('steps.create.output.applications'),
      approvers: tpl('steps.promote.output.approvers'),
      waitingFor: tpl('steps.promote.output.waitingFor'),
      phase: tpl('steps.status.output.phase'),
      app: tpl('steps.app.output.status'),
      rollback: tpl('steps.rollback.output.plan'),
    },
  },
};

/** Rolls back (approving it by default) the plan the user picked, confirming it with the uid shown. */
const rollbackTemplate = {
  apiVersion: 'scaffolder.backstage.io/v1beta3',
  kind: 'Template',
  metadata: { name: 'kpromo-rollback', namespace: 'default' },
  spec: {
    owner: ALICE,
    type: 'service',
    parameters: [{ properties: { plan: { type: 'string' }, uid: { type: 'string' }, confirm: { type: 'boolean' } } }],
    steps: [
      {
        id: 'rollback',
        action: 'kpromo:plan:rollback',
        input: {
          namespace: 'team-a',
          plan: tpl('parameters.plan'),
          uid: tpl('parameters.uid'),
          confirm: tpl('parameters.confirm'),
        },
      },
    ],
    output: { rollback: tpl('steps.rollback.output.plan') },
  },
};

/** Lets the waiting wave of the plan the user picked start, confirming it with the uid shown. */
const continueTemplate = {
  apiVersion: 'scaffolder.backstage.io/v1beta3',
  kind: 'Template',
  metadata: { name: 'kpromo-continue', namespace: 'default' },
  spec: {
    owner: ALICE,
    type: 'service',
    parameters: [{ properties: { plan: { type: 'string' }, uid: { type: 'string' }, confirm: { type: 'boolean' } } }],
    steps: [
      {
        id: 'continue',
        action: 'kpromo:plan:continue',
        input: {
          namespace: 'team-a',
          plan: tpl('parameters.plan'),
          uid: tpl('parameters.uid'),
          confirm: tpl('parameters.confirm'),
        },
      },
    ],
    output: { wave: tpl('steps.continue.output.wave'), currentWave: tpl('steps.continue.output.currentWave') },
  },
};

/** Creates an approved plan in one step. */
const createApprovedTemplate = {
  apiVersion: 'scaffolder.backstage.io/v1beta3',
  kind: 'Template',
  metadata: { name: 'kpromo-create-approved', namespace: 'default' },
  spec: {
    owner: ALICE,
    type: 'service',
    parameters: [{ properties: { confirm: { type: 'boolean' } } }],
    steps: [
      {
        id: 'create',
        action: 'kpromo:plan:create',
        input: {
          namespace: 'team-a',
          from: 'dev',
          to: 'stable',
          applications: ['cart'],
          approve: true,
          // The digest the template showed (here fixed; a real template takes it from its diff step).
          expect: { cart: `sha256:${'c'.repeat(64)}` },
          confirm: tpl('parameters.confirm'),
        },
      },
    ],
    output: { plan: tpl('steps.create.output.plan') },
  },
};

/** Adoption writing its files outside the workspace: refused before the promotions backend is called. */
const adoptOutsideTemplate = {
  apiVersion: 'scaffolder.backstage.io/v1beta3',
  kind: 'Template',
  metadata: { name: 'kpromo-adopt-outside', namespace: 'default' },
  spec: {
    owner: ALICE,
    type: 'service',
    parameters: [{ properties: { directory: { type: 'string' } } }],
    steps: [
      {
        id: 'propose',
        action: 'kpromo:adopt:propose',
        input: { namespace: 'team-a', directory: tpl('parameters.directory') },
      },
    ],
  },
};

async function runTask(
  authorization: string,
  values: Json = { app: 'cart', confirm: true },
  templateName = 'kpromo-all',
) {
  const res = await fetch(`${base}/api/scaffolder/v2/tasks`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ templateRef: `template:default/${templateName}`, values }),
  });
  const created = (await res.json()) as Json;
  expect(res.status, JSON.stringify(created)).toBe(201);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const t = (await (
      await fetch(`${base}/api/scaffolder/v2/tasks/${created.id}`, { headers: { authorization } })
    ).json()) as Json;
    if (['completed', 'failed', 'cancelled'].includes(t.status)) break;
    if (Date.now() > deadline) throw new Error(`task ${created.id} still ${t.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const events = (await (
    await fetch(`${base}/api/scaffolder/v2/tasks/${created.id}/events`, { headers: { authorization } })
  ).json()) as Array<{ type: string; body: Json }>;
  const completion = events.find((e) => e.type === 'completion')?.body ?? {};
  return {
    status: completion.message as string,
    output: completion.output as Json | undefined,
    error: completion.error as { name: string; message: string } | undefined,
  };
}

beforeAll(async () => {
  ({ backend, base } = await startBackstageTestBackend({
    features: [
      scaffolderBackend,
      scaffolderModulePromotions,
      promotionsStandIn,
      catalogServiceMock.factory({
        entities: [
          template,
          rollbackTemplate,
          continueTemplate,
          createApprovedTemplate,
          adoptOutsideTemplate,
          // The same rollback in a namespace that is not one (a dot: an object name, not a DNS label).
          {
            ...rollbackTemplate,
            metadata: { name: 'kpromo-rollback-evil', namespace: 'default' },
            spec: {
              ...rollbackTemplate.spec,
              steps: [
                {
                  ...rollbackTemplate.spec.steps[0],
                  input: { ...rollbackTemplate.spec.steps[0].input, namespace: 'evil.attacker.test' },
                },
              ],
            },
          },
        ],
      }),
    ],
    controller: { defaultNamespace: 'kpromo' },
  }));
});

afterAll(async () => {
  await backend?.stop();
});

beforeEach(() => {
  calls.length = 0;
});

describe('scaffolder module kpromo:* actions in real scaffolder tasks', () => {
  it('kpromo:adopt:propose refuses a directory outside the workspace before calling anything', async () => {
    for (const directory of ['../outside', '/etc/kpromo']) {
      const r = await runTask(mockCredentials.user.header(ALICE), { directory }, 'kpromo-adopt-outside');
      expect(r.status).toBe('Run completed with status: failed');
      expect(r.error?.message).toBe('Relative path is not allowed to refer to a directory outside its parent');
    }
    expect(calls).toEqual([]);
  });

  it('registers the six actions with the scaffolder', async () => {
    const res = await fetch(`${base}/api/scaffolder/v2/actions`, {
      headers: { authorization: mockCredentials.user.header(ALICE) },
    });
    const ids = ((await res.json()) as Array<{ id: string }>).map((a) => a.id).filter((id) => id.startsWith('kpromo:'));
    expect(ids.sort()).toEqual([
      'kpromo:adopt:propose',
      'kpromo:plan:continue',
      'kpromo:plan:create',
      'kpromo:plan:promote',
      'kpromo:plan:rollback',
      'kpromo:release:status',
    ]);
  });

  it("calls the promotions backend on behalf of the task's initiator and outputs its answers", async () => {
    const r = await runTask(mockCredentials.user.header(ALICE));
    expect(r.error).toBeUndefined();
    expect(r.status).toBe('Run completed with status: completed');
    expect(r.output).toEqual({
      plan: 'p1',
      applications: ['cart'],
      approvers: [ALICE],
      waitingFor: 'one more approval',
      phase: 'Complete',
      app: { application: { name: 'cart', namespace: 'kpromo', versions: [{ environment: 'dev' }] } },
      rollback: 'p1-rollback',
    });
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      'POST /plans',
      'POST /plans/team-a/p1/approve',
      'GET /plans/kpromo/p1',
      'GET /applications?namespace=kpromo',
      'POST /plans/team-a/p1/rollback',
    ]);
    // Every call is authenticated as alice, with a plugin token issued on her behalf for `promotions`.
    for (const c of calls) {
      expect(c.principal).toMatchObject({ type: 'user', userEntityRef: ALICE });
      expect(JSON.parse(c.authorization!.replace(/^Bearer mock-service-token:/, ''))).toMatchObject({
        obo: ALICE,
        target: 'promotions',
      });
    }
    expect(calls[0].body).toEqual({
      namespace: 'team-a',
      from: 'dev',
      to: 'stable',
      applications: ['cart'],
      name: 'p1',
    });
    // The approval names the plan the initiator confirmed (the controller refuses another uid: 409).
    expect(calls[1].body).toEqual({ uid: 'uid-p1' });
    expect(calls[4].body).toEqual({ approve: false });
  });

  it('kpromo:plan:continue continues the plan shown as the initiator, and refuses without confirm and uid before calling', async () => {
    const r = await runTask(
      mockCredentials.user.header(ALICE),
      { plan: 'fleet-1', uid: 'uid-fleet-1', confirm: true },
      'kpromo-continue',
    );
    expect(r.error).toBeUndefined();
    expect(r.output).toEqual({ wave: 'eu', currentWave: 'eu' });
    expect(calls.map((c) => [c.method, c.path, c.principal.userEntityRef, c.body])).toEqual([
      ['POST', '/plans/team-a/fleet-1/continue', ALICE, { uid: 'uid-fleet-1' }],
    ]);
    calls.length = 0;
    const unconfirmed = await runTask(mockCredentials.user.header(ALICE), { plan: 'fleet-1' }, 'kpromo-continue');
    expect(unconfirmed.status).toBe('Run completed with status: failed');
    expect(unconfirmed.error?.message).toBe(
      "kpromo:plan:continue lets a wave of plan team-a/fleet-1 start only with an explicit confirmation: set confirm: true and uid (the metadata.uid of the plan the template showed) in the step's input (e.g. from a confirmation checkbox and the plan shown in the template); no wave was continued",
    );
    expect(calls).toEqual([]);
  });

  it("fails the task with the backend's refusal (name and message) when the initiator may not act", async () => {
    const r = await runTask(mockCredentials.user.header(BOB));
    expect(r.status).toBe('Run completed with status: failed');
    expect(r.error).toEqual({
      name: 'NotAllowedError',
      message: `forbidden: ${BOB} may not approve plans into stable`,
    });
    // The task stopped at the refused step.
    expect(calls.map((c) => `${c.method} ${c.path} ${c.principal.userEntityRef}`)).toEqual([
      `POST /plans ${BOB}`,
      `POST /plans/team-a/p1/approve ${BOB}`,
    ]);
  });

  it('refuses to approve without confirm: true and the uid of the plan shown, before calling the backend', async () => {
    const r = await runTask(mockCredentials.user.header(ALICE), { app: 'cart' });
    expect(r.status).toBe('Run completed with status: failed');
    expect(r.error).toEqual({
      name: 'InputError',
      message:
        "kpromo:plan:promote approves plan team-a/p1 only with an explicit confirmation: set confirm: true in the step's input (e.g. from a confirmation checkbox and the plan shown in the template); nothing was approved",
    });
    // The plan was created, never approved.
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual(['POST /plans']);

    calls.length = 0;
    const unconfirmed = await runTask(mockCredentials.user.header(ALICE), { plan: 'p1' }, 'kpromo-rollback');
    expect(unconfirmed.error?.message).toBe(
      "kpromo:plan:rollback approves a rollback of plan team-a/p1 only with an explicit confirmation: set confirm: true and uid (the metadata.uid of the plan the template showed) in the step's input (e.g. from a confirmation checkbox and the plan shown in the template); nothing was approved",
    );
    const noUid = await runTask(mockCredentials.user.header(ALICE), { plan: 'p1', confirm: true }, 'kpromo-rollback');
    expect(noUid.error?.message).toMatch(/set uid \(the metadata\.uid of the plan the template showed\)/);
    const createApproved = await runTask(mockCredentials.user.header(ALICE), {}, 'kpromo-create-approved');
    expect(createApproved.error).toEqual({
      name: 'InputError',
      message:
        "kpromo:plan:create creates an approved plan only with an explicit confirmation: set confirm: true in the step's input (e.g. from a confirmation checkbox and the plan shown in the template); nothing was approved",
    });
    expect(calls).toEqual([]);

    // Another plan than the one shown (recreated since): refused, nothing rolled back.
    const stale = await runTask(
      mockCredentials.user.header(ALICE),
      { plan: 'p1', uid: 'uid-of-another-p1', confirm: true },
      'kpromo-rollback',
    );
    expect(stale.error).toEqual({
      name: 'ConflictError',
      message:
        'plan team-a/p1 is not the plan the template showed (uid uid-of-another-p1, now uid-p1): it was recreated since; nothing was rolled back',
    });
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual(['GET /plans/team-a/p1']);

    calls.length = 0;
    const confirmed = await runTask(
      mockCredentials.user.header(ALICE),
      { plan: 'p1', uid: 'uid-p1', confirm: true },
      'kpromo-rollback',
    );
    expect(confirmed.error).toBeUndefined();
    expect(confirmed.output).toEqual({ rollback: 'p1-rollback' });
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      'GET /plans/team-a/p1',
      'POST /plans/team-a/p1/rollback',
    ]);
    // Sent on: the controller refuses a plan recreated after the check above (409).
    expect(calls[1].body).toEqual({ uid: 'uid-p1' });
    const created = await runTask(mockCredentials.user.header(ALICE), { confirm: true }, 'kpromo-create-approved');
    expect(created.error).toBeUndefined();
    expect(calls.at(-1)).toMatchObject({
      method: 'POST',
      path: '/plans',
      body: { approve: true, applications: ['cart'], expect: { cart: `sha256:${'c'.repeat(64)}` } },
    });
    expect(calls.at(-1)?.body).not.toHaveProperty('confirm');
  });

  it('refuses a namespace that is not a namespace name before calling the backend', async () => {
    const r = await runTask(
      mockCredentials.user.header(ALICE),
      { plan: 'p1', uid: 'uid-p1', confirm: true },
      'kpromo-rollback-evil',
    );
    expect(r.error?.message).toMatch(/namespace: "evil\.attacker\.test" is not a Kubernetes namespace name/);
    expect(calls).toEqual([]);
  });

  it('refuses a task started by a service principal instead of acting as the scaffolder', async () => {
    const r = await runTask(
      mockCredentials.service.header({
        onBehalfOf: mockCredentials.service('external:ci'),
        targetPluginId: 'scaffolder',
      }),
    );
    expect(r.status).toBe('Run completed with status: failed');
    expect(r.error).toEqual({
      name: 'NotAllowedError',
      message:
        'kpromo scaffolder actions act as the user who started the task; this task was started by service external:ci, which cannot be forwarded to the promotions backend',
    });
    expect(calls).toEqual([]);
  });
});
