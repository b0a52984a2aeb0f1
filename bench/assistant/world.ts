/**
 * The fixed world the assistant evaluation's tasks are written against: namespace `shop`, the
 * pipeline dev → stable → prod, five Applications of two teams, three plans (two finished, one
 * waiting for approval) and one LineStop, served by the controller's real MCP server over Streamable
 * HTTP (an in-memory cache instead of clusters, as controller/bench/mcp.ts does). Read tools answer
 * from it; tools that change something are never run (the assistant parks them for the user's
 * confirmation, which the evaluation never gives), so no control cluster is needed.
 *
 * App and team names differ from those of the few-shot examples (test/llm/assistantConfig.ts), so a
 * call copied from an example scores as wrong.
 */
import { createHash } from 'node:crypto';
import type { LineStop, PromotionPlan } from '@kpromo/api';
import { app, deployment, env, flow } from '@kpromo/test-harness/objects';
import { Access } from '../../controller/src/api/access.js';
import type { ApiContext } from '../../controller/src/api/context.js';
import type { Caller } from '../../controller/src/auth/identity.js';
import { MemoryCache } from '../../controller/src/kube/memoryCache.js';
import { McpConfigSchema } from '../../controller/src/mcp/config.js';
import { startMcpHttp } from '../../controller/src/mcp/http.js';
import { createLogger } from '../../controller/src/observability/logger.js';
import { FakeKube } from '../../controller/test/support/fakeKube.js';
import { ENVIRONMENTS, LINE_STOP, NAMESPACE, PLANS } from './names.js';

/** Versions running per app: dev, stable, prod. */
const VERSIONS: Record<string, { team: string; tags: [string, string, string] }> = {
  cart: { team: 'team-shop', tags: ['v1.4.0', 'v1.3.0', 'v1.2.5'] },
  checkout: { team: 'team-shop', tags: ['v2.3.0', 'v2.3.0', 'v2.2.0'] },
  catalog: { team: 'team-shop', tags: ['v0.9.2', 'v0.9.1', 'v0.9.1'] },
  payments: { team: 'team-pay', tags: ['v3.1.0', 'v3.0.2', 'v3.0.2'] },
  invoices: { team: 'team-pay', tags: ['v1.0.3', 'v1.0.3', 'v1.0.1'] },
};

const digestOf = (app: string, tag: string) => `sha256:${createHash('sha256').update(`${app}:${tag}`).digest('hex')}`;
const inShop = <T extends { metadata: { namespace?: string } }>(o: T): T => ({
  ...o,
  metadata: { ...o.metadata, namespace: NAMESPACE },
});

function finishedPlan(
  p: { name: string; uid: string },
  from: string,
  to: string,
  apps: Array<[string, string, string]>,
  at: string,
): PromotionPlan {
  return {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name: p.name, namespace: NAMESPACE, uid: p.uid, creationTimestamp: at },
    spec: {
      flow: 'main',
      from,
      to,
      candidates: apps.map(([a, , tag]) => ({ application: a, from: { tag, digest: digestOf(a, tag) } })),
      approvals: [{ user: 'alice' }],
      requestedBy: 'alice',
    },
    status: {
      phase: 'Complete',
      completedAt: at,
      apps: apps.map(([a, prev, tag]) => ({
        application: a,
        phase: 'Succeeded',
        targetTag: tag,
        digest: digestOf(a, tag),
        previous: { tag: prev, digest: digestOf(a, prev) },
        startedAt: new Date(Date.parse(at) - 300_000).toISOString(),
        finishedAt: at,
      })),
    },
  } as PromotionPlan;
}

/** The world's cache: what the controller's informers would show. */
export function worldCache(): MemoryCache {
  const cache = new MemoryCache();
  cache.envs = ENVIRONMENTS.map((e) => inShop(env(e)));
  cache.flowList = [inShop(flow([...ENVIRONMENTS]))];
  for (const [name, v] of Object.entries(VERSIONS)) {
    cache.apps.push(inShop(app(name, { owner: v.team }, { tier: name === 'invoices' ? 'batch' : 'web' })));
    ENVIRONMENTS.forEach((e, i) => {
      // checkout's new pods in prod are not all ready: the one app that is not Healthy.
      const ready = !(name === 'checkout' && e === 'prod');
      const tag = v.tags[i];
      cache.workloads.set(
        `${e}/Deployment/${name}`,
        deployment(name, `reg-${e}.local:5000/shop/${name}:${tag}@${digestOf(name, tag)}`, ready),
      );
    });
  }
  cache.planList = [
    finishedPlan(
      PLANS.lastProd,
      'stable',
      'prod',
      [
        ['checkout', 'v2.1.0', 'v2.2.0'],
        ['cart', 'v1.2.4', 'v1.2.5'],
      ],
      '2026-12-03T10:00:00Z',
    ),
    finishedPlan(PLANS.lastStable, 'dev', 'stable', [['payments', 'v3.0.1', 'v3.0.2']], '2026-12-04T09:00:00Z'),
    {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'PromotionPlan',
      metadata: { name: PLANS.waiting.name, namespace: NAMESPACE, uid: PLANS.waiting.uid },
      spec: {
        flow: 'main',
        from: 'stable',
        to: 'prod',
        candidates: [{ application: 'cart', from: { tag: 'v1.3.0', digest: digestOf('cart', 'v1.3.0') } }],
        requestedBy: 'bob',
      },
      status: { phase: 'Pending' },
    } as PromotionPlan,
  ];
  cache.lineStopList = [
    {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'LineStop',
      metadata: { name: LINE_STOP, namespace: NAMESPACE, creationTimestamp: '2026-12-05T08:00:00Z' },
      spec: { reason: 'database migration of payments in prod', stoppedBy: 'carol', environments: ['prod'] },
    } as LineStop,
  ];
  return cache;
}

export interface WorldServer {
  mcpUrl: string;
  token: string;
  close(): Promise<void>;
}

/**
 * The controller's MCP server (write mode, so the write tools are listed) over the world, with one
 * static token (the backend's) and an authoriser that allows everything: RBAC is not what is measured.
 */
export async function startWorld(): Promise<WorldServer> {
  const token = 'assistant-eval-0123456789abcdef';
  const caller: Caller = { username: 'portal-backend', groups: [], source: 'static' };
  const allow = { check: async () => ({ allowed: true, reason: 'assistant evaluation' }) };
  const ctx: ApiContext = {
    cache: worldCache(),
    // The history log (ConfigMaps) is empty: the history is the cached plans'.
    control: new FakeKube('control').rest,
    access: new Access(allow),
    namespace: NAMESPACE,
  };
  const http = await startMcpHttp(ctx, McpConfigSchema.parse({ enabled: true, port: 0, write: true }), {
    log: createLogger({ level: 'silent' }),
    auth: {
      authorizer: allow,
      authenticator: {
        authenticate: async (t: string) => {
          if (t !== token) throw new Error('assistant evaluation: unknown token');
          return caller;
        },
      },
    },
  });
  return { mcpUrl: http.url, token, close: () => http.close() };
}
