import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseManager } from '@backstage/backend-defaults/database';
import { mockServices, type TestBackend } from '@backstage/backend-test-utils';
import { ConfigReader } from '@backstage/config';
import { promotionsPlugin } from '@kpromo/plugin-promotions-backend';
import { type BackstageTestBackend, startBackstageTestBackend } from '@kpromo/test-harness/backstage';
import { PortStandIn } from '@kpromo/test-harness/port';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promotionsModulePort } from '../src/index.js';
import { DatabaseReplayGuard, PORT_RUNS_TABLE, type PortReplayDb } from '../src/port.js';

// Issue 31, point 5: "the Port webhook replay guard is per process". Two replicas of the backend
// (two real Backstage backends with the promotions plugin) share one database, a SQLite file as
// `backend.database` names it, and receive the same signed Port run: exactly one acts (one plan
// created at the controller, one run reported to Port), the other answers 409.

const SECRET = 'port-secret-replicas-0123456789';
const CLIENT = 'port-client-replicas';
const NS = 'kpromo';

/** A stand-in controller (the replay guard is what is tested): records plan creations. */
let controller: Server;
let controllerUrl = '';
const created: string[] = [];
const plan = (name: string, phase: string) => ({
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'PromotionPlan',
  metadata: { name, namespace: NS, uid: `uid-${name}` },
  spec: { flow: 'main', from: 'dev', to: 'stable', candidates: [{ application: 'cart', from: { tag: 'v2' } }] },
  status: { phase, apps: [{ application: 'cart', phase: 'Succeeded', written: true }] },
});

const standIn = new PortStandIn(CLIENT, SECRET);
const dir = mkdtempSync(join(tmpdir(), 'kpromo-replicas-'));
const replicas: TestBackend[] = [];
const bases: string[] = [];

function sign(body: string, ts = String(Date.now())) {
  return {
    'x-port-timestamp': ts,
    'x-port-signature': `v1,${createHmac('sha256', SECRET).update(`${ts}.${body}`).digest('base64')}`,
  };
}

async function deliver(base: string, raw: string, headers: Record<string, string>) {
  const res = await fetch(`${base}/api/promotions/port/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: raw,
  });
  return { status: res.status, json: (await res.json()) as { error?: { name: string; message: string } } };
}

const run = (runId: string, name: string) =>
  JSON.stringify({
    runId,
    action: 'kpromo_promote',
    user: 'alice@example.com',
    // The digest the cart entity showed, which kpromo_promote sends (create-and-approve must carry it).
    inputs: {
      namespace: NS,
      from: 'dev',
      to: 'stable',
      applications: ['cart'],
      name,
      expect: { cart: `sha256:${'2'.repeat(64)}` },
    },
  });

async function replica(): Promise<BackstageTestBackend> {
  return startBackstageTestBackend({
    features: [promotionsPlugin, promotionsModulePort],
    // Both replicas: the same database (here SQLite files in one directory, <dir>/promotions.sqlite).
    backend: { database: { client: 'better-sqlite3', connection: { directory: dir } } },
    controller: { baseUrl: controllerUrl, token: 'backend-token-0123456789', defaultNamespace: NS },
    promotions: { port: { baseUrl: standIn.url, clientId: CLIENT, clientSecret: SECRET, pollIntervalMs: 20 } },
  });
}

beforeAll(async () => {
  controller = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (path === '/api/v1/diff')
        return send(200, { flow: 'main', candidates: [{ application: 'cart', from: { tag: 'v2' } }], skipped: [] });
      if (req.method === 'POST' && path === '/api/v1/plans') {
        const name = (JSON.parse(raw) as { name: string }).name;
        created.push(name);
        return send(201, { plan: plan(name, 'Pending'), skipped: [] });
      }
      const m = /^\/api\/v1\/plans\/[^/]+\/([^/]+)$/.exec(path);
      if (m) return send(200, plan(m[1], 'Complete'));
      send(404, { error: 'not found' });
    });
  });
  await new Promise<void>((r) => controller.listen(0, '127.0.0.1', r));
  controllerUrl = `http://127.0.0.1:${(controller.address() as { port: number }).port}`;
  await standIn.start();
  for (let i = 0; i < 2; i++) {
    const { backend, base } = await replica();
    replicas.push(backend);
    bases.push(base);
  }
});

afterAll(async () => {
  for (const b of replicas) await b.stop().catch(() => undefined);
  await standIn.stop();
  await new Promise<void>((r) => controller.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

const finished = (runId: string) =>
  expect.poll(() => standIn.runs.get(runId)?.patches.some((p) => p.status), { timeout: 10_000 }).toBe(true);

describe('Port webhook replay guard shared by backend replicas (one database)', () => {
  it('acts once when the same signed run reaches both replicas at the same time', async () => {
    const raw = run('run-both-1', 'plan-both-1');
    const headers = sign(raw);
    const answers = await Promise.all(bases.map((b) => deliver(b, raw, headers)));
    expect(answers.map((a) => a.status).sort()).toEqual([202, 409]);
    expect(answers.find((a) => a.status === 409)?.json.error).toEqual({
      name: 'ConflictError',
      message: 'Port run run-both-1 was already delivered: replayed delivery refused',
    });
    await finished('run-both-1');
    // Exactly one replica acted: one plan created, one run reported to Port.
    expect(created.filter((n) => n === 'plan-both-1')).toEqual(['plan-both-1']);
    expect(standIn.runs.get('run-both-1')?.patches.filter((p) => p.status)).toEqual([
      expect.objectContaining({ status: 'SUCCESS' }),
    ]);
  });

  it('refuses on the second replica a run the first one took, replayed or re-signed', async () => {
    const raw = run('run-seq-1', 'plan-seq-1');
    const headers = sign(raw);
    expect((await deliver(bases[0], raw, headers)).status).toBe(202);
    await finished('run-seq-1');
    const reported = JSON.stringify(standIn.runs.get('run-seq-1'));
    const replay = await deliver(bases[1], raw, headers);
    expect(replay.status).toBe(409);
    const resigned = await deliver(bases[1], raw, sign(raw, String(Date.now() + 1)));
    expect(resigned.status).toBe(409);
    expect(resigned.json.error?.message).toBe(
      'Port run run-seq-1 was already delivered (with another signature): a second delivery of a run is refused',
    );
    // Nothing more happened: still one plan, the run in Port unchanged.
    expect(created.filter((n) => n === 'plan-seq-1')).toEqual(['plan-seq-1']);
    expect(JSON.stringify(standIn.runs.get('run-seq-1'))).toBe(reported);
    // A new run id is a new run, on either replica.
    const next = run('run-seq-2', 'plan-seq-2');
    expect((await deliver(bases[1], next, sign(next))).status).toBe(202);
    await finished('run-seq-2');
    expect(created.filter((n) => n === 'plan-seq-2')).toEqual(['plan-seq-2']);
  });
});

describe('DatabaseReplayGuard', () => {
  let db: PortReplayDb;
  beforeAll(async () => {
    // Backstage's own database manager, as coreServices.database hands it to the plugin.
    db = await DatabaseManager.fromConfig(
      new ConfigReader({ backend: { database: { client: 'better-sqlite3', connection: ':memory:' } } }),
    )
      .forPlugin('promotions', {
        logger: mockServices.rootLogger(),
        lifecycle: { addStartupHook() {}, addShutdownHook() {} },
      })
      .getClient();
  });
  afterAll(() => db?.destroy());

  it('forgets run ids once their deliveries would be stale, and refuses (503) beyond maxEntries', async () => {
    let t = Date.parse('2026-12-02T12:00:00Z');
    const o = { windowMs: 1000, maxEntries: 2, now: () => t };
    const a = await DatabaseReplayGuard.create(db, o);
    const b = await DatabaseReplayGuard.create(db, o); // a second replica: the table exists
    await a.admit('r1', 'sig', t);
    await expect(b.admit('r1', 'sig', t)).rejects.toMatchObject({ name: 'ConflictError' });
    await b.admit('r2', 'sig', t);
    await expect(a.admit('r3', 'sig', t)).rejects.toMatchObject({
      name: 'ServiceUnavailableError',
      message: 'too many Port runs within 1s (promotions.port.maxRecentRuns: 2); retry later',
    });
    expect(await a.size()).toBe(2);
    t += 1001; // both expired: deleted, r1 may be delivered again (a delivery this late no longer verifies)
    await b.admit('r1', 'sig', t);
    await a.admit('r3', 'sig', t);
    expect(await db(PORT_RUNS_TABLE).orderBy('run_id').pluck('run_id')).toEqual(['r1', 'r3']);
    // Only a digest of the signature is stored.
    expect(JSON.stringify(await db(PORT_RUNS_TABLE).select())).not.toContain('"sig"');
  });
});
