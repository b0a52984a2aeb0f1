import { createHmac, timingSafeEqual } from 'node:crypto';
import type { LoggerService } from '@backstage/backend-plugin-api';
import { AuthenticationError, InputError } from '@backstage/errors';
import { type PlanProgress, TERMINAL_PHASES } from '@kpromo/plugin-promotions-common';
import createClient, { type Client } from 'openapi-fetch';
import { z } from 'zod';
import type { PromotionsConfig } from './config.js';
import type { paths } from './generated/port.js';
import type { PromotionsService } from './service.js';

export type PortActionsApi = Client<paths>;
type RunPatch = NonNullable<paths['/v1/actions/runs/{run_id}']['patch']['requestBody']>['content']['application/json'];
type RunLog = paths['/v1/actions/runs/{run_id}/logs']['post']['requestBody']['content']['application/json'];

/**
 * Verifies Port's webhook signature: `x-port-signature: v1,<base64 HMAC-SHA256("<timestamp>.<raw
 * body>", clientSecret)>` and `x-port-timestamp` (ms or s since epoch) no older/newer than maxAge.
 */
export function verifyPortSignature(
  o: { secret: string; maxAgeSeconds: number; now?: number },
  headers: { signature?: string; timestamp?: string },
  rawBody: Buffer,
): void {
  const { signature, timestamp } = headers;
  if (!signature || !timestamp) throw new AuthenticationError('missing x-port-signature or x-port-timestamp');
  const ts = Number(timestamp);
  if (!Number.isFinite(ts)) throw new AuthenticationError('invalid x-port-timestamp');
  const ms = ts < 1e12 ? ts * 1000 : ts;
  if (Math.abs((o.now ?? Date.now()) - ms) > o.maxAgeSeconds * 1000)
    throw new AuthenticationError('stale x-port-timestamp');
  const expected = createHmac('sha256', o.secret).update(`${timestamp}.`).update(rawBody).digest();
  const ok = signature
    .split(' ')
    .map((s) => /^v1,(.+)$/.exec(s.trim())?.[1])
    .some((b64) => {
      if (!b64) return false;
      const got = Buffer.from(b64, 'base64');
      return got.length === expected.length && timingSafeEqual(got, expected);
    });
  if (!ok) throw new AuthenticationError('invalid x-port-signature');
}

/** The webhook body the Port action definitions in examples/port/ send. */
export const PortWebhookBody = z.object({
  runId: z.string().min(1),
  action: z.string().min(1),
  user: z.string().optional(),
  inputs: z
    .object({
      namespace: z.string().optional(),
      from: z.string().optional(),
      to: z.string().optional(),
      flow: z.string().optional(),
      applications: z.union([z.string(), z.array(z.string())]).optional(),
      plan: z.string().optional(),
      name: z.string().optional(),
    })
    .default({}),
});
export type PortWebhookBody = z.infer<typeof PortWebhookBody>;

/** Typed Port client (types generated from Port's spec) with client-credentials token handling. */
export function createPortActionsClient(o: { baseUrl: string; clientId: string; clientSecret: string }) {
  let token: { value: string; until: number } | undefined;
  const raw = createClient<paths>({ baseUrl: o.baseUrl });
  const api = createClient<paths>({ baseUrl: o.baseUrl });
  api.use({
    async onRequest({ request }) {
      if (!token || Date.now() > token.until) {
        const { data, response } = await raw.POST('/v1/auth/access_token', {
          body: { clientId: o.clientId, clientSecret: o.clientSecret },
        });
        if (!data) throw new Error(`Port token request failed: HTTP ${response.status}`);
        token = { value: data.accessToken, until: Date.now() + Math.max(data.expiresIn - 60, 1) * 1000 };
      }
      request.headers.set('authorization', `Bearer ${token.value}`);
      return request;
    },
  });
  return api;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs one Port action run: promote (create + approve a plan from the inputs, or approve the named
 * plan) or rollback, follows the plan until it is terminal and reports logs and the final status.
 */
export class PortRunner {
  constructor(
    private readonly svc: PromotionsService,
    private readonly cfg: NonNullable<PromotionsConfig['port']>,
    private readonly api: PortActionsApi,
    private readonly logger: LoggerService,
  ) {}

  private async log(runId: string, body: RunLog) {
    const { error, response } = await this.api.POST('/v1/actions/runs/{run_id}/logs', {
      params: { path: { run_id: runId } },
      body,
    });
    if (error) this.logger.warn(`Port run ${runId}: log failed (${response.status})`);
  }

  private async patch(runId: string, body: RunPatch) {
    const { error, response } = await this.api.PATCH('/v1/actions/runs/{run_id}', {
      params: { path: { run_id: runId }, query: { version: 'v2' } },
      body,
    });
    if (error) this.logger.warn(`Port run ${runId}: update failed (${response.status})`);
  }

  /** Checks the request and returns the work to run in the background (the webhook answers 202 first). */
  prepare(rawBody: Buffer, headers: { signature?: string; timestamp?: string }): () => Promise<void> {
    verifyPortSignature(
      { secret: this.cfg.clientSecret, maxAgeSeconds: this.cfg.maxSignatureAgeSeconds },
      headers,
      rawBody,
    );
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawBody.toString('utf8'));
    } catch {
      throw new InputError('body is not JSON');
    }
    const r = PortWebhookBody.safeParse(parsed);
    if (!r.success)
      throw new InputError(
        `invalid Port webhook body: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      );
    const b = r.data;
    if (!/promote|rollback/.test(b.action)) throw new InputError(`unsupported Port action ${b.action}`);
    return () => this.run(b);
  }

  /**
   * The run acts as `port:<email of the run's trigger user>`: the verified signature vouches for the
   * body, so the controller is asked to act as that identity (x-kpromo-user, no groups) and Kubernetes
   * RBAC for it decides; the plan records it as requestedBy and approver.
   */
  async run(b: PortWebhookBody): Promise<void> {
    const caller = { kind: 'system' as const, identity: `port:${b.user ?? 'unknown'}` };
    const i = b.inputs;
    try {
      if (!b.user) throw new InputError('the Port run names no trigger user (body.user); nobody to act as');
      let ns: string;
      let name: string;
      if (b.action.includes('rollback')) {
        if (!i.namespace || !i.plan) throw new InputError('rollback needs inputs.namespace and inputs.plan');
        const r = await this.svc.rollback(
          caller,
          { namespace: i.namespace, name: i.plan },
          { approve: true, ...(i.name ? { name: i.name } : {}) },
        );
        ns = i.namespace;
        name = r.plan.metadata.name;
        await this.log(b.runId, { message: `Rollback plan ${ns}/${name} created and approved by ${caller.identity}` });
      } else if (i.plan) {
        if (!i.namespace) throw new InputError('promote of a plan needs inputs.namespace');
        await this.svc.approve(caller, { namespace: i.namespace, name: i.plan });
        ns = i.namespace;
        name = i.plan;
        await this.log(b.runId, { message: `Plan ${ns}/${name} approved by ${caller.identity}` });
      } else {
        const r = await this.svc.createPlan(caller, {
          namespace: i.namespace,
          flow: i.flow,
          from: i.from,
          to: i.to,
          applications: i.applications,
          name: i.name,
          approve: true,
        });
        ns = r.plan.metadata.namespace ?? '';
        name = r.plan.metadata.name;
        await this.log(b.runId, {
          message: `Plan ${ns}/${name} created and approved: ${r.plan.spec.candidates.map((c) => `${c.application} ${c.from.tag}`).join(', ')}`,
        });
      }
      await this.patch(b.runId, { statusLabel: `Promoting (${ns}/${name})`, externalRunId: `${ns}/${name}` });
      const p = await this.follow(b.runId, caller, ns, name);
      // A rollback plan that restored every application ends in RolledBack.
      const success = p.phase === (p.action === 'rollback' ? 'RolledBack' : 'Complete');
      await this.log(b.runId, {
        message: `Plan ${ns}/${name} finished: ${p.phase} (${p.succeeded} succeeded, ${p.failed} failed)`,
        terminationStatus: success ? 'SUCCESS' : 'FAILURE',
        statusLabel: p.phase,
      });
      await this.patch(b.runId, {
        status: success ? 'SUCCESS' : 'FAILURE',
        statusLabel: p.phase,
        summary: p.apps.map((a) => `${a.application}: ${a.phase}${a.message ? ` (${a.message})` : ''}`).join('\n'),
      });
    } catch (e) {
      const msg = (e as Error).message;
      this.logger.warn(`Port run ${b.runId} failed: ${msg}`);
      await this.log(b.runId, { message: `Failed: ${msg}`, terminationStatus: 'FAILURE', statusLabel: 'Failed' }).catch(
        () => undefined,
      );
      await this.patch(b.runId, { status: 'FAILURE', statusLabel: 'Failed', summary: msg }).catch(() => undefined);
    }
  }

  private async follow(
    runId: string,
    caller: { kind: 'system'; identity: string },
    ns: string,
    name: string,
  ): Promise<PlanProgress> {
    const deadline = Date.now() + this.cfg.waitTimeoutSeconds * 1000;
    const reported = new Map<string, string>();
    let hold = '';
    for (;;) {
      const { progress } = await this.svc.getPlan(caller, { namespace: ns, name });
      // Why a plan that has not started waits: approvals, a freeze window, soak time.
      const why =
        progress.phase !== 'Pending'
          ? ''
          : !progress.approved
            ? progress.waitingFor
              ? `waiting for approval: ${progress.waitingFor}`
              : ''
            : progress.frozen && !progress.frozen.overriddenBy
              ? `${progress.to} is frozen (${progress.frozen.window}${progress.frozen.reason ? `: ${progress.frozen.reason}` : ''})${progress.frozen.until ? ` until ${progress.frozen.until}` : ''}`
              : progress.eligibleAt
                ? `soaking in ${progress.from} until ${progress.eligibleAt}`
                : '';
      if (why && why !== hold) await this.log(runId, { message: `Plan ${ns}/${name}: ${why}` });
      hold = why;
      for (const a of progress.apps)
        if (reported.get(a.application) !== a.phase) {
          reported.set(a.application, a.phase);
          if (a.phase !== 'Waiting')
            await this.log(runId, { message: `${a.application}: ${a.phase}${a.message ? ` - ${a.message}` : ''}` });
        }
      if ((TERMINAL_PHASES as readonly string[]).includes(progress.phase)) return progress;
      if (Date.now() > deadline)
        throw new Error(
          `plan ${ns}/${name} not finished after ${this.cfg.waitTimeoutSeconds}s (phase ${progress.phase})`,
        );
      await sleep(this.cfg.pollIntervalMs);
    }
  }
}
