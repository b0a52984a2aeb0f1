import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { DatabaseService, LoggerService } from '@backstage/backend-plugin-api';
import {
  AuthenticationError,
  ConflictError,
  InputError,
  NotAllowedError,
  ServiceUnavailableError,
} from '@backstage/errors';
import {
  continuedWave,
  httpLink,
  isTerminalPlan,
  namespaceProblem,
  noCandidatesMessage,
  nothingToAdoptMessage,
  type PlanProgress,
  pullRequestText,
  soakRestartText,
  stepText,
  TERMINAL_WAVE_PHASES,
} from '@kpromo/plugin-promotions-common';
import type { PromotionsCaller as Caller, PromotionsOperations } from '@kpromo/plugin-promotions-node';
import { createPortClient, type PortApi, type paths, portMessage } from '@kpromo/port-client';
import { z } from 'zod';
import type { PortConfig, PortResourceAction } from './config.js';

export type PortActionsApi = PortApi;
type RunPatch = NonNullable<paths['/v1/actions/runs/{run_id}']['patch']['requestBody']>['content']['application/json'];
type RunLog = paths['/v1/actions/runs/{run_id}/logs']['post']['requestBody']['content']['application/json'];

/**
 * Verifies Port's webhook signature: `x-port-signature: v1,<base64 HMAC-SHA256("<timestamp>.<raw
 * body>", clientSecret)>` and `x-port-timestamp` (ms or s since epoch) no older/newer than maxAge.
 * Returns the timestamp in ms.
 */
export function verifyPortSignature(
  o: { secret: string; maxAgeSeconds: number; now?: number },
  headers: { signature?: string; timestamp?: string },
  rawBody: Buffer,
): number {
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
  return ms;
}

/**
 * Replay protection for verified Port deliveries: `admit` remembers a run id (with a digest of its
 * signature, never the signature itself) for as long as a delivery signed with that timestamp could
 * still pass {@link verifyPortSignature}, and refuses a run id it remembers (409), or a delivery
 * that would need more than `maxRecentRuns` entries (503).
 */
export interface PortReplayGuard {
  admit(runId: string, signature: string, timestampMs: number): Promise<void> | void;
}

const digestOf = (signature: string) => createHash('sha256').update(signature).digest('base64url');
const alreadyDelivered = (runId: string, sameSignature: boolean) =>
  new ConflictError(
    sameSignature
      ? `Port run ${runId} was already delivered: replayed delivery refused`
      : `Port run ${runId} was already delivered (with another signature): a second delivery of a run is refused`,
  );
const tooMany = (windowMs: number, max: number) =>
  new ServiceUnavailableError(
    `too many Port runs within ${windowMs / 1000}s (promotions.port.maxRecentRuns: ${max}); retry later`,
  );

/** The knex client of Backstage's DatabaseService (`coreServices.database`). */
export type PortReplayDb = Awaited<ReturnType<DatabaseService['getClient']>>;

/** Table of the run ids Port deliveries used (the plugin's own database). */
export const PORT_RUNS_TABLE = 'kpromo_port_runs';

/**
 * The replay guard shared by every replica of the backend: run ids live in the plugin's database
 * (Backstage's `coreServices.database`), in {@link PORT_RUNS_TABLE} with `run_id` as primary key.
 * Admitting a run is an insert: the database lets exactly one insert of a run id succeed, so when
 * two replicas receive the same signed run, one acts and the other answers 409. Expired rows (a
 * delivery with their timestamp would no longer verify) are deleted before each admission, and an
 * expired row left for the same run id is replaced (by one replica: the delete names its expiry).
 * At most `maxEntries` live rows: beyond, 503 (a count, so concurrent deliveries on several
 * replicas may pass it by a few).
 */
export class DatabaseReplayGuard implements PortReplayGuard {
  private constructor(
    private readonly db: PortReplayDb,
    private readonly windowMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number,
  ) {}

  /** Creates the table unless it exists (two replicas starting at once: the loser finds it made). */
  static async create(
    db: PortReplayDb,
    o: { windowMs: number; maxEntries: number; now?: () => number; skipMigrations?: boolean },
  ): Promise<DatabaseReplayGuard> {
    if (!o.skipMigrations && !(await db.schema.hasTable(PORT_RUNS_TABLE))) {
      try {
        await db.schema.createTable(PORT_RUNS_TABLE, (t) => {
          t.string('run_id', 255).primary().notNullable();
          t.string('signature_digest', 64).notNullable();
          t.bigInteger('expires_at').notNullable().index();
        });
      } catch (e) {
        if (!(await db.schema.hasTable(PORT_RUNS_TABLE))) throw e;
      }
    }
    return new DatabaseReplayGuard(db, o.windowMs, o.maxEntries, o.now ?? Date.now);
  }

  /** Live rows (tests, diagnostics). */
  async size(): Promise<number> {
    const [row] = await this.db(PORT_RUNS_TABLE).where('expires_at', '>=', this.now()).count({ n: '*' });
    return Number((row as { n: number | string }).n);
  }

  async admit(runId: string, signature: string, timestampMs: number): Promise<void> {
    const now = this.now();
    const digest = digestOf(signature);
    const row = { run_id: runId, signature_digest: digest, expires_at: Math.max(timestampMs, now) + this.windowMs };
    try {
      await this.db(PORT_RUNS_TABLE).where('expires_at', '<', now).delete();
      if ((await this.size()) >= this.maxEntries) throw tooMany(this.windowMs, this.maxEntries);
    } catch (e) {
      if ((e as Error).name === 'ServiceUnavailableError') throw e;
      throw new ServiceUnavailableError(`Port replay guard unavailable (database): ${(e as Error).message}`);
    }
    for (let attempt = 0; ; attempt++) {
      try {
        await this.db(PORT_RUNS_TABLE).insert(row);
        return;
      } catch (insertError) {
        // Unique key taken (or the database failed): which one the row tells, whatever the driver's error.
        const prev = (await this.db(PORT_RUNS_TABLE)
          .where({ run_id: runId })
          .first()
          .catch(() => undefined)) as { signature_digest: string; expires_at: number | string } | undefined;
        if (!prev) {
          if (attempt < 1) continue; // deleted since (expired): insert again
          throw new ServiceUnavailableError(
            `Port replay guard unavailable (database): ${(insertError as Error).message}`,
          );
        }
        if (Number(prev.expires_at) >= now) throw alreadyDelivered(runId, prev.signature_digest === digest);
        // An expired row of the same run id: replace it, once (only one replica's delete matches it).
        if (attempt >= 1) throw alreadyDelivered(runId, prev.signature_digest === digest);
        await this.db(PORT_RUNS_TABLE).where({ run_id: runId, expires_at: prev.expires_at }).delete();
      }
    }
  }
}

/**
 * In-memory replay guard of one process (tests, and a backend without a database): remembers each
 * accepted run id for as long as a delivery signed with that timestamp could still pass
 * {@link verifyPortSignature} (`max(timestamp, now) + window`). A run id seen within that time is
 * refused (409); older entries are evicted. At most `maxEntries` are kept: a delivery that would
 * need more is refused (503) instead of growing the map. Only deliveries with a valid signature get
 * here, so filling it takes the signing secret. Per process: replicas do not share it (the plugin
 * uses {@link DatabaseReplayGuard}).
 */
export class ReplayGuard implements PortReplayGuard {
  private readonly seen = new Map<string, { until: number; signature: string }>();

  constructor(
    private readonly windowMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.seen.size;
  }

  admit(runId: string, signature: string, timestampMs: number): void {
    const now = this.now();
    this.evict(now, false);
    const digest = digestOf(signature);
    const prev = this.seen.get(runId);
    if (prev && prev.until >= now) throw alreadyDelivered(runId, prev.signature === digest);
    if (prev) this.seen.delete(runId);
    if (this.seen.size >= this.maxEntries) {
      this.evict(now, true);
      if (this.seen.size >= this.maxEntries) throw tooMany(this.windowMs, this.maxEntries);
    }
    this.seen.set(runId, { until: Math.max(timestampMs, now) + this.windowMs, signature: digest });
  }

  /** Drops expired entries: from the oldest until a live one (cheap), or all of them (`full`). */
  private evict(now: number, full: boolean) {
    for (const [k, v] of this.seen) {
      if (v.until < now) this.seen.delete(k);
      else if (!full) break;
    }
  }
}

/**
 * The digests a promote run says its user reviewed (`inputs.expect`): an object, or the JSON text
 * of one as a Port text input holds it. Undefined (absent, null, empty string or object): the run
 * previews the candidates instead of promoting. Anything else is passed on for the contract to judge.
 */
export function shownDigests(v: unknown): unknown {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') {
    if (!v.trim()) return undefined;
    try {
      return shownDigests(JSON.parse(v));
    } catch {
      throw new InputError(
        'inputs.expect is not JSON: send the object the preview run printed, {"<application>": "sha256:..."}',
      );
    }
  }
  if (typeof v === 'object' && !Array.isArray(v) && !Object.keys(v).length) return undefined;
  return v;
}

/** A message as the first words of a sentence (Port's run summary). */
const capitalized = (m: string) => `${m.charAt(0).toUpperCase()}${m.slice(1)}`;

/** WHATWG "valid e-mail address" (no spaces, commas, colons, quotes or control characters). */
const EMAIL =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** A value from the request, safe to put in a message or log line (quoted, escaped, bounded). */
const show = (v: string) => JSON.stringify(v.length > 100 ? `${v.slice(0, 100)}…` : v);

/**
 * The identity a Port run acts as: `template` (`promotions.port.identity`, default `port:{email}`)
 * with `{email}` = the run's trigger user, which must be an e-mail address; the result must be a
 * valid x-kpromo-user (no comma or control character, at most 253 characters).
 */
export function portIdentity(template: string, email: string | undefined): string {
  if (!email) throw new InputError('the Port run names no trigger user (body.user); nobody to act as');
  if (email.length > 254 || !EMAIL.test(email))
    throw new InputError(`the Port run's trigger user ${show(email)} is not an e-mail address; nobody to act as`);
  const identity = template.replace('{email}', email);
  if (identity.length > 253 || /[,\p{Cc}]/u.test(identity))
    throw new InputError(`identity ${show(identity)} is not a valid x-kpromo-user`);
  return identity;
}

/** The webhook body the Port action definitions in examples/port/ send. */
export const PortWebhookBody = z.object({
  // Signed by Port; still bounded and free of control characters, as it ends up in log lines and URLs.
  runId: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[^\p{Cc}]+$/u, 'control characters'),
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
      /** Why the line stops (stopLine); bounded like every other input, checked again by the controller. */
      reason: z.string().max(1024).optional(),
      /** adopt: the owning team where no workload label names one (checked by the contract's AdoptBody). */
      owner: z.string().optional(),
      /** promote, rollback or continue of a plan: the metadata.uid of the plan entity the user ran it on (required by the contract). */
      uid: z.string().optional(),
      /**
       * promote of a plan, in an emergency: approve with overrideFreeze so it runs despite a freeze
       * window or a stopped line, for this reason (as the CLI's --override-reason and MCP's
       * overrideReason). Checked by the contract's ApproveBody (at least a sentence) and at the
       * controller (the override-freeze verb); empty: an ordinary approval.
       */
      overrideReason: z
        .string()
        .nullish()
        .transform((v) => v?.trim() || undefined)
        .optional(),
      /** continue: the wave to let start (default: the wave that is Waiting; checked by the contract's ContinueBody). */
      wave: z
        .string()
        .nullish()
        .transform((v) => v || undefined)
        .optional(),
      /**
       * promote from filters: per application, the digest the user reviewed, as the preview run
       * listed it (an object, or its JSON text). Absent, null, empty: the run is that preview and
       * promotes nothing. Present: the plan is created and approved only if the candidates are
       * exactly these (checked by the contract and the controller).
       */
      expect: z.unknown().optional(),
    })
    .default({}),
  /**
   * The object a resource action (`create_/update_/delete_<blueprint>`) writes, as the action
   * definitions the exporter makes for discovered CRDs send it. Its kind is never taken from here:
   * it comes from `promotions.port.resourceActions` for the action identifier. Values are the
   * Port user's inputs (or the entity's properties) and are checked like any request body.
   */
  resource: z
    .object({
      name: z.string().nullish(),
      namespace: z.string().nullish(),
      cluster: z.string().nullish(),
      spec: z.unknown().optional(),
    })
    .optional(),
});
export type PortWebhookBody = z.infer<typeof PortWebhookBody>;

/**
 * The typed Port client (@kpromo/port-client): client-credentials token refreshed before expiry and
 * once on a 401, retries with backoff on 429 (Retry-After, x-ratelimit-reset), 5xx and network errors.
 */
export function createPortActionsClient(o: {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
}): PortActionsApi {
  return createPortClient({
    baseUrl: o.baseUrl,
    clientId: o.clientId,
    clientSecret: o.clientSecret,
    userAgent: 'kpromo-backstage-backend',
  }).api;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs one Port action run: promote (from the inputs, in two runs: without `inputs.expect` a
 * preview listing the candidates and their digests, with it create + approve a plan of exactly
 * those; or approve the named plan) or rollback, follows the plan until it is terminal and reports
 * logs and the final status.
 *
 * Before anything runs: the signature and its timestamp (401), the body (400), the exact action
 * identifier (`promotions.port.actions`, 400), replays (409; 503 when too many runs are remembered).
 * Then, before any controller call, the run's namespace (`promotions.port.namespaces`) and identity
 * (`promotions.port.identity`) are checked; a refusal there is reported to Port as a FAILED run.
 */
export class PortRunner {
  private readonly replays: PortReplayGuard;

  /**
   * @param replays where run ids are remembered: the plugin passes a {@link DatabaseReplayGuard}
   *   (shared by all replicas); default: an in-memory {@link ReplayGuard} of this process.
   */
  constructor(
    private readonly svc: PromotionsOperations,
    private readonly cfg: PortConfig,
    private readonly api: PortActionsApi,
    private readonly logger: LoggerService,
    private readonly now: () => number = Date.now,
    replays?: PortReplayGuard,
  ) {
    this.replays = replays ?? new ReplayGuard(cfg.maxSignatureAgeSeconds * 1000, cfg.maxRecentRuns, now);
  }

  /** Run ids remembered against replays by an in-memory guard (undefined with a database guard). */
  get rememberedRuns(): number | undefined {
    return this.replays instanceof ReplayGuard ? this.replays.size : undefined;
  }

  /**
   * Namespaces runs may act in: `promotions.port.namespaces`, else `controller.defaultNamespace`;
   * undefined when neither is set (then only the controller's own default, by naming none).
   */
  get namespaces(): string[] | undefined {
    const d = this.svc.defaultNamespace;
    return this.cfg.namespaces ?? (d ? [d] : undefined);
  }

  private async log(runId: string, body: RunLog) {
    const { error, response } = await this.api.POST('/v1/actions/runs/{run_id}/logs', {
      params: { path: { run_id: runId } },
      body,
    });
    if (error) this.logger.warn(`Port run ${runId}: log failed (${response.status}: ${portMessage(error)})`);
  }

  private async patch(runId: string, body: RunPatch) {
    const { error, response } = await this.api.PATCH('/v1/actions/runs/{run_id}', {
      params: { path: { run_id: runId }, query: { version: 'v2' } },
      body,
    });
    if (error) this.logger.warn(`Port run ${runId}: update failed (${response.status}: ${portMessage(error)})`);
  }

  /** Checks the request and returns the work to run in the background (the webhook answers 202 first). */
  async prepare(rawBody: Buffer, headers: { signature?: string; timestamp?: string }): Promise<() => Promise<void>> {
    const timestampMs = verifyPortSignature(
      { secret: this.cfg.clientSecret, maxAgeSeconds: this.cfg.maxSignatureAgeSeconds, now: this.now() },
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
    // The namespace check of every door: a run naming something else is refused here (400), before
    // anything runs. Absent or empty: the default namespace.
    for (const [field, ns] of [
      ['inputs.namespace', b.inputs.namespace],
      ['resource.namespace', b.resource?.namespace],
    ] as const) {
      const problem = ns ? namespaceProblem(ns, field) : undefined;
      if (problem) throw new InputError(`invalid Port webhook body: ${problem}`);
    }
    const { promote, rollback, stopLine, resumeLine, adopt } = this.cfg.actions;
    const line = b.action === stopLine ? 'stop' : b.action === resumeLine ? 'resume' : undefined;
    const kind =
      b.action === promote
        ? 'promote'
        : b.action === rollback
          ? 'rollback'
          : b.action === this.cfg.actions.continue
            ? 'continue'
            : undefined;
    const resource = kind ? undefined : this.cfg.resourceActions.find((x) => Object.hasOwn(x.actions, b.action));
    const adopting = b.action === adopt;
    if (!kind && !resource && !line && !adopting)
      throw new InputError(
        `unsupported Port action ${show(b.action)}: expected ${promote}, ${rollback}, ${this.cfg.actions.continue}, ${stopLine}, ${resumeLine} or ${adopt} (promotions.port.actions)${
          this.cfg.resourceActions.length
            ? ` or one of ${this.cfg.resourceActions.flatMap((x) => Object.keys(x.actions)).join(', ')} (promotions.port.resourceActions)`
            : ''
        }`,
      );
    try {
      // verifyPortSignature has checked both headers are present.
      await this.replays.admit(b.runId, headers.signature ?? '', timestampMs);
    } catch (e) {
      this.logger.warn(`Port run ${b.runId}: delivery refused: ${(e as Error).message}`);
      throw e;
    }
    if (line) return () => this.runLine(b, line);
    if (adopting) return () => this.runAdopt(b);
    return resource ? () => this.runResource(b, resource) : () => this.run(b, kind ?? 'promote');
  }

  /** The namespace a run acts in (undefined: the controller's default), or why it may not. */
  private namespaceFor(named: string | undefined): string | undefined {
    const allowed = this.namespaces;
    const ns = named || this.svc.defaultNamespace;
    if (!allowed) {
      if (ns)
        throw new NotAllowedError(
          `namespace ${show(ns)} is not open to Port runs: promotions.port.namespaces is unset and so is promotions.controller.defaultNamespace (runs may only name no namespace)`,
        );
      return undefined;
    }
    if (!ns) throw new InputError('the run names no namespace (inputs.namespace)');
    if (!allowed.includes(ns))
      throw new NotAllowedError(
        `namespace ${show(ns)} is not open to Port runs (promotions.port.namespaces: ${allowed.join(', ') || 'none'})`,
      );
    return ns;
  }

  /**
   * The run acts as `promotions.port.identity` for the run's trigger user (default
   * `port:<email>`): the verified signature vouches for the body, so every controller call names
   * that identity in x-kpromo-user (no groups) and the controller's authorisation (Kubernetes RBAC
   * for that identity, and impersonation of it by the backend's token user) decides, as for every
   * other caller. The plan records it as requestedBy and approver.
   */
  private async run(b: PortWebhookBody, kind: 'promote' | 'rollback' | 'continue'): Promise<void> {
    const i = b.inputs;
    try {
      // Both checks come before any controller call.
      const caller: Caller = { kind: 'port', identity: portIdentity(this.cfg.identity, b.user) };
      const namespace = this.namespaceFor(i.namespace);
      this.logger.info(`Port run ${b.runId}: ${b.action} as ${caller.identity}`);
      let ns: string;
      let name: string;
      /** continue: the wave let start; the run follows it, not the whole plan (a later wave may pause again). */
      let wave: string | undefined;
      if (kind === 'rollback') {
        if (!namespace || !i.plan) throw new InputError('rollback needs inputs.plan and a namespace');
        // The plan the user ran the action on (its entity's uid), never whatever holds the name now.
        const r = await this.svc.rollback(
          caller,
          { namespace, name: i.plan },
          { approve: true, uid: i.uid, ...(i.name ? { name: i.name } : {}) },
        );
        ns = namespace;
        name = r.plan.metadata.name;
        await this.log(b.runId, { message: `Rollback plan ${ns}/${name} created and approved by ${caller.identity}` });
      } else if (kind === 'continue') {
        if (!namespace || !i.plan) throw new InputError('continue needs inputs.plan and a namespace');
        // As promote and rollback of a plan: the run binds to the plan entity it was started on.
        if (!i.uid)
          throw new InputError(
            'continue needs inputs.uid: the metadata.uid of the plan entity the run was started on (kpromo_continue.json sends it); nothing was started',
          );
        // The plan the user ran the action on (its entity's uid), never whatever holds the name now.
        const r = await this.svc.continue(caller, { namespace, name: i.plan }, { uid: i.uid, wave: i.wave });
        ns = namespace;
        name = i.plan;
        wave = continuedWave(r.plan, { wave: i.wave, user: caller.identity })?.name;
        await this.log(b.runId, {
          message: `Wave ${wave ?? '?'} of plan ${ns}/${name} continued by ${caller.identity}`,
        });
      } else if (i.plan) {
        if (!namespace) throw new InputError('promote of a plan needs inputs.namespace');
        // The plan the user ran the action on (its entity's uid), never whatever holds the name now.
        const override = i.overrideReason ? { overrideFreeze: true, overrideReason: i.overrideReason } : {};
        await this.svc.approve(caller, { namespace, name: i.plan }, { uid: i.uid, ...override });
        ns = namespace;
        name = i.plan;
        await this.log(b.runId, {
          message: `Plan ${ns}/${name} approved by ${caller.identity}${i.overrideReason ? `, overriding freeze windows and line stops because: ${i.overrideReason}` : ''}`,
        });
      } else {
        const expect = shownDigests(i.expect);
        // Step one: the candidates and their digests, for the person to review; nothing runs.
        if (expect === undefined) return await this.preview(b, caller, namespace);
        const r = await this.svc.createPlan(caller, {
          namespace,
          flow: i.flow,
          from: i.from,
          to: i.to,
          applications: i.applications,
          name: i.name,
          approve: true,
          // Step two: the digests the preview showed; a deploy to `from` since is refused (409), not approved unseen.
          expect,
        });
        ns = r.plan.metadata.namespace ?? '';
        name = r.plan.metadata.name;
        await this.log(b.runId, {
          message: `Plan ${ns}/${name} created and approved: ${r.plan.spec.candidates.map((c) => `${c.application} ${c.from.tag}`).join(', ')}`,
        });
      }
      await this.patch(b.runId, { statusLabel: `Promoting (${ns}/${name})`, externalRunId: `${ns}/${name}` });
      const waveOf = (x: PlanProgress) => x.waves.find((w) => w.name === wave);
      const p = await this.follow(b.runId, caller, ns, name, (x) => TERMINAL_WAVE_PHASES.has(waveOf(x)?.phase ?? ''));
      const w = waveOf(p);
      // A rollback plan that restored every application ends in RolledBack; a continued wave, Succeeded.
      const success = w ? w.phase === 'Succeeded' : p.phase === (p.isRollback ? 'RolledBack' : 'Complete');
      const label = w ? `wave ${w.name} ${w.phase}` : p.phase;
      await this.log(b.runId, {
        message: w
          ? `Wave ${w.name} of plan ${ns}/${name} finished: ${w.phase} (${w.succeeded}/${w.clusters.length} clusters succeeded, ${w.failed} failed)`
          : `Plan ${ns}/${name} finished: ${p.phase} (${p.succeeded} succeeded, ${p.failed} failed)`,
        terminationStatus: success ? 'SUCCESS' : 'FAILURE',
        statusLabel: label,
      });
      await this.patch(b.runId, {
        status: success ? 'SUCCESS' : 'FAILURE',
        statusLabel: label,
        summary: p.apps.map((a) => `${a.application}: ${a.phase}${a.message ? ` (${a.message})` : ''}`).join('\n'),
      });
    } catch (e) {
      await this.fail(b.runId, e);
    }
  }

  /**
   * Step one of a promote from filters (no `inputs.expect`): the candidates `from -> to` as the
   * run's identity may see them (the controller's GET /diff), each with the digest it would
   * promote, logged to the run and summarised with the `expect` to send to promote exactly these.
   * Nothing is created or approved. Step two, the same action with that `expect`, is the one
   * create-and-approve every door makes.
   */
  private async preview(b: PortWebhookBody, caller: Caller, namespace: string | undefined): Promise<void> {
    const i = b.inputs;
    const d = await this.svc.diff(caller, {
      namespace,
      flow: i.flow,
      from: i.from,
      to: i.to,
      applications: i.applications,
    });
    if (!d.candidates.length) {
      const none = `${capitalized(noCandidatesMessage(d.from, d.to, d))}. Nothing was promoted.`;
      await this.log(b.runId, { message: none, terminationStatus: 'SUCCESS', statusLabel: 'Nothing to promote' });
      await this.patch(b.runId, { status: 'SUCCESS', statusLabel: 'Nothing to promote', summary: none });
      return;
    }
    for (const c of d.candidates)
      await this.log(b.runId, {
        message: `${c.application}: ${d.from} runs ${c.from.tag} (${c.from.digest}); ${d.to} runs ${c.to?.tag ?? c.to?.digest ?? 'nothing yet'}`,
      });
    const expect = JSON.stringify(Object.fromEntries(d.candidates.map((c) => [c.application, c.from.digest])));
    const summary = `Preview, nothing promoted: ${d.candidates.length} candidate(s) from ${d.from} to ${d.to} (flow ${d.flow}), listed in this run's logs. To promote exactly these, run ${b.action} again with the same inputs and expect ${expect}; if ${d.from} runs anything else by then, that run promotes nothing.`;
    await this.log(b.runId, { message: summary, terminationStatus: 'SUCCESS', statusLabel: 'Previewed' });
    await this.patch(b.runId, { status: 'SUCCESS', statusLabel: 'Previewed', summary });
  }

  /**
   * Stops the line (a LineStop in the run's namespace, the reason from inputs.reason) or lifts the
   * stop named in inputs.name, as the run's identity: the controller decides RBAC (create or delete
   * on linestops) for it and records it as the one who stopped the line.
   */
  private async runLine(b: PortWebhookBody, what: 'stop' | 'resume'): Promise<void> {
    try {
      const caller: Caller = { kind: 'port', identity: portIdentity(this.cfg.identity, b.user) };
      const namespace = this.namespaceFor(b.inputs.namespace);
      if (!namespace) throw new InputError(`${b.action} needs a namespace (inputs.namespace)`);
      this.logger.info(`Port run ${b.runId}: ${b.action} as ${caller.identity}`);
      let done: string;
      if (what === 'stop') {
        if (!b.inputs.reason?.trim()) throw new InputError(`${b.action} needs inputs.reason: why the line stops`);
        const s = await this.svc.stopLine(caller, {
          namespace,
          reason: b.inputs.reason,
          ...(b.inputs.name ? { name: b.inputs.name } : {}),
        });
        done = `Line stopped in ${s.namespace} (LineStop ${s.name}) by ${s.stoppedBy ?? caller.identity}: ${s.reason}`;
      } else {
        if (!b.inputs.name) throw new InputError(`${b.action} needs inputs.name: the LineStop to lift`);
        const r = await this.svc.liftLine(caller, { namespace, name: b.inputs.name });
        done = `LineStop ${r.lifted} lifted by ${caller.identity}`;
      }
      await this.log(b.runId, { message: done, terminationStatus: 'SUCCESS', statusLabel: 'Done' });
      await this.patch(b.runId, { status: 'SUCCESS', statusLabel: 'Done', summary: done });
    } catch (e) {
      await this.fail(b.runId, e);
    }
  }

  /**
   * Proposes Applications for what runs in a flow's Environments, as the run's identity (the
   * controller requires RBAC create on applications). Nothing is written: the run's logs carry the
   * review notes and the YAML to add to the GitOps repository, its summary what was proposed.
   */
  private async runAdopt(b: PortWebhookBody): Promise<void> {
    try {
      const caller: Caller = { kind: 'port', identity: portIdentity(this.cfg.identity, b.user) };
      const namespace = this.namespaceFor(b.inputs.namespace);
      this.logger.info(`Port run ${b.runId}: ${b.action} as ${caller.identity}`);
      const apps = b.inputs.applications;
      const chosen = (typeof apps === 'string' ? apps.split(',') : (apps ?? [])).map((a) => a.trim()).filter(Boolean);
      const r = await this.svc.proposeAdoption(caller, {
        ...(namespace ? { namespace } : {}),
        ...(b.inputs.flow ? { flow: b.inputs.flow } : {}),
        ...(b.inputs.owner ? { owner: b.inputs.owner } : {}),
        ...(chosen.length ? { applications: chosen } : {}),
      });
      for (const f of r.findings) await this.log(b.runId, { message: `${f.level}: ${f.subject}: ${f.message}` });
      const proposed = r.resources.map((x) => `${x.kind}/${x.name}${x.governed ? ' (governed)' : ''}`);
      if (r.resources.length) await this.log(b.runId, { message: `Proposed resources (YAML):\n${r.yaml}` });
      const summary = r.resources.length
        ? `Proposed for flow ${r.namespace}/${r.flow}: ${proposed.join(', ')}. Nothing was applied: add the YAML in this run's logs to your GitOps repository.`
        : `${capitalized(nothingToAdoptMessage(r))}.`;
      await this.log(b.runId, { message: summary, terminationStatus: 'SUCCESS', statusLabel: 'Proposed' });
      await this.patch(b.runId, { status: 'SUCCESS', statusLabel: 'Proposed', summary });
    } catch (e) {
      await this.fail(b.runId, e);
    }
  }

  /** The run as failed in Port: a log line with the reason, then the FAILURE status. */
  private async fail(runId: string, e: unknown) {
    const msg = (e as Error).message;
    this.logger.warn(`Port run ${runId} failed: ${msg}`);
    await this.log(runId, { message: `Failed: ${msg}`, terminationStatus: 'FAILURE', statusLabel: 'Failed' }).catch(
      () => undefined,
    );
    await this.patch(runId, { status: 'FAILURE', statusLabel: 'Failed', summary: msg }).catch(() => undefined);
  }

  /**
   * A resource action: creates, updates (merges `spec`) or deletes one custom resource through the
   * controller, as the run's identity. The kind is the configured one for the action identifier;
   * from the body come only name, namespace (`promotions.port.namespaces` applies), the cluster the
   * entity was exported from (must be `promotions.port.cluster`) and `spec` (create and update).
   * The controller refuses kinds outside its `resourceKinds` and decides RBAC as the identity.
   */
  private async runResource(b: PortWebhookBody, r: PortResourceAction): Promise<void> {
    const operation = r.actions[b.action];
    try {
      const caller: Caller = { kind: 'port', identity: portIdentity(this.cfg.identity, b.user) };
      const res = b.resource;
      if (!res?.name) throw new InputError(`${b.action} needs the object's name (body.resource.name)`);
      const namespace = this.namespaceFor(res.namespace ?? undefined);
      if (!namespace) throw new InputError(`${b.action} needs a namespace (body.resource.namespace)`);
      if (res.cluster && res.cluster !== this.cfg.cluster)
        throw new NotAllowedError(
          `cluster ${show(res.cluster)} is not the controller's cluster (promotions.port.cluster: ${this.cfg.cluster ?? 'unset'}): resource actions act on that cluster only`,
        );
      this.logger.info(`Port run ${b.runId}: ${b.action} as ${caller.identity}`);
      const out = await this.svc.applyResource(caller, {
        operation,
        group: r.group,
        version: r.version,
        plural: r.plural,
        namespace,
        name: res.name,
        ...(operation !== 'delete' && res.spec !== undefined && res.spec !== null ? { spec: res.spec } : {}),
      });
      const done = `${out.kind} ${out.namespace}/${out.name} ${operation === 'create' ? 'created' : operation === 'update' ? 'updated' : 'deleted'} by ${caller.identity}`;
      await this.log(b.runId, { message: done, terminationStatus: 'SUCCESS', statusLabel: 'Done' });
      await this.patch(b.runId, { status: 'SUCCESS', statusLabel: 'Done', summary: done });
    } catch (e) {
      await this.fail(b.runId, e);
    }
  }

  /**
   * Logs the plan's progress to the run until it is final, or `done` says what the run waits for
   * is; a plan through a pull request logs it as it moves and links it from the run.
   */
  private async follow(
    runId: string,
    caller: Caller,
    ns: string,
    name: string,
    done: (p: PlanProgress) => boolean = () => false,
  ): Promise<PlanProgress> {
    const deadline = Date.now() + this.cfg.waitTimeoutSeconds * 1000;
    const reported = new Map<string, string>();
    const waves = new Map<string, string>();
    let hold = '';
    let pr = '';
    let linked = false;
    let orderLogged = false;
    for (;;) {
      const { progress } = await this.svc.getPlan(caller, { namespace: ns, name });
      // The order inside the release (the read model's steps), once: it does not change.
      const steps = progress.apps.flatMap((a) => {
        const s = stepText(a);
        return s ? [`${a.application}: ${s}`] : [];
      });
      if (steps.length && !orderLogged) {
        orderLogged = true;
        await this.log(runId, { message: `Plan ${ns}/${name} runs in order: ${steps.join('; ')}` });
      }
      const restart = soakRestartText(progress);
      // Why a plan that has not started waits: approvals, a freeze window, soak time (and what restarted it).
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
                ? `soaking in ${progress.from} until ${progress.eligibleAt}${restart ? ` (${restart})` : ''}`
                : '';
      if (why && why !== hold) await this.log(runId, { message: `Plan ${ns}/${name}: ${why}` });
      hold = why;
      for (const a of progress.apps)
        if (reported.get(a.application) !== a.phase) {
          reported.set(a.application, a.phase);
          if (a.phase !== 'Waiting')
            await this.log(runId, { message: `${a.application}: ${a.phase}${a.message ? ` - ${a.message}` : ''}` });
        }
      for (const w of progress.waves)
        if (waves.get(w.name) !== w.phase) {
          waves.set(w.name, w.phase);
          await this.log(runId, { message: `wave ${w.name}: ${w.phase}${w.message ? ` - ${w.message}` : ''}` });
        }
      const p = progress.pullRequest;
      const prLine = p ? `pull request ${pullRequestText(p)}${p.message ? ` - ${p.message}` : ''}` : '';
      if (prLine && prLine !== pr) await this.log(runId, { message: prLine });
      pr = prLine;
      const link = httpLink(p?.url);
      if (link && !linked) {
        linked = true;
        await this.patch(runId, { link: [link] });
      }
      if (isTerminalPlan(progress.phase) || done(progress)) return progress;
      if (Date.now() > deadline)
        throw new Error(
          `plan ${ns}/${name} not finished after ${this.cfg.waitTimeoutSeconds}s (phase ${progress.phase})`,
        );
      await sleep(this.cfg.pollIntervalMs);
    }
  }
}
