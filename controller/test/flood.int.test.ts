// Issue 31, "staying up under attack": a controller process (leader election on, the real control
// plane) gets a flood of junk bearer tokens on the JSON API and the MCP endpoint while it holds its
// Lease. It must keep the Lease (same holder, renewTime moving on), answer most of the flood 429
// with Retry-After before any work, cause only a bounded number of TokenReviews, still serve a valid
// token (a static one from the flooding address, a TokenReview one from another address), and log
// a handful of refusal lines, not one per request; a plan approved before the flood keeps
// progressing during it and completes. (bench/flood.ts measures the same at 1,000 req/s.)
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import type { PromotionPlan } from '@kpromo/api';
import {
  applyCrds,
  type ControllerProcess,
  kubeConfigFor,
  startControllerProcess,
  waitFor,
} from '@kpromo/test-harness';
import {
  callApi,
  deleteNs,
  ensureNs,
  getPlan,
  restFor,
  seedTwoStageRelease,
  TEST_ADMIN,
  testTokensFile,
  waitPlan,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const RUN = Math.random().toString(36).slice(2, 7);
const NS = `flood-${RUN}`;
const LEASE = 'flood-leader';
const SA = 'flood-client';
const kubeconfig = inject('kubeconfig');
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
const { source, target } = inject('registries');
const APPS_NS = `${NS}-apps`;
const APPS = ['a1', 'a2', 'a3', 'a4'];
const FLOOD = 3_000;
const CONCURRENCY = 200;
let ctl: ControllerProcess | undefined;
let apiPort = 0;
let mcpPort = 0;

interface Lease {
  spec?: { holderIdentity?: string; renewTime?: string; leaseTransitions?: number };
}
const lease = () => dev.get<Lease>(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/${LEASE}`);

const logLines = () =>
  readFileSync(ctl!.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

interface Answer {
  status: number;
  retryAfter?: string;
  body: string;
}

/** One HTTP request from a chosen local address (127.0.0.0/8 is all loopback), on a pooled agent. */
function send(
  agent: Agent,
  o: { port: number; path: string; method?: string; token?: string; body?: string; from?: string },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: o.port,
        path: o.path,
        method: o.method ?? 'GET',
        agent,
        localAddress: o.from,
        headers: {
          host: `127.0.0.1:${o.port}`,
          ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
          ...(o.body ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers['retry-after'],
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

/** A counter's value (summed over label sets that contain `labels`) from the controller's /metrics. */
async function metric(name: string, labels = ''): Promise<number> {
  const agent = new Agent();
  const r = await send(agent, { port: apiPort, path: '/metrics', token: TEST_ADMIN.token });
  agent.destroy();
  expect(r.status).toBe(200);
  return r.body
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .filter((l) => l.includes(labels))
    .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
}

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await ensureNs(dev, NS);
  await dev.create(`/api/v1/namespaces/${NS}/serviceaccounts`, { metadata: { name: SA } });
  // A release to promote while the flood runs: dev runs v2 of four apps, stable v1.
  await seedTwoStageRelease({
    dev,
    stable,
    ns: NS,
    appsNs: APPS_NS,
    source,
    target,
    repo: `flood${RUN}`,
    apps: APPS,
    newTag: 'v2.0.0',
    oldTag: 'v1.0.0',
    seed: `flood-${RUN}`,
    applications: {},
  });
  // One app at a time, so the plan is still running when the flood starts.
  await dev.mergePatch(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionflows/main`, {
    spec: { concurrency: 1 },
  });
  ctl = startControllerProcess({
    identity: `flood-${RUN}`,
    kubeconfig,
    namespace: NS,
    lease: LEASE,
    config: {
      auth: { staticTokensFile: testTokensFile() },
      mcp: { enabled: true, host: '127.0.0.1', port: 0 },
    },
  });
  await waitFor(
    'the controller leads and listens',
    async () => {
      const lines = logLines();
      const started = lines.find((l) => l.msg === 'controller started');
      const mcp = lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('mcp server listening'));
      const holder = (await lease().catch(() => undefined))?.spec?.holderIdentity;
      if (!started || !mcp || holder !== `flood-${RUN}`) return undefined;
      apiPort = started.port as number;
      mcpPort = mcp.port as number;
      return true;
    },
    90_000,
  );
}, 180_000);

afterAll(async () => {
  await ctl?.stop('SIGKILL');
  await deleteNs(dev, NS);
  for (const c of [dev, stable]) await deleteNs(c, APPS_NS);
});

describe('a flood of junk bearer tokens', () => {
  it('keeps the Lease and a running plan progressing, answers 429 with Retry-After, bounds TokenReviews and log lines, still serves valid tokens', async () => {
    // Wait for the cache to see the release, then approve a plan right before the flood.
    await waitFor(
      'candidates dev -> stable',
      async () => {
        const r = await callApi(apiPort, `/api/v1/diff?namespace=${NS}&from=dev&to=stable`);
        return r.status === 200 && ((await r.json()) as { candidates: unknown[] }).candidates.length === APPS.length;
      },
      90_000,
    );
    const created = await callApi(apiPort, '/api/v1/plans', {
      method: 'POST',
      body: await withShown(apiPort, { namespace: NS, from: 'dev', to: 'stable', name: 'during-flood', approve: true }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const progress = new Set<string>();
    const track = (p: PromotionPlan) => {
      for (const a of p.status?.apps ?? []) progress.add(`${a.application}:${a.phase}`);
    };
    const before = await lease();
    const reviewsBefore = await metric('kpromo_tokenreviews_total');
    const linesBefore = logLines().length;
    // A Kubernetes token for the kpromo audience, checked with TokenReview (not a static token).
    const saToken = (
      await dev.create<{ status: { token: string } }>(`/api/v1/namespaces/${NS}/serviceaccounts/${SA}/token`, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { audiences: ['kpromo'], expirationSeconds: 600 },
      })
    ).status.token;

    // The Lease is watched all through the flood: its holder must never change. The flood goes on
    // (at least FLOOD requests) until the leader has renewed three times under it.
    const holders = new Set<string | undefined>();
    const renewals = new Set<string | undefined>([before.spec?.renewTime]);
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const l = await lease();
        holders.add(l.spec?.holderIdentity);
        renewals.add(l.spec?.renewTime);
        track(await getPlan(dev, NS, 'during-flood'));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const flooding = (i: number) => i < FLOOD || (renewals.size <= 3 && i < FLOOD * 30);

    const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const answers: Answer[] = [];
    let next = 0;
    // A third into the flood, valid callers: a static token from the flooding address, and a
    // TokenReview one from another address.
    let validCalls: Promise<[Answer, Answer]> | undefined;
    const callValid = () =>
      Promise.all([
        send(new Agent(), { port: apiPort, path: `/api/v1/flows?namespace=${NS}`, token: TEST_ADMIN.token }),
        send(new Agent(), {
          port: apiPort,
          path: `/api/v1/flows?namespace=${NS}`,
          token: saToken,
          from: '127.0.0.2',
        }),
      ]);
    const junk = async () => {
      while (flooding(next)) {
        const i = next++;
        if (i === Math.floor(FLOOD / 3)) validCalls = callValid();
        const token = randomBytes(24).toString('base64url');
        answers.push(
          await send(
            agent,
            i % 3 === 2
              ? {
                  port: mcpPort,
                  path: '/mcp',
                  method: 'POST',
                  token,
                  body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/list' }),
                }
              : { port: apiPort, path: `/api/v1/flows?namespace=${NS}`, token },
          ).catch((e: Error) => ({ status: -1, body: e.message })),
        );
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, junk));
    const [valid, reviewed] = await validCalls!;
    agent.destroy();
    watching = false;
    await watcher;

    // The plan progressed while the flood ran (apps moved through their steps), and completes.
    console.log(`[flood] plan steps seen during the flood: ${[...progress].sort().join(' ')}`);
    expect(progress.size).toBeGreaterThan(1);
    const done = await waitPlan(dev, NS, 'during-flood', (p) =>
      ['Complete', 'Incomplete', 'Failed'].includes(p.status?.phase ?? ''),
    );
    expect(done.status?.phase, JSON.stringify(done.status?.apps)).toBe('Complete');

    // Leadership held: one holder all along, no transition, and the renewals went on meanwhile.
    const after = await lease();
    expect([...holders]).toEqual([`flood-${RUN}`]);
    expect(after.spec?.leaseTransitions).toBe(before.spec?.leaseTransitions);
    expect(new Date(after.spec!.renewTime!).getTime()).toBeGreaterThan(new Date(before.spec!.renewTime!).getTime());
    expect(await metric('kpromo_lease_renewals_total', 'result="stopped"')).toBe(0);

    // Most of the flood refused before any work: 429 with Retry-After; the rest 401 (reviewed and
    // refused), or 503 with Retry-After when the token review budget was full — nothing else.
    expect(answers.length).toBeGreaterThanOrEqual(FLOOD);
    expect(renewals.size).toBeGreaterThan(3);
    const limited = answers.filter((a) => a.status === 429);
    console.log(
      `[flood] ${answers.length} junk requests: ${JSON.stringify(Object.fromEntries([...new Set(answers.map((a) => a.status))].map((s) => [s, answers.filter((a) => a.status === s).length])))}`,
    );
    expect(limited.length).toBeGreaterThan(FLOOD / 2);
    expect(limited.every((a) => Number(a.retryAfter) >= 1)).toBe(true);
    expect(answers.filter((a) => ![401, 429, 503].includes(a.status))).toEqual([]);
    expect(answers.filter((a) => a.status === 503).every((a) => Number(a.retryAfter) >= 1)).toBe(true);
    // A short JSON error, no internal detail (MCP answers are JSON-RPC errors).
    const apiLimited = limited.find((a) => !a.body.includes('jsonrpc'))!;
    expect(JSON.parse(apiLimited.body)).toEqual({
      error: 'too many requests with unknown or invalid tokens from this address; retry later',
    });

    // Valid callers were served mid-flood.
    expect(valid.status).toBe(200);
    // Authenticated through TokenReview from another address (RBAC then has its say: 403 or 200).
    expect([200, 403]).toContain(reviewed.status);

    // TokenReviews caused: bounded by the per-source budget, far fewer than requests.
    const reviews = (await metric('kpromo_tokenreviews_total')) - reviewsBefore;
    console.log(`[flood] TokenReviews caused: ${reviews}; 429s: ${limited.length}`);
    expect(reviews).toBeGreaterThan(0);
    expect(reviews).toBeLessThan(answers.length / 10);

    // The log: a handful of refusal lines and a summary, not one line per request.
    await waitFor(
      'the summary line',
      async () =>
        logLines()
          .slice(linesBefore)
          .some((l) => /more requests refused before authentication in the last \d+s/.test(String(l.msg))) || undefined,
      30_000,
    );
    const refusalLines = logLines()
      .slice(linesBefore)
      .filter((l) => l.result === 'refused' || /more requests refused/.test(String(l.msg)));
    console.log(`[flood] refusal log lines: ${refusalLines.length}`);
    expect(refusalLines.length).toBeLessThan(answers.length / 20);
  });
});
