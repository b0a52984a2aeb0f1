import type { IncomingMessage } from 'node:http';
import { coreServices, createBackendPlugin } from '@backstage/backend-plugin-api';
import { mockCredentials, mockServices, startTestBackend, type TestBackend } from '@backstage/backend-test-utils';
import { catalogServiceMock } from '@backstage/plugin-catalog-node/testUtils';
import scaffolderBackend from '@backstage/plugin-scaffolder-backend';
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
  metadata: { namespace, name },
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
          const m = /^\/plans\/([^/]+)\/([^/]+)(?:\/(approve|rollback))?$/.exec(url.pathname);
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
    parameters: [{ properties: { app: { type: 'string' } } }],
    steps: [
      {
        id: 'create',
        action: 'kpromo:plan:create',
        input: { namespace: 'team-a', from: 'dev', to: 'stable', applications: [tpl('parameters.app')], name: 'p1' },
      },
      {
        id: 'promote',
        action: 'kpromo:plan:promote',
        input: { namespace: tpl('steps.create.output.namespace'), plan: tpl('steps.create.output.plan') },
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

async function runTask(authorization: string) {
  const res = await fetch(`${base}/api/scaffolder/v2/tasks`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ templateRef: 'template:default/kpromo-all', values: { app: 'cart' } }),
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
  backend = await startTestBackend({
    features: [
      scaffolderBackend,
      scaffolderModulePromotions,
      promotionsStandIn,
      catalogServiceMock.factory({ entities: [template] }),
      mockServices.rootConfig.factory({
        data: {
          backend: { baseUrl: 'http://localhost:0', listen: { port: 0 } },
          promotions: { controller: { defaultNamespace: 'kpromo' } },
        },
      }),
    ],
  });
  base = `http://127.0.0.1:${(backend.server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await backend?.stop();
});

beforeEach(() => {
  calls.length = 0;
});

describe('scaffolder module kpromo:* actions in real scaffolder tasks', () => {
  it('registers the four actions with the scaffolder', async () => {
    const res = await fetch(`${base}/api/scaffolder/v2/actions`, {
      headers: { authorization: mockCredentials.user.header(ALICE) },
    });
    const ids = ((await res.json()) as Array<{ id: string }>).map((a) => a.id).filter((id) => id.startsWith('kpromo:'));
    expect(ids.sort()).toEqual([
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
    expect(calls[1].body).toEqual({});
    expect(calls[4].body).toEqual({ approve: false });
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
