import { isDeepStrictEqual } from 'node:util';
import {
  type Application,
  type AppProgress,
  type Condition,
  type Environment,
  type NotificationEvent,
  type PlanGate,
  type PromotionPlan,
  type PromotionPlanStatus,
  setCondition,
} from '@kpromo/api';
import pLimit from 'p-limit';
import { runningVersion, workloadsFor } from '../candidates/runningVersion.js';
import { gitCredentials } from '../credentials/gitCredentials.js';
import { type EndpointCredentials, registryCredentials } from '../credentials/registryCredentials.js';
import { CredentialsError } from '../credentials/secrets.js';
import type { CommitImageChangeRequest } from '../delivery/gitCommit.js';
import { patchHelmReleaseValues } from '../delivery/helmRelease.js';
import { patchWorkloadImage } from '../delivery/patchWorkload.js';
import { checkRepoFilePath } from '../delivery/yamlEdit.js';
import type { CacheView } from '../kube/cacheView.js';
import type { EventRecorder } from '../kube/events.js';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import type { KubeRest } from '../kube/rest.js';
import { FencedError } from '../leader/leaderElection.js';
import type { ReleaseEvent } from '../notify/notifier.js';
import type { CopyImageRequest, CopyImageResult, RegistryEndpoint } from '../oci/copyImage.js';
import { checkRollout } from '../rollout/watchRollout.js';
import { registryRepository } from '../util/imageRef.js';
import {
  appsToWorkOn,
  claimKey,
  planOutcome,
  promotionBlocker,
  type ResolvedPlan,
  TERMINAL_APP_PHASES,
  TERMINAL_PLAN_PHASES,
  validatePlan,
} from './planDecisions.js';
import { planGate } from './planGate.js';
import { ObjectGoneError, StatusConflictError, StatusWriter } from './statusWriter.js';
import { renderTag } from './tagTemplate.js';

/** Registry endpoint as the OCI module takes it. */
export type Endpoint = RegistryEndpoint;
/** A release event as the notifier delivers it. */
export type PlanEvent = ReleaseEvent;

/** Side effects the reconciler needs; injected so the wiring (and tests) choose implementations. */
export interface PromotionDeps {
  cache: CacheView;
  control: KubeRest;
  clientFor(env: Environment): Promise<KubeRest>;
  copyImage(
    req: CopyImageRequest,
  ): Promise<Pick<CopyImageResult, 'digest' | 'blobsCopied' | 'blobsSkipped' | 'blobsMounted'>>;
  commitImageChange(req: CommitImageChangeRequest): Promise<{ commit: string; changed: boolean }>;
  readSecret(namespace: string, name: string, key: string): Promise<string | undefined>;
  events?: EventRecorder;
  notify?(e: PlanEvent): void;
  log?: { info(o: object, m: string): void; warn(o: object, m: string): void };
  now?(): Date;
  /** Attempts for transient failures (registry down, git push) before an app is marked Failed. */
  maxAttempts?: number;
  /**
   * Leader fencing: throws unless this replica still holds the lease within its renew deadline.
   * Called right before every side effect (status write, image copy, delivery write).
   */
  fence?: () => void;
  /**
   * App+environment claims of this process (claimKey -> plan name), shared by all reconciles so two
   * plans never start the same app in the same environment; the plan statuses remain the truth.
   */
  claims?: Map<string, string>;
  /** Tracing hook (observability/tracing withSpan), identity when absent. */
  span?<T>(name: string, attrs: Record<string, string | number>, fn: () => Promise<T>): Promise<T>;
}

export interface ReconcileOutcome {
  requeueAfterMs?: number;
}

const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A step failure that ends the app (no retry), with a condition-style reason. */
export class PermanentAppError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

function classify(e: unknown): { permanent: boolean; reason: string; message: string } {
  if (e instanceof PermanentAppError) return { permanent: true, reason: e.reason, message: e.message };
  // Errors that say retrying cannot help (a bad values path, an unparsable file) carry `permanent`.
  if ((e as { permanent?: unknown })?.permanent === true)
    return { permanent: true, reason: (e as Error).name || 'InvalidConfiguration', message: (e as Error).message };
  const code = (e as { code?: string })?.code;
  const message = (e as Error)?.message ?? String(e);
  switch (code) {
    case 'NOT_FOUND':
      return { permanent: true, reason: 'ImageNotFound', message };
    case 'DIGEST_MISMATCH':
      return { permanent: true, reason: 'DigestMismatch', message };
    case 'UNAUTHORIZED':
      return { permanent: true, reason: 'RegistryUnauthorized', message };
    case 'PROTOCOL':
      return { permanent: true, reason: 'RegistryProtocolError', message };
    case 'UNAVAILABLE':
      return { permanent: false, reason: 'RegistryUnavailable', message };
    case 'CLUSTER_NOT_ALLOWED':
      // Configuration, not a transient fault: retrying cannot help until clusterAccess changes.
      return { permanent: true, reason: 'ClusterNotAllowed', message };
    default:
      return { permanent: false, reason: 'StepError', message };
  }
}

/**
 * Registry credentials of an Environment from its `kubernetes.io/dockerconfigjson` Secret: the
 * `auths` entry matching its registry host and `repository` (kubelet's imagePullSecrets matching),
 * never another host's entry; nothing when none matches (a 401 then says so).
 */
async function registryAuth(deps: PromotionDeps, env: Environment, repository: string): Promise<EndpointCredentials> {
  const ref = env.spec.registry.credentialsSecretRef;
  if (!ref) return {};
  const ns = env.metadata.namespace ?? 'default';
  try {
    return await registryCredentials(deps.control, ns, ref.name, env.spec.registry.host, repository);
  } catch (e) {
    if (e instanceof CredentialsError)
      throw new PermanentAppError(e.reason, `${e.message} (Environment ${env.metadata.name} registry credentials)`);
    throw e;
  }
}

function endpoint(env: Environment, creds: EndpointCredentials): Endpoint {
  return { host: env.spec.registry.host, insecure: env.spec.registry.insecure, ...creds };
}

/**
 * Coalesces calls of `flush`: a call made while a flush runs joins the single next flush, which
 * starts when the running one ends (and sees every change made until then). Each caller's promise
 * settles with the flush it joined.
 */
export function groupCommit(flush: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  return () => {
    if (next) return next;
    const before = running;
    let p!: Promise<void>; // assigned once, read inside the closure that creates it
    p = (async () => {
      await before?.catch(() => undefined); // always yields, so `p` is assigned below first
      if (next === p) next = undefined;
      running = p;
      try {
        await flush();
      } finally {
        if (running === p) running = undefined;
      }
    })();
    next = p;
    return p;
  };
}

function approvedMessage(gate: PlanGate | undefined): string {
  const by = (gate?.approvers ?? []).filter((a) => a.counted).map((a) => a.user);
  return by.length ? `approved by ${by.join(', ')}` : 'approved by policy (automatic stage)';
}

/**
 * Level-triggered, idempotent reconcile of one PromotionPlan. The status is the journal: each app
 * moves Pending -> Copying -> Writing -> RollingOut -> Succeeded|Failed, and `copied`/`written`/
 * `commit` are persisted right after each side effect, so a new leader resumes without redoing
 * finished steps. Returns when no more progress is possible now (rollouts are re-checked on
 * workload events and at `requeueAfterMs`).
 */
export async function reconcilePlan(
  deps: PromotionDeps,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<ReconcileOutcome> {
  const now = () => deps.now?.() ?? new Date();
  const span = deps.span ?? (<T>(_n: string, _a: Record<string, string | number>, fn: () => Promise<T>) => fn());
  // Read the plan from the apiserver, not the cache: the journal must be the latest we wrote.
  const plan = await deps.control.getOrUndefined<PromotionPlan>(
    resourcePath(KPROMO_TYPES.PromotionPlan, namespace, name),
  );
  if (!plan || plan.metadata.deletionTimestamp) return {};
  const gen = plan.metadata.generation;
  const writer = new StatusWriter<PromotionPlanStatus, PromotionPlan>(deps.control, plan, { fence: deps.fence });
  const status: PromotionPlanStatus = structuredClone(plan.status ?? {});
  const cond = (type: string, st: Condition['status'], reason: string, message: string) => {
    status.conditions = setCondition(status.conditions, { type, status: st, reason, message }, gen, now());
  };
  const event = (type: 'Normal' | 'Warning', reason: string, message: string) =>
    void deps.events?.record(writer.obj, type, reason, message);
  const notify = (type: NotificationEvent, extra: Partial<PlanEvent> = {}) =>
    deps.notify?.({
      type,
      namespace,
      plan: name,
      flow: plan.spec.flow,
      from: plan.spec.from,
      to: plan.spec.to,
      time: iso(now()),
      ...extra,
    });
  // Group commit: apps advancing in parallel share status writes. A save() resolves once a write
  // that started after the caller's change is stored, so the journal is still durable before each
  // side effect, but N apps saving at once cost ~2 writes instead of N.
  const save = groupCommit(async () => {
    status.observedGeneration = gen;
    await writer.write(structuredClone(status));
  });

  if (status.phase && TERMINAL_PLAN_PHASES.has(status.phase)) return {};

  if (!status.apps?.length) {
    // Not started: approvals, freeze windows and soak time decide whether it may start now.
    const g = planGate(
      plan,
      deps.cache.getFlow(namespace, plan.spec.flow),
      deps.cache.getEnvironment(namespace, plan.spec.to),
      deps.cache,
      now(),
    );
    const seen = new Map((status.gate?.approvers ?? []).map((a) => [a.user, a.observedAt]));
    for (const a of g.gate.approvers ?? []) a.observedAt = seen.get(a.user) ?? iso(now());
    const gateChanged = !isDeepStrictEqual(status.gate, g.gate);
    status.gate = g.gate;
    if (g.hold) {
      const h = g.hold;
      const ready = status.conditions?.find((c) => c.type === 'Ready');
      const reasonChanged = ready?.reason !== h.reason || ready?.message !== h.message;
      if (gateChanged || reasonChanged || status.phase !== 'Pending' || status.observedGeneration !== gen) {
        status.phase = 'Pending';
        cond(
          'Approved',
          g.gate.approved ? 'True' : 'False',
          g.gate.approved ? 'Approved' : 'AwaitingApproval',
          g.gate.approved ? approvedMessage(g.gate) : (g.gate.waitingFor ?? 'waiting for approval'),
        );
        cond('Ready', 'False', h.reason, h.message);
        await save();
        if (reasonChanged && h.reason !== 'AwaitingApproval') {
          event('Normal', h.reason, h.message);
          notify('PlanWaiting', { message: h.message });
        }
      }
      if (!h.recheckAt) return h.reason === 'AwaitingApproval' ? {} : { requeueAfterMs: 300_000 };
      return { requeueAfterMs: Math.min(Math.max(h.recheckAt.getTime() - now().getTime(), 1_000), 3_600_000) };
    }
  }

  const v = validatePlan(plan, deps.cache);
  if (!v.ok) {
    // Only reject before any app started: once started, references vanishing is a runtime failure.
    if (!status.apps?.length) {
      status.phase = 'Failed';
      cond('Ready', 'False', v.reason, v.message);
      cond('Valid', 'False', v.reason, v.message);
      await save();
      event('Warning', v.reason, v.message);
      return {};
    }
    // Started already (e.g. an Environment or Application was deleted mid-plan): stop the apps that
    // have not finished with the reason, keep finished ones, and let the outcome below say Incomplete.
    if (!(status.phase && TERMINAL_PLAN_PHASES.has(status.phase))) {
      for (const ap of status.apps) {
        if (TERMINAL_APP_PHASES.has(ap.phase)) continue;
        ap.phase = 'Failed';
        ap.reason = v.reason;
        ap.message = `stopped: ${v.message}`;
        ap.finishedAt = iso(now());
      }
      const o = planOutcome(status.apps)!;
      status.phase = o.phase;
      status.succeeded = o.succeeded;
      status.failed = o.failed;
      status.completedAt = iso(now());
      cond('Valid', 'False', v.reason, v.message);
      cond('Ready', 'False', v.reason, `stopped mid-plan: ${v.message}`);
      await save();
      event('Warning', v.reason, `stopped mid-plan: ${v.message}`);
      notify('PlanIncomplete', { message: v.message });
    }
    return {};
  }
  const r = v.resolved;
  const isRollback = (plan.spec.action ?? 'promote') === 'rollback';

  if (!status.apps?.length) {
    const names = isRollback ? [...r.apps.keys()] : plan.spec.candidates.map((c) => c.application);
    status.apps = names.map((application) => ({ application, phase: 'Pending' as const, attempts: 0 }));
    status.phase = 'Promoting';
    status.startedAt = iso(now());
    status.succeeded = 0;
    status.failed = 0;
    cond('Valid', 'True', 'Valid', 'all references resolved');
    cond('Approved', 'True', 'Approved', approvedMessage(status.gate));
    cond(
      'Ready',
      'False',
      'Promoting',
      `${isRollback ? 'rolling back' : 'promoting'} ${names.length} application(s) to ${plan.spec.to}`,
    );
    await save();
    event(
      'Normal',
      'Approved',
      `${isRollback ? 'rollback' : 'promotion'} of ${names.length} application(s) ${plan.spec.from} -> ${plan.spec.to} started`,
    );
    notify('PlanApproved');
  }

  const startedAt = new Date(status.startedAt ?? iso(now()));
  const concurrency = r.flow.spec.concurrency ?? 4;
  const timeoutSeconds = r.flow.spec.rolloutTimeoutSeconds ?? 600;
  const maxAttempts = deps.maxAttempts ?? 5;
  const limit = pLimit(concurrency);
  const requeues: number[] = [];

  // One plan at a time per app+environment: apps another plan is promoting into `to` wait, Pending.
  const blocked = new Set<string>();
  let waitChanged = false;
  const others = deps.cache.plans(namespace);
  for (const ap of status.apps ?? []) {
    if (ap.phase !== 'Pending') continue;
    const other = promotionBlocker(plan, ap.application, others, deps.claims);
    if (other) {
      blocked.add(ap.application);
      const message = `waiting for PromotionPlan ${other.metadata.name}, which is promoting ${ap.application} into ${plan.spec.to}`;
      if (ap.reason !== 'WaitingForPlan' || ap.message !== message) {
        ap.reason = 'WaitingForPlan';
        ap.message = message;
        waitChanged = true;
        event('Normal', 'WaitingForPlan', `${ap.application}: ${message}`);
      }
    } else if (ap.reason === 'WaitingForPlan') {
      ap.reason = undefined;
      ap.message = undefined;
      waitChanged = true;
    }
  }
  if (waitChanged) await save();

  const terminalBefore = (status.apps ?? []).filter((a) => TERMINAL_APP_PHASES.has(a.phase)).length;
  const work = appsToWorkOn(
    (status.apps ?? []).filter((a) => !blocked.has(a.application)),
    concurrency,
  );
  await Promise.all(
    work.map((ap) =>
      limit(() =>
        span('promote.app', { 'kpromo.plan': `${namespace}/${name}`, 'kpromo.app': ap.application }, async () => {
          const app = r.apps.get(ap.application)!;
          try {
            const rq = await advanceApp({
              deps,
              plan,
              r,
              app,
              ap,
              isRollback,
              startedAt,
              timeoutSeconds,
              now,
              save,
              event,
              notify,
              span,
              signal,
            });
            if (rq !== undefined) requeues.push(rq);
          } catch (e) {
            // Not the app's fault: lost leadership or a stale journal. Nothing is recorded; the
            // reconcile is abandoned (and retried from the fresh status by whoever leads).
            if (
              e instanceof ObjectGoneError ||
              e instanceof FencedError ||
              e instanceof StatusConflictError ||
              signal?.aborted
            )
              throw e;
            const c = classify(e);
            ap.attempts = (ap.attempts ?? 0) + 1;
            if (c.permanent || ap.attempts >= maxAttempts) {
              ap.phase = 'Failed';
              ap.reason = c.reason;
              ap.message = c.permanent ? c.message : `gave up after ${ap.attempts} attempts: ${c.message}`;
              ap.finishedAt = iso(now());
              await save();
              event('Warning', 'AppFailed', `${ap.application}: ${ap.reason}: ${ap.message}`);
              notify('AppFailed', {
                application: ap.application,
                tag: ap.targetTag,
                digest: ap.digest,
                message: ap.message,
              });
            } else {
              ap.reason = c.reason;
              ap.message = `attempt ${ap.attempts}/${maxAttempts} failed, retrying: ${c.message}`;
              await save();
              requeues.push(Math.min(60_000, 1000 * 2 ** (ap.attempts - 1)));
            }
          }
        }),
      ),
    ),
  );

  for (const ap of status.apps ?? []) {
    const key = claimKey(namespace, plan.spec.to, ap.application);
    if (TERMINAL_APP_PHASES.has(ap.phase) && deps.claims?.get(key) === name) deps.claims.delete(key);
  }
  const outcome = planOutcome(status.apps ?? []);
  if (!outcome) {
    // More pending apps may start as soon as slots free up; rollouts are re-checked at the earliest deadline.
    // A slot freed in this pass (or none in use) lets the next pending app start at once.
    const pending = (status.apps ?? []).some((a) => a.phase === 'Pending' && !blocked.has(a.application));
    const terminalAfter = (status.apps ?? []).filter((a) => TERMINAL_APP_PHASES.has(a.phase)).length;
    if (pending && (requeues.length === 0 || terminalAfter > terminalBefore)) return { requeueAfterMs: 0 };
    // Waiting apps are woken by the other plan's status events; the requeue is a safety net.
    if (blocked.size) requeues.push(10_000);
    return { requeueAfterMs: Math.min(...requeues, 30_000) };
  }
  status.succeeded = outcome.succeeded;
  status.failed = outcome.failed;
  status.completedAt = iso(now());
  // Record restored apps on the original plan even when the rollback was only partly successful.
  if (isRollback) await markOriginalRolledBack(deps, r, status.apps ?? []);
  if (isRollback && outcome.phase === 'Complete') {
    status.phase = 'RolledBack';
    cond(
      'Ready',
      'True',
      'RolledBack',
      `restored ${outcome.succeeded} application(s) in ${plan.spec.to} to the versions before ${plan.spec.rollbackOf}`,
    );
    notify('PlanRolledBack');
  } else {
    status.phase = outcome.phase;
    const msg = `${outcome.succeeded} succeeded, ${outcome.failed} failed`;
    cond('Ready', outcome.phase === 'Complete' ? 'True' : 'False', outcome.phase, msg);
    notify(outcome.phase === 'Complete' ? 'PlanComplete' : 'PlanIncomplete', { message: msg });
  }
  await save();
  event(
    outcome.phase === 'Complete' ? 'Normal' : 'Warning',
    status.phase,
    `${outcome.succeeded} succeeded, ${outcome.failed} failed`,
  );
  return {};
}

async function markOriginalRolledBack(deps: PromotionDeps, r: ResolvedPlan, apps: AppProgress[]) {
  const orig = r.original;
  if (!orig) return;
  const fresh = await deps.control.getOrUndefined<PromotionPlan>(
    resourcePath(KPROMO_TYPES.PromotionPlan, orig.metadata.namespace, orig.metadata.name),
  );
  if (!fresh?.status) return;
  const restored = new Set(apps.filter((a) => a.phase === 'Succeeded').map((a) => a.application));
  const st = structuredClone(fresh.status);
  st.apps = (st.apps ?? []).map((a) => (restored.has(a.application) ? { ...a, phase: 'RolledBack' as const } : a));
  // The original plan as a whole is RolledBack only when every app it changed was restored.
  if (st.apps.every((a) => !a.written || a.phase === 'RolledBack')) st.phase = 'RolledBack';
  await new StatusWriter<PromotionPlanStatus, PromotionPlan>(deps.control, fresh, { fence: deps.fence }).write(st);
}

interface StepCtx {
  deps: PromotionDeps;
  plan: PromotionPlan;
  r: ResolvedPlan;
  app: Application;
  ap: AppProgress;
  isRollback: boolean;
  startedAt: Date;
  timeoutSeconds: number;
  now(): Date;
  save(): Promise<void>;
  event(type: 'Normal' | 'Warning', reason: string, message: string): void;
  notify(type: NotificationEvent, extra?: Partial<PlanEvent>): void;
  span<T>(name: string, attrs: Record<string, string | number>, fn: () => Promise<T>): Promise<T>;
  signal?: AbortSignal;
}

/** Advances one app as far as it can go now. Returns a requeue delay when waiting on a rollout. */
async function advanceApp(c: StepCtx): Promise<number | undefined> {
  const { deps, plan, r, app, ap } = c;
  const planRef = `${plan.metadata.namespace}/${plan.metadata.name}`;
  const toRepo = registryRepository(r.toEnv.spec.registry.prefix, app.spec.image.repository);

  if (ap.phase === 'Pending') {
    // Decide the target tag/digest and remember what ran before, then persist before any side effect.
    const before = runningVersion(deps.cache, app, r.toEnv);
    if (c.isRollback) {
      const orig = r.original?.status?.apps?.find((a) => a.application === ap.application);
      if (!orig?.previous?.digest || !orig.previous.tag) {
        ap.phase = 'Failed';
        ap.reason = 'NoPreviousVersion';
        ap.message = `plan ${plan.spec.rollbackOf} recorded no previous version of ${ap.application} in ${plan.spec.to}`;
        ap.finishedAt = iso(c.now());
        await c.save();
        return undefined;
      }
      ap.targetTag = orig.previous.tag;
      ap.digest = orig.previous.digest;
      ap.copied = true; // the previous image is already in the target registry
    } else {
      const cand = plan.spec.candidates.find((x) => x.application === ap.application)!;
      ap.targetTag = renderTag(r.flow.spec.tagTemplate, {
        tag: cand.from.tag,
        digest: cand.from.digest,
        time: c.startedAt,
      });
      ap.digest = cand.from.digest;
    }
    const prevTag = before.tag ?? plan.spec.candidates.find((x) => x.application === ap.application)?.to?.tag;
    const prevDigest = before.digest ?? plan.spec.candidates.find((x) => x.application === ap.application)?.to?.digest;
    if (prevTag || prevDigest)
      ap.previous = { ...(prevTag ? { tag: prevTag } : {}), ...(prevDigest ? { digest: prevDigest } : {}) };
    ap.phase = ap.copied ? 'Writing' : 'Copying';
    ap.startedAt = iso(c.now());
    ap.reason = undefined;
    ap.message = undefined;
    await c.save();
    // Ours now (in the status); the claim covers the moment until the cache shows it to other plans.
    deps.claims?.set(claimKey(plan.metadata.namespace, plan.spec.to, ap.application), plan.metadata.name);
  }

  if (ap.phase === 'Copying' && !ap.copied) {
    const cand = plan.spec.candidates.find((x) => x.application === ap.application)!;
    const fromRepo = registryRepository(r.fromEnv.spec.registry.prefix, app.spec.image.repository);
    deps.fence?.();
    const res = await c.span('promote.copy', { 'kpromo.app': ap.application }, async () =>
      deps.copyImage({
        source: {
          ...endpoint(r.fromEnv, await registryAuth(deps, r.fromEnv, fromRepo)),
          repository: fromRepo,
          reference: cand.from.digest,
        },
        target: {
          ...endpoint(r.toEnv, await registryAuth(deps, r.toEnv, toRepo)),
          repository: toRepo,
          tag: ap.targetTag!,
        },
        expectedDigest: cand.from.digest,
        signal: c.signal,
      }),
    );
    ap.copied = true;
    ap.phase = 'Writing';
    ap.message = `copied to ${r.toEnv.spec.registry.host}/${toRepo}:${ap.targetTag} (${res.blobsCopied} copied, ${res.blobsMounted} mounted, ${res.blobsSkipped} present)`;
    await c.save();
    c.event('Normal', 'ImageCopied', `${ap.application}: ${ap.message}`);
  }
  if (ap.phase === 'Copying' && ap.copied) ap.phase = 'Writing';

  if (ap.phase === 'Writing' && !ap.written) {
    const image = `${r.toEnv.spec.registry.host}/${toRepo}`;
    const ref = `${image}:${ap.targetTag}@${ap.digest}`;
    const method = r.toEnv.spec.delivery.method;
    await c.span('promote.write', { 'kpromo.app': ap.application, 'kpromo.delivery': method }, async () => {
      deps.fence?.();
      if (method === 'patch') {
        const rest = await deps.clientFor(r.toEnv);
        await patchWorkloadImage(rest, r.toEnv, app, ref, planRef);
      } else if (method === 'helmRelease') {
        const rest = await deps.clientFor(r.toEnv);
        await patchHelmReleaseValues(rest, r.toEnv, app, ap.targetTag!, ap.digest!);
      } else {
        const g = r.toEnv.spec.delivery.git!;
        const ns = r.toEnv.metadata.namespace ?? 'default';
        let auth: CommitImageChangeRequest['auth'];
        if (g.credentialsSecretRef) {
          // A kubernetes.io/basic-auth Secret, used only for repositories under the URL prefix it names.
          try {
            const cred = await gitCredentials(deps.control, ns, g.credentialsSecretRef.name, g.repository);
            auth = { username: cred.username, password: cred.password, url: cred.url };
          } catch (e) {
            if (e instanceof CredentialsError)
              throw new PermanentAppError(e.reason, `${e.message} (Environment ${r.toEnv.metadata.name} delivery.git)`);
            throw e;
          }
        }
        deps.fence?.();
        const res = await deps.commitImageChange({
          repository: g.repository,
          branch: g.branch ?? 'main',
          // The rendered path must name a file inside the checkout (no "..", absolute or .git paths).
          path: checkRepoFilePath(
            g.path.replaceAll('{app}', app.metadata.name).replaceAll('{environment}', r.toEnv.metadata.name),
          ),
          valuesPath: g.valuesPath ?? 'image',
          image,
          tag: ap.targetTag!,
          digest: ap.digest!,
          message: `${c.isRollback ? 'Roll back' : 'Promote'} ${app.metadata.name} to ${ap.targetTag} in ${r.toEnv.metadata.name}\n\nPromotionPlan: ${planRef}\nFlow: ${plan.spec.flow} (${plan.spec.from} -> ${plan.spec.to})\nDigest: ${ap.digest}`,
          author: g.author,
          auth,
        });
        ap.commit = res.commit;
      }
    });
    ap.written = true;
    ap.phase = 'RollingOut';
    ap.message = `desired state written (${method}${ap.commit ? ` commit ${ap.commit.slice(0, 12)}` : ''}); waiting for rollout`;
    await c.save();
    c.event('Normal', 'DesiredStateWritten', `${ap.application}: ${ref} via ${method}`);
  }
  if (ap.phase === 'Writing' && ap.written) ap.phase = 'RollingOut';

  if (ap.phase === 'RollingOut') {
    const appStart = new Date(ap.startedAt ?? c.startedAt);
    const verdict = await checkRollout({
      cache: deps.cache,
      clientFor: deps.clientFor,
      env: r.toEnv,
      app,
      refs: workloadsFor(app, r.toEnv.metadata.name),
      desired: { tag: ap.targetTag, digest: ap.digest },
      startedAt: appStart,
      now: c.now(),
      timeoutSeconds: c.timeoutSeconds,
    });
    if (verdict.state === 'Progressing') {
      if (ap.message !== verdict.message) {
        ap.message = verdict.message;
        await c.save();
      }
      const left = appStart.getTime() + c.timeoutSeconds * 1000 - c.now().getTime();
      return Math.max(250, Math.min(left + 100, 15_000));
    }
    ap.phase = verdict.state === 'Ready' ? 'Succeeded' : 'Failed';
    ap.reason = verdict.reason;
    ap.message = verdict.message;
    ap.finishedAt = iso(c.now());
    await c.save();
    if (ap.phase === 'Succeeded') {
      c.event('Normal', 'AppPromoted', `${ap.application} runs ${ap.targetTag} in ${plan.spec.to}`);
      c.notify('AppPromoted', { application: ap.application, tag: ap.targetTag, digest: ap.digest });
    } else {
      c.event('Warning', 'AppFailed', `${ap.application}: ${verdict.reason}: ${verdict.message}`);
      c.notify('AppFailed', {
        application: ap.application,
        tag: ap.targetTag,
        digest: ap.digest,
        message: verdict.message,
      });
    }
  }
  return undefined;
}
