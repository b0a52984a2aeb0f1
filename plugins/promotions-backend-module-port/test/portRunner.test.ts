import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { LoggerService, PermissionsService } from '@backstage/backend-plugin-api';
import { type Config, ConfigReader } from '@backstage/config';
import { PromotionsService } from '@kpromo/plugin-promotions-backend';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type PortConfig, readPortConfig } from '../src/config.js';
import { type PortActionsApi, PortRunner, portIdentity, ReplayGuard } from '../src/port.js';

/** `promotions.port` of an app-config, read as the module reads it. */
const portConfigOf = (c: Config) => readPortConfig(c.getConfig('promotions.port'));

const SECRET = 'port-client-secret-0123456789';
const TOKEN = 'backend-controller-token-0123456789';
const NS = 'kpromo';

// A stand-in controller: records every request (method, path, identity headers, body) and answers
// a diff with one candidate, the created plan, and that plan as Complete.
let server: Server;
let controllerBase = '';
const controllerCalls: Array<{ method: string; path: string; headers: IncomingHttpHeaders; body: unknown }> = [];
const plan = (name: string, phase = 'Complete') => ({
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'PromotionPlan',
  metadata: { name, namespace: NS },
  spec: {
    flow: 'main',
    from: 'dev',
    to: 'stable',
    candidates: [{ application: 'cart', from: { tag: 'v2', digest: 'sha256:2' } }],
  },
  status: { phase, apps: [{ application: 'cart', phase: 'Succeeded', written: true }] },
});
beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      controllerCalls.push({
        method: req.method ?? '',
        path,
        headers: req.headers,
        body: raw ? JSON.parse(raw) : undefined,
      });
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (path === '/api/v1/diff')
        return send(200, {
          flow: 'main',
          candidates: [{ application: 'cart', from: { tag: 'v2', digest: 'sha256:2' } }],
          skipped: [],
        });
      if (req.method === 'POST' && path === '/api/v1/plans')
        return send(201, {
          plan: plan((JSON.parse(raw) as { name?: string }).name ?? 'generated', 'Pending'),
          skipped: [],
        });
      if (path === '/api/v1/resources') {
        const b = JSON.parse(raw) as Record<string, string>;
        return send(200, { ...b, apiVersion: `${b.group}/${b.version}`, kind: 'Widget', spec: undefined });
      }
      const m = /^\/api\/v1\/plans\/[^/]+\/([^/]+)(\/rollback|\/continue)?$/.exec(path);
      if (m?.[2] === '/rollback')
        return send(201, { ...plan(`${m[1]}-rollback`, 'Pending'), spec: { ...plan('x').spec, action: 'rollback' } });
      // A fleet plan: wave eu, continued, has succeeded; the last wave pauses again.
      if (m?.[1].startsWith('fleet'))
        return send(200, {
          ...plan(m[1], 'Promoting'),
          spec: { ...plan('x').spec, continuations: [{ wave: 'eu', user: 'port:alice@example.com' }] },
          status: {
            phase: 'Promoting',
            apps: [{ application: 'cart', phase: 'Pending' }],
            waves: [
              { name: 'canary', clusters: ['c1'], phase: 'Succeeded', pause: true },
              { name: 'eu', clusters: ['c2', 'c3'], phase: 'Succeeded', succeeded: 2, failed: 0, pause: true },
              { name: 'rest', clusters: ['c4'], phase: 'Waiting' },
            ],
          },
        });
      // A release with an order inside it (status.order): db first, then cart.
      if (m?.[1].startsWith('p-ordered'))
        return send(200, {
          ...plan(m[1]),
          spec: {
            ...plan(m[1]).spec,
            candidates: ['db', 'cart'].map((application) => ({ application, from: { tag: 'v2', digest: 'sha256:2' } })),
          },
          status: {
            phase: 'Complete',
            order: [{ application: 'cart', after: ['db'] }],
            apps: ['db', 'cart'].map((application) => ({ application, phase: 'Succeeded', written: true })),
          },
        });
      // A plan through a pull request, merged; its URL from the forge.
      if (m?.[1].startsWith('p-pr'))
        return send(200, {
          ...plan(m[1]),
          status: {
            ...plan(m[1]).status,
            pullRequest: {
              forge: 'gitea',
              repository: 'platform/gitops',
              branch: `kpromo/${m[1]}`,
              base: 'main',
              number: 4,
              url: m[1].includes('js') ? 'javascript:alert(1)' : 'https://gitea.example.com/platform/gitops/pulls/4',
              state: 'merged',
              reviews: [],
              merged: { by: 'carol', commit: 'f'.repeat(40) },
              message: 'approved',
            },
          },
        });
      if (m) return send(200, plan(m[1]));
      send(404, { error: 'not found' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  controllerBase = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** Everything the runner logs, to check no line carries the signature or a secret. */
const logLines: string[] = [];
const logger: LoggerService = {
  error: (m) => void logLines.push(m),
  warn: (m) => void logLines.push(m),
  info: (m) => void logLines.push(m),
  debug: (m) => void logLines.push(m),
  child: () => logger,
};
/** Port runs never reach the Backstage permission framework: it has no principal for them. */
const permissionCalls: unknown[] = [];
const permissions = {
  authorize: async (...a: unknown[]) => {
    permissionCalls.push(a);
    throw new Error('Port runs must not be checked as a Backstage principal');
  },
  authorizeConditional: async (...a: unknown[]) => {
    permissionCalls.push(a);
    throw new Error('Port runs must not be checked as a Backstage principal');
  },
} as unknown as PermissionsService;

/** What the runner reports to Port: log lines and run patches, by run id. */
const port = new Map<string, { logs: Array<Record<string, unknown>>; patches: Array<Record<string, unknown>> }>();
const runOf = (id: string) => {
  let r = port.get(id);
  if (!r) {
    r = { logs: [], patches: [] };
    port.set(id, r);
  }
  return r;
};
const portApi = {
  POST: async (_path: string, o: { params: { path: { run_id: string } }; body: Record<string, unknown> }) => {
    runOf(o.params.path.run_id).logs.push(o.body);
    return { data: { ok: true }, response: new Response(null, { status: 201 }) };
  },
  PATCH: async (_path: string, o: { params: { path: { run_id: string } }; body: Record<string, unknown> }) => {
    runOf(o.params.path.run_id).patches.push(o.body);
    return { data: { ok: true }, response: new Response(null, { status: 200 }) };
  },
} as unknown as PortActionsApi;

const portCfg = (o: Partial<PortConfig> = {}): PortConfig => ({
  baseUrl: 'http://port.invalid',
  clientId: 'id',
  clientSecret: SECRET,
  maxSignatureAgeSeconds: 300,
  maxRecentRuns: 100,
  actions: {
    promote: 'kpromo_promote',
    rollback: 'kpromo_rollback',
    continue: 'kpromo_continue',
    stopLine: 'kpromo_stop_line',
    resumeLine: 'kpromo_resume_line',
    adopt: 'kpromo_adopt',
  },
  identity: 'port:{email}',
  waitTimeoutSeconds: 5,
  pollIntervalMs: 10,
  resourceActions: [],
  ...o,
});

let clock = Date.parse('2026-12-02T12:00:00Z');
const now = () => clock;
/** `defaultNamespace: null`: promotions.controller.defaultNamespace unset. */
function runner(o: Partial<PortConfig> = {}, defaultNamespace: string | null = NS) {
  const svc = new PromotionsService(
    {
      controller: { token: TOKEN, defaultNamespace: defaultNamespace ?? undefined },
      entityRef: 'component:default/{name}',
    },
    permissions,
    logger,
    async () => controllerBase,
  );
  return new PortRunner(svc, portCfg(o), portApi, logger, now);
}

function delivery(body: Record<string, unknown>, o: { ts?: number; secret?: string } = {}) {
  const raw = Buffer.from(JSON.stringify(body));
  const timestamp = String(o.ts ?? clock);
  const signature = `v1,${createHmac('sha256', o.secret ?? SECRET)
    .update(`${timestamp}.`)
    .update(raw)
    .digest('base64')}`;
  return { raw, headers: { signature, timestamp } };
}
/** The digest the cart entity showed for dev (its `versions` property), as kpromo_promote sends it. */
const SHOWN = { cart: `sha256:${'2'.repeat(64)}` };
const promote = (runId: string, extra: Record<string, unknown> = {}) => ({
  runId,
  action: 'kpromo_promote',
  user: 'alice@example.com',
  inputs: { namespace: NS, from: 'dev', to: 'stable', applications: 'cart', name: `p-${runId}`, expect: SHOWN },
  ...extra,
});
const lastPatch = (runId: string) => port.get(runId)?.patches.at(-1);

beforeEach(() => {
  controllerCalls.length = 0;
  permissionCalls.length = 0;
});

describe('PortRunner: a signed delivery', () => {
  it('promotes as port:<email> through the controller (x-kpromo-user, no groups) and reports SUCCESS', async () => {
    const r = runner();
    const d = delivery(promote('ok-1'));
    await (await r.prepare(d.raw, d.headers))();
    expect(lastPatch('ok-1'), JSON.stringify(port.get('ok-1'))).toMatchObject({
      status: 'SUCCESS',
      statusLabel: 'Complete',
    });
    expect(controllerCalls.map((c) => `${c.method} ${c.path}`)).toEqual([
      'GET /api/v1/diff',
      'POST /api/v1/plans',
      `GET /api/v1/plans/${NS}/p-ok-1`,
    ]);
    for (const c of controllerCalls) {
      expect(c.headers['x-kpromo-user']).toBe('port:alice@example.com');
      expect(c.headers['x-kpromo-groups']).toBeUndefined();
      expect(c.headers.authorization).toBe(`Bearer ${TOKEN}`);
    }
    // The body never names an approver: the controller records the identity it acts as. It names
    // the digest the entity showed, which the controller holds the candidates to.
    expect(controllerCalls[1].body).toMatchObject({
      namespace: NS,
      applications: ['cart'],
      approve: true,
      expect: SHOWN,
    });
    expect(JSON.stringify(controllerCalls[1].body)).not.toMatch(/alice|approvedBy/);
    expect(permissionCalls).toEqual([]);
  });

  it('a promote run through a pull request logs the pull request and links it from the run (http(s) only)', async () => {
    const r = runner();
    for (const id of ['pr-1', 'pr-js-1']) {
      const d = delivery(promote(id));
      await (await r.prepare(d.raw, d.headers))();
      expect(lastPatch(id)).toMatchObject({ status: 'SUCCESS' });
    }
    const logged = (id: string) => port.get(id)?.logs.map((l) => l.message);
    expect(logged('pr-1')).toContain(
      `pull request #4 merged https://gitea.example.com/platform/gitops/pulls/4 (kpromo/p-pr-1 into main), merged by carol as ${'f'.repeat(12)}, no reviews - approved`,
    );
    expect(port.get('pr-1')?.patches.filter((p) => p.link)).toEqual([
      { link: ['https://gitea.example.com/platform/gitops/pulls/4'] },
    ]);
    // A URL that is not http(s) is no link.
    expect(port.get('pr-js-1')?.patches.some((p) => p.link)).toBe(false);
  });

  it("a promote run logs the order inside the release once, each app's step from the read model; none without an order", async () => {
    const r = runner();
    for (const id of ['ordered-1', 'unordered-1']) {
      const d = delivery(promote(id));
      await (await r.prepare(d.raw, d.headers))();
      expect(lastPatch(id)).toMatchObject({ status: 'SUCCESS' });
    }
    const logged = (id: string) => port.get(id)?.logs.map((l) => String(l.message)) ?? [];
    expect(logged('ordered-1').filter((l) => l.includes('runs in order'))).toEqual([
      `Plan ${NS}/p-ordered-1 runs in order: db: step 1; cart: step 2, after db`,
    ]);
    expect(logged('unordered-1').some((l) => l.includes('runs in order'))).toBe(false);
  });

  it('a promote run that sends no digests shown is a preview: it reports the candidates and their digests and what to send, and creates nothing', async () => {
    const r = runner();
    const { expect: _shown, ...inputs } = promote('blind-1').inputs;
    const d = delivery(promote('blind-1', { inputs: { ...inputs, expect: null } }));
    await (await r.prepare(d.raw, d.headers))();
    const summary =
      'Preview, nothing promoted: 1 candidate(s) from dev to stable (flow main), listed in this run\'s logs. To promote exactly these, run kpromo_promote again with the same inputs and expect {"cart":"sha256:2"}; if dev runs anything else by then, that run promotes nothing.';
    expect(lastPatch('blind-1')).toEqual({ status: 'SUCCESS', statusLabel: 'Previewed', summary });
    expect(port.get('blind-1')?.logs.map((l) => l.message)).toEqual([
      'cart: dev runs v2 (sha256:2); stable runs nothing yet',
      summary,
    ]);
    // Read as the run's identity; nothing written.
    expect(controllerCalls.map((c) => `${c.method} ${c.path}`)).toEqual(['GET /api/v1/diff']);
    expect(controllerCalls[0].headers['x-kpromo-user']).toBe('port:alice@example.com');
  });

  it('a promote run on a plan that sends no uid (approving whatever plan holds the name) fails: nothing is approved', async () => {
    const r = runner();
    const d = delivery(promote('by-name-1', { inputs: { namespace: NS, plan: 'p-existing' } }));
    await (await r.prepare(d.raw, d.headers))();
    expect(lastPatch('by-name-1')).toMatchObject({ status: 'FAILURE' });
    expect(lastPatch('by-name-1')?.summary).toContain(
      'invalid request body: uid: is required: send the metadata.uid of the plan you reviewed',
    );
    expect(controllerCalls.filter((c) => c.method === 'POST')).toEqual([]);
    // With the uid of the plan entity it ran on, the approval names that plan.
    const named = delivery(
      promote('by-uid-1', {
        inputs: { namespace: NS, plan: 'p-existing', uid: '6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11' },
      }),
    );
    await (await r.prepare(named.raw, named.headers))();
    expect(controllerCalls.find((c) => c.method === 'POST')).toMatchObject({
      path: `/api/v1/plans/${NS}/p-existing/approve`,
      body: { uid: '6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11' },
    });
  });

  it('a promote run on a plan with overrideReason approves with overrideFreeze and that reason, through the one approve operation; a reason shorter than a sentence is refused, nothing approved', async () => {
    const r = runner();
    const uid = '6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11';
    const short = delivery(
      promote('ovr-short-1', { inputs: { namespace: NS, plan: 'p-existing', uid, overrideReason: 'hotfix' } }),
    );
    await (await r.prepare(short.raw, short.headers))();
    expect(lastPatch('ovr-short-1')).toMatchObject({ status: 'FAILURE' });
    expect(lastPatch('ovr-short-1')?.summary).toContain('overrideReason');
    expect(controllerCalls.filter((c) => c.method === 'POST')).toEqual([]);
    const reason = 'INC-7: the checkout fix must ship during the freeze';
    const ok = delivery(
      promote('ovr-ok-1', { inputs: { namespace: NS, plan: 'p-existing', uid, overrideReason: reason } }),
    );
    await (await r.prepare(ok.raw, ok.headers))();
    expect(controllerCalls.find((c) => c.method === 'POST')).toMatchObject({
      path: `/api/v1/plans/${NS}/p-existing/approve`,
      body: { uid, overrideFreeze: true, overrideReason: reason },
    });
  });

  it("a rollback run that sends no uid (rolling back whatever plan holds the name) fails: nothing is created; with the plan entity's uid, the rollback names that plan", async () => {
    const r = runner();
    const rb = (runId: string, inputs: Record<string, unknown>) =>
      delivery({ runId, action: 'kpromo_rollback', user: 'alice@example.com', inputs });
    const blind = rb('rb-blind-1', { namespace: NS, plan: 'p-existing' });
    await (await r.prepare(blind.raw, blind.headers))();
    expect(lastPatch('rb-blind-1')).toMatchObject({ status: 'FAILURE' });
    expect(lastPatch('rb-blind-1')?.summary).toContain(
      'invalid request body: uid: is required: send the metadata.uid of the plan you reviewed',
    );
    expect(controllerCalls.filter((c) => c.method === 'POST')).toEqual([]);
    const named = rb('rb-uid-1', { namespace: NS, plan: 'p-existing', uid: '6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11' });
    await (await r.prepare(named.raw, named.headers))();
    expect(controllerCalls.find((c) => c.method === 'POST')).toMatchObject({
      path: `/api/v1/plans/${NS}/p-existing/rollback`,
      body: { approve: true, uid: '6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11' },
    });
  });

  it("a continue run lets the wave start as port:<email> for the plan entity's uid and reports that wave, not the whole plan; without a uid nothing starts", async () => {
    const r = runner();
    const go = (runId: string, inputs: Record<string, unknown>) =>
      delivery({ runId, action: 'kpromo_continue', user: 'alice@example.com', inputs });
    const blind = go('cont-blind-1', { namespace: NS, plan: 'fleet-1', wave: 'eu' });
    await (await r.prepare(blind.raw, blind.headers))();
    expect(lastPatch('cont-blind-1')).toMatchObject({ status: 'FAILURE' });
    expect(lastPatch('cont-blind-1')?.summary).toContain('continue needs inputs.uid');
    expect(controllerCalls).toEqual([]);
    const uid = '6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11';
    // Port sends an empty input as null: the wave that is waiting.
    const named = go('cont-uid-1', { namespace: NS, plan: 'fleet-1', uid, wave: null });
    await (await r.prepare(named.raw, named.headers))();
    const post = controllerCalls.find((c) => c.method === 'POST');
    expect(post).toMatchObject({ path: `/api/v1/plans/${NS}/fleet-1/continue`, body: { uid } });
    expect(post?.headers['x-kpromo-user']).toBe('port:alice@example.com');
    expect(lastPatch('cont-uid-1')).toMatchObject({ status: 'SUCCESS', statusLabel: 'wave eu Succeeded' });
    expect(port.get('cont-uid-1')?.logs.map((l) => l.message)).toEqual(
      expect.arrayContaining([
        'Wave eu of plan kpromo/fleet-1 continued by port:alice@example.com',
        'wave rest: Waiting',
        'Wave eu of plan kpromo/fleet-1 finished: Succeeded (2/2 clusters succeeded, 0 failed)',
      ]),
    );
  });

  it('refuses a replay of the same run (409) and does nothing: no controller call, no Port report', async () => {
    const r = runner();
    const d = delivery(promote('replay-1'));
    await (await r.prepare(d.raw, d.headers))();
    const calls = controllerCalls.length;
    const reports = JSON.stringify(port.get('replay-1'));
    expect(calls).toBe(3);
    await expect(r.prepare(d.raw, d.headers)).rejects.toThrow(
      expect.objectContaining({
        name: 'ConflictError',
        message: expect.stringMatching(/replay-1 was already delivered: replayed/),
      }),
    );
    // Re-signed with a later timestamp (same run id, another signature): refused as well.
    clock += 10_000;
    const again = delivery(promote('replay-1'));
    expect(again.headers.signature).not.toBe(d.headers.signature);
    await expect(r.prepare(again.raw, again.headers)).rejects.toThrow(
      expect.objectContaining({ name: 'ConflictError', message: expect.stringMatching(/with another signature/) }),
    );
    expect(controllerCalls.length).toBe(calls);
    expect(JSON.stringify(port.get('replay-1'))).toBe(reports);
    // Another run id is a new run.
    const other = delivery(promote('replay-2'));
    expect(typeof (await r.prepare(other.raw, other.headers))).toBe('function');
  });

  it('checks the signature before remembering a run id (a forged replay is 401, not 409)', async () => {
    const r = runner();
    const forged = delivery(promote('forged-1'), { secret: 'not-the-secret' });
    await expect(r.prepare(forged.raw, forged.headers)).rejects.toThrow(
      expect.objectContaining({ name: 'AuthenticationError' }),
    );
    expect(r.rememberedRuns).toBe(0);
    const d = delivery(promote('forged-1'));
    expect(typeof (await r.prepare(d.raw, d.headers))).toBe('function');
    expect(r.rememberedRuns).toBe(1);
  });

  it('accepts exactly the configured action identifiers (400 naming them otherwise)', async () => {
    const r = runner();
    for (const action of ['not_kpromo_promote', 'kpromo_promote_x', 'KPROMO_PROMOTE', 'promote', 'rollback']) {
      const d = delivery(promote(`act-${action}`, { action }));
      await expect(r.prepare(d.raw, d.headers), action).rejects.toThrow(
        expect.objectContaining({
          name: 'InputError',
          message: `unsupported Port action "${action}": expected kpromo_promote, kpromo_rollback, kpromo_continue, kpromo_stop_line, kpromo_resume_line or kpromo_adopt (promotions.port.actions)`,
        }),
      );
    }
    expect(r.rememberedRuns).toBe(0);
    const custom = runner({
      actions: {
        promote: 'acme_release',
        rollback: 'acme_undo',
        continue: 'acme_continue',
        stopLine: 'acme_stop',
        resumeLine: 'acme_resume',
        adopt: 'acme_adopt',
      },
    });
    const old = delivery(promote('act-custom-1'));
    await expect(custom.prepare(old.raw, old.headers)).rejects.toThrow(
      /expected acme_release, acme_undo, acme_continue, acme_stop, acme_resume or acme_adopt/,
    );
    const ok = delivery(promote('act-custom-2', { action: 'acme_release' }));
    expect(typeof (await custom.prepare(ok.raw, ok.headers))).toBe('function');
  });

  it('reports a run for a namespace outside promotions.port.namespaces as FAILED, before any controller call', async () => {
    // Default: controller.defaultNamespace only.
    const r = runner();
    const d = delivery(promote('ns-1', { inputs: { namespace: 'kube-system', from: 'dev', to: 'stable' } }));
    await (await r.prepare(d.raw, d.headers))();
    expect(lastPatch('ns-1')).toEqual({
      status: 'FAILURE',
      statusLabel: 'Failed',
      summary: 'namespace "kube-system" is not open to Port runs (promotions.port.namespaces: kpromo)',
    });
    // A rollback is checked the same way.
    const rb = delivery({
      runId: 'ns-2',
      action: 'kpromo_rollback',
      user: 'alice@example.com',
      inputs: { namespace: 'other', plan: 'p' },
    });
    await (await r.prepare(rb.raw, rb.headers))();
    expect(lastPatch('ns-2')?.summary).toMatch(/namespace "other" is not open to Port runs/);
    expect(controllerCalls).toEqual([]);
    // An explicit list replaces the default; a run naming no namespace uses controller.defaultNamespace.
    const listed = runner({ namespaces: ['team-a', 'team-b'] });
    const inList = delivery(
      promote('ns-3', { inputs: { namespace: 'team-b', from: 'dev', to: 'stable', name: 'p-ns-3', expect: SHOWN } }),
    );
    await (await listed.prepare(inList.raw, inList.headers))();
    expect(controllerCalls.find((c) => c.method === 'POST')?.body).toMatchObject({ namespace: 'team-b' });
    controllerCalls.length = 0;
    const unnamed = delivery(promote('ns-4', { inputs: { from: 'dev', to: 'stable' } }));
    await (await listed.prepare(unnamed.raw, unnamed.headers))();
    expect(lastPatch('ns-4')?.summary).toBe(
      'namespace "kpromo" is not open to Port runs (promotions.port.namespaces: team-a, team-b)',
    );
    expect(controllerCalls).toEqual([]);
  });

  it('without namespaces and defaultNamespace, allows only runs naming no namespace (the controller default)', async () => {
    const r = runner({}, null);
    expect(r.namespaces).toBeUndefined();
    const named = delivery(promote('nsd-1'));
    await (await r.prepare(named.raw, named.headers))();
    expect(lastPatch('nsd-1')?.summary).toMatch(
      /namespace "kpromo" is not open to Port runs: promotions.port.namespaces is unset/,
    );
    expect(controllerCalls).toEqual([]);
    const unnamed = delivery(
      promote('nsd-2', { inputs: { from: 'dev', to: 'stable', name: 'p-nsd-2', expect: SHOWN } }),
    );
    await (await r.prepare(unnamed.raw, unnamed.headers))();
    const post = controllerCalls.find((c) => c.method === 'POST');
    expect(post?.body).toMatchObject({ name: 'p-nsd-2', approve: true });
    expect(post?.body).not.toHaveProperty('namespace');
  });

  it('refuses a trigger user that is not a plain e-mail address (comma, control character, none) before any controller call', async () => {
    const r = runner();
    const bad: Array<[string, string | undefined, RegExp]> = [
      [
        'id-1',
        'alice@example.com,system:masters',
        /trigger user "alice@example.com,system:masters" is not an e-mail address/,
      ],
      ['id-2', 'alice,bob@example.com', /is not an e-mail address/],
      ['id-3', 'alice@example.com\nadmin', /trigger user "alice@example.com\\nadmin" is not an e-mail address/],
      ['id-4', 'alice\u0000@example.com', /is not an e-mail address/],
      ['id-5', 'user:default/admin', /is not an e-mail address/],
      ['id-6', undefined, /names no trigger user/],
    ];
    for (const [runId, user, msg] of bad) {
      const d = delivery({ ...promote(runId), user });
      await (await r.prepare(d.raw, d.headers))();
      expect(lastPatch(runId), runId).toMatchObject({ status: 'FAILURE', summary: expect.stringMatching(msg) });
    }
    expect(controllerCalls).toEqual([]);
    // No log line carries a raw control character.
    expect(logLines.some((l) => [...l].some((ch) => ch.charCodeAt(0) < 0x20))).toBe(false);
  });

  it('acts as the configured identity template', async () => {
    const r = runner({ identity: 'port-user:{email}' });
    const d = delivery(promote('tpl-1'));
    await (await r.prepare(d.raw, d.headers))();
    expect(lastPatch('tpl-1')).toMatchObject({ status: 'SUCCESS' });
    expect(new Set(controllerCalls.map((c) => c.headers['x-kpromo-user']))).toEqual(
      new Set(['port-user:alice@example.com']),
    );
  });

  it('never logs the signature, the client secret or the controller token', async () => {
    const r = runner();
    const d = delivery(promote('log-1'));
    await (await r.prepare(d.raw, d.headers))();
    await expect(r.prepare(d.raw, d.headers)).rejects.toThrow(/already delivered/);
    const b64 = d.headers.signature.slice(3);
    expect(logLines.length).toBeGreaterThan(0);
    for (const l of logLines) {
      expect(l).not.toContain(b64);
      expect(l).not.toContain(SECRET);
      expect(l).not.toContain(TOKEN);
    }
    expect(logLines).toContain(
      'Port run log-1: delivery refused: Port run log-1 was already delivered: replayed delivery refused',
    );
  });

  describe('resource actions (promotions.port.resourceActions)', () => {
    const widgets = portConfigOf(
      new ConfigReader({
        promotions: {
          port: {
            clientId: 'id',
            clientSecret: SECRET,
            resourceActions: [{ blueprint: 'widget', apiVersion: 'example.com/v1', plural: 'widgets' }],
            cluster: 'dev',
          },
        },
      }),
    );
    const cfg = { resourceActions: widgets.resourceActions, cluster: widgets.cluster };
    const act = (runId: string, action: string, resource: Record<string, unknown>) =>
      delivery({ runId, action, user: 'alice@example.com', resource });

    it('writes through POST /resources as port:<email>; the kind comes from the config, not the body', async () => {
      const r = runner(cfg);
      const d = act('res-1', 'update_widget', {
        name: 'w1',
        namespace: NS,
        cluster: 'dev',
        spec: { size: 3 },
        // Ignored: the body never names the kind.
        group: 'rbac.authorization.k8s.io',
        plural: 'clusterroles',
      });
      await (await r.prepare(d.raw, d.headers))();
      expect(controllerCalls.map((c) => `${c.method} ${c.path}`)).toEqual(['POST /api/v1/resources']);
      expect(controllerCalls[0].headers['x-kpromo-user']).toBe('port:alice@example.com');
      expect(controllerCalls[0].headers['x-kpromo-groups']).toBeUndefined();
      expect(controllerCalls[0].body).toEqual({
        operation: 'update',
        group: 'example.com',
        version: 'v1',
        plural: 'widgets',
        namespace: NS,
        name: 'w1',
        spec: { size: 3 },
      });
      expect(lastPatch('res-1')).toEqual({
        status: 'SUCCESS',
        statusLabel: 'Done',
        summary: `Widget ${NS}/w1 updated by port:alice@example.com`,
      });
      // A delete sends no spec.
      const del = act('res-2', 'delete_widget', { name: 'w1', namespace: NS, spec: { size: 1 } });
      await (await r.prepare(del.raw, del.headers))();
      expect(controllerCalls[1].body).toEqual({
        operation: 'delete',
        group: 'example.com',
        version: 'v1',
        plural: 'widgets',
        namespace: NS,
        name: 'w1',
      });
    });

    it('refuses, before any controller call: another cluster, a namespace not open to runs, a bad name, no name', async () => {
      const r = runner(cfg);
      const cases: Array<[string, Record<string, unknown>, RegExp]> = [
        ['c-1', { name: 'w1', namespace: NS, cluster: 'prod' }, /cluster "prod" is not the controller's cluster/],
        ['c-2', { name: 'w1', namespace: 'kube-system' }, /namespace "kube-system" is not open to Port runs/],
        ['c-3', { name: 'W1/../x', namespace: NS }, /name: must be a Kubernetes object name/],
        ['c-4', { namespace: NS }, /needs the object's name/],
        ['c-5', { name: 'w1', namespace: NS, spec: 'rm -rf' }, /spec: must be a JSON object/],
      ];
      for (const [id, resource, why] of cases) {
        const d = act(id, 'create_widget', resource);
        await (await r.prepare(d.raw, d.headers))();
        expect(lastPatch(id)?.status, id).toBe('FAILURE');
        expect(String(lastPatch(id)?.summary), id).toMatch(why);
      }
      expect(controllerCalls).toEqual([]);
    });

    it('accepts only the configured action identifiers (400 naming them)', async () => {
      const d = act('res-x', 'delete_gadget', { name: 'g', namespace: NS });
      await expect(runner(cfg).prepare(d.raw, d.headers)).rejects.toThrow(
        /expected kpromo_promote, kpromo_rollback, kpromo_continue, kpromo_stop_line, kpromo_resume_line or kpromo_adopt \(promotions.port.actions\) or one of create_widget, update_widget, delete_widget/,
      );
      const none = act('res-y', 'create_widget', { name: 'w', namespace: NS });
      await expect(runner().prepare(none.raw, none.headers)).rejects.toThrow(/unsupported Port action "create_widget"/);
    });
  });
});

describe('ReplayGuard', () => {
  it('evicts run ids once a delivery signed with their timestamp would be stale', () => {
    let t = 1_000_000;
    const g = new ReplayGuard(300_000, 10, () => t);
    g.admit('a', 'sig-a', t);
    g.admit('b', 'sig-b', t + 60_000); // a timestamp a minute ahead: remembered a minute longer
    expect(() => g.admit('a', 'sig-a', t)).toThrow(/already delivered/);
    t += 300_000; // exactly the window: a delivery stamped t-300s still verifies, so still refused
    expect(() => g.admit('a', 'sig-a2', t)).toThrow(/already delivered/);
    t += 1;
    expect(() => g.admit('c', 'sig-c', t)).not.toThrow();
    expect(g.size).toBe(2); // a evicted, b and c kept
    expect(() => g.admit('b', 'sig-b', t)).toThrow(/already delivered/);
    t += 60_000;
    g.admit('d', 'sig-d', t);
    expect(g.size).toBe(2); // b evicted as well
  });

  it('refuses (503) rather than grow beyond maxEntries, and accepts again once entries expire', () => {
    let t = 0;
    const g = new ReplayGuard(1000, 3, () => t);
    for (const id of ['a', 'b', 'c']) g.admit(id, id, t);
    expect(() => g.admit('d', 'd', t)).toThrow(
      expect.objectContaining({ name: 'ServiceUnavailableError', message: expect.stringMatching(/maxRecentRuns: 3/) }),
    );
    expect(g.size).toBe(3);
    t = 1001;
    g.admit('d', 'd', t);
    expect(g.size).toBe(1);
  });
});

describe('portIdentity', () => {
  it('fills the template with a valid e-mail address only', () => {
    expect(portIdentity('port:{email}', "carol.o'neil+ops@mail.example.com")).toBe(
      "port:carol.o'neil+ops@mail.example.com",
    );
    for (const bad of [
      '',
      'carol',
      'carol@',
      '@example.com',
      'a b@example.com',
      'a@exa mple.com',
      'a@b,c',
      'a:b@example.com',
      'a@-x.com',
      `${'a'.repeat(250)}@x.io`,
    ])
      expect(() => portIdentity('port:{email}', bad), bad).toThrow(/nobody to act as/);
  });
});

describe('readPortConfig: promotions.port', () => {
  type JsonObject = ConstructorParameters<typeof ConfigReader>[0] & object;
  const read = (port: JsonObject) =>
    portConfigOf(new ConfigReader({ promotions: { port: { clientId: 'id', clientSecret: 's', ...port } } }));

  it('has safe defaults', () => {
    expect(read({})).toEqual({
      baseUrl: 'https://api.getport.io',
      clientId: 'id',
      clientSecret: 's',
      maxSignatureAgeSeconds: 300,
      maxRecentRuns: 10_000,
      actions: {
        promote: 'kpromo_promote',
        rollback: 'kpromo_rollback',
        continue: 'kpromo_continue',
        stopLine: 'kpromo_stop_line',
        resumeLine: 'kpromo_resume_line',
        adopt: 'kpromo_adopt',
      },
      identity: 'port:{email}',
      waitTimeoutSeconds: 1800,
      pollIntervalMs: 2000,
      resourceActions: [],
    });
    expect(read({ namespaces: ['a', 'b', 'a'], actions: { promote: 'x_up' } })).toMatchObject({
      namespaces: ['a', 'b'],
      actions: { promote: 'x_up', rollback: 'kpromo_rollback' },
    });
  });

  it('refuses identity templates and values that could not be one identity per Port user', () => {
    expect(() => read({ identity: 'port:alice' })).toThrow(/must contain \{email\} exactly once/);
    expect(() => read({ identity: '{email},{email}' })).toThrow(/must contain \{email\}/);
    expect(() => read({ identity: 'port,{email}' })).toThrow(/no comma/);
    expect(() => read({ identity: 'system:{email}' })).toThrow(/not start with system:/);
    expect(() => read({ actions: { promote: 'same', rollback: 'same' } })).toThrow(/must differ/);
    expect(() => read({ actions: { promote: 'a b' } })).toThrow(/not a Port action identifier/);
    expect(() => read({ namespaces: ['Not_A_Namespace'] })).toThrow(/not a Kubernetes namespace name/);
    expect(() => read({ maxRecentRuns: 0 })).toThrow(/positive/);
    expect(read({ identity: 'kpromo-port:{email}' })?.identity).toBe('kpromo-port:{email}');
  });

  it('refuses resource actions on core or malformed kinds, clashing action identifiers and bad cluster names', () => {
    const ra = (e: Record<string, string>) => ({
      resourceActions: [{ blueprint: 'widget', apiVersion: 'example.com/v1', plural: 'widgets', ...e }],
    });
    expect(() => read(ra({ apiVersion: 'v1' }))).toThrow(/not <group>\/<version> of a custom resource/);
    expect(() => read(ra({ apiVersion: 'apps/v1' }))).toThrow(/not <group>\/<version> of a custom resource/);
    expect(() => read(ra({ plural: 'Widgets/status' }))).toThrow(/not a resource's plural name/);
    expect(() => read(ra({ blueprint: 'a b' }))).toThrow(/not a Port blueprint identifier/);
    expect(() => read({ ...ra({}), actions: { promote: 'create_widget' } })).toThrow(/configured twice/);
    expect(() => read({ cluster: 'Prod EU' })).toThrow(/not an exporter cluster name/);
    expect(read(ra({}))?.resourceActions).toEqual([
      {
        blueprint: 'widget',
        group: 'example.com',
        version: 'v1',
        plural: 'widgets',
        actions: { create_widget: 'create', update_widget: 'update', delete_widget: 'delete' },
      },
    ]);
  });
});
