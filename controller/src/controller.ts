import type { Environment, PromotionFlow, PromotionPlan } from '@kpromo/api';
import type { Logger } from 'pino';
import { Access } from './api/access.js';
import type { ApiContext } from './api/context.js';
import { Authorizer } from './auth/authorizer.js';
import { workloadsFor } from './candidates/runningVersion.js';
import type { ResolveDigest } from './candidates/tagDigest.js';
import { DeliveryAccessTracker } from './delivery/deliveryAccess.js';
import { forgeForEnvironment } from './delivery/forges.js';
import type { ControllerExtensions } from './extension/plugin.js';
import type { ClusterClients } from './kube/clusters.js';
import { EventRecorder } from './kube/events.js';
import { type CacheEvent, LiveCache, targetKey } from './kube/liveCache.js';
import { NamespaceShard } from './kube/namespaceShard.js';
import { resourcePath, SECRET } from './kube/paths.js';
import type { KubeRest } from './kube/rest.js';
import { FencedError, LeaderElector, leaderElectionClient } from './leader/leaderElection.js';
import { metrics } from './observability/metrics.js';
import { withSpan } from './observability/tracing.js';
import { runWorkers, WorkQueue } from './queue/workQueue.js';
import { autoPromote, type SeenCandidates } from './reconcile/autoPromote.js';
import { DriftTally, driftReporting } from './reconcile/driftReport.js';
import { type PlanEvent, type PromotionDeps, reconcilePlan } from './reconcile/plan/index.js';
import { TERMINAL_PLAN_PHASES } from './reconcile/planDecisions.js';
import { changedPolicyFields, type Governed, policyChangeMessage, policyDigests } from './reconcile/policyChange.js';
import { type ApplicationHooks, reconcileApplication } from './reconcile/reconcileApplication.js';
import { environmentReconciler, reconcileFlow } from './reconcile/reconcileStatus.js';
import { BUILTIN_WORKLOAD_KINDS } from './rollout/registry.js';

export interface ControllerOptions {
  clients: ClusterClients;
  /** Control-cluster namespaces to watch; empty = all. */
  namespaces: string[];
  defaultNamespace: string;
  /** Where LineStops with scope AllNamespaces stop every namespace (config lineStopNamespace). */
  lineStopNamespace?: string;
  /** Where OrgPolicies count: their rules apply to every flow (config orgPolicyNamespace). */
  orgPolicyNamespace?: string;
  /** The platform's trust anchors (config supplyChain): keys flows may name, by namespace. */
  supplyChain?: PromotionDeps['supplyChain'];
  /** Which identities are one person (config persons): approval policies count persons. */
  persons?: PromotionDeps['persons'];
  /** Which identities are agents (config auth.agents): their approvals never count. */
  agents?: PromotionDeps['agents'];
  workers: number;
  leaderElection: {
    enabled: boolean;
    namespace: string;
    name: string;
    identity: string;
    leaseDurationSeconds: number;
    renewIntervalMs?: number;
    renewDeadlineMs?: number;
  };
  copyImage: PromotionDeps['copyImage'];
  commitImageChange: PromotionDeps['commitImageChange'];
  /** The forge of a pull-request Environment (default: delivery/forges.ts, with its token Secret). */
  forgeFor?: PromotionDeps['forgeFor'];
  /** The portal's page of a plan ({namespace}, {name}), linked from pull requests (config pullRequests.planURL). */
  planURL?: string;
  /** The digest a tag names in a registry (oci/copyImage.ts resolveDigest): binds candidates of tag-only sources. */
  resolveDigest: ResolveDigest;
  /**
   * One shard of several controllers: only the namespaces the selector picks (followed live) are
   * cached and reconciled; `leaderElection.name` is already this shard's Lease.
   */
  shard?: { name: string; namespaceSelector: string };
  /** Custom resources (`<plural>.<group>`) open to resource actions (POST /api/v1/resources). */
  resourceKinds?: readonly string[];
  notify?(e: PlanEvent): void;
  /** Every family of extensions, the built-ins and the plugins' (reconcile/plugins.ts loadPlugins). */
  extensions: ControllerExtensions;
  log: Logger;
  maxAttempts?: number;
  shutdownGraceMs?: number;
  /** The client SubjectAccessReviews go through (runtime.ts: its own, auth.reviewClient); default the control client. */
  reviewClient?: KubeRest;
}

/**
 * Wires cache -> queue -> reconcile. Every replica keeps the cache warm (fast failover, API reads);
 * only the Lease holder processes the queue. Losing the lease aborts in-flight steps; the status
 * journal lets the next leader resume.
 */
/**
 * Environment and Flow statuses summarise many objects (each app a plan promotes moves its Flow's
 * candidate count), so they are written at most once per window, like Application status: a 100-app
 * plan costs a handful of Flow writes instead of one per second.
 */
const STATUS_DEBOUNCE_MS = 5_000;
/**
 * A Flow's status computes the candidates of every stage transition over every Application (about
 * 200 ms of CPU at 5,000 apps): with steady workload churn it is recomputed at most every 15 s.
 * Spec changes are reconciled at once; the API and MCP compute candidates themselves.
 */
const FLOW_STATUS_DEBOUNCE_MS = 15_000;
/**
 * Application status follows its workloads; a rollout is a burst of events (new ReplicaSet, pods
 * becoming ready one by one), so it is written at most once per window instead of once per event.
 * The API and MCP read versions from the cache, not from this status, so they are never this late.
 */
const APP_STATUS_DEBOUNCE_MS = 5_000;

/** Plans that may still change: approvals, freezes and soak time are re-checked on related events. */
const isOpen = (p: PromotionPlan) => !(p.status?.phase && TERMINAL_PLAN_PHASES.has(p.status.phase));

export class Controller {
  readonly cache: LiveCache;
  /**
   * Two lanes, as controller-runtime users run separate controllers: plans (side effects, latency
   * matters) never wait behind thousands of derived-status items after a restart. Statuses are
   * cheap no-ops when nothing changed, so their lane needs no global throttle.
   */
  readonly queue = new WorkQueue<string>({ baseDelayMs: 500, maxDelayMs: 60_000, qps: 50, burst: 100 });
  readonly statusQueue = new WorkQueue<string>({ baseDelayMs: 500, maxDelayMs: 60_000, qps: Infinity });
  readonly elector?: LeaderElector;
  private leaderSignal?: AbortSignal;
  private workers?: Promise<unknown>;
  private readonly deps: PromotionDeps;
  private standalone = false;
  private readonly scope?: NamespaceShard;
  readonly api: ApiContext;
  /** SubjectAccessReviews as callers; shared by every door so decisions are cached once. */
  readonly authorizer: Authorizer;
  /** The controller's own delivery rights per Environment (condition DeliveryPermitted). */
  private readonly deliveryAccess: DeliveryAccessTracker;
  private readonly reconcileEnvironment: ReturnType<typeof environmentReconciler>;
  /** Candidate sets per automatic stage and since when (debounce); rebuilt after a restart. */
  private readonly autoSeen = new Map<string, SeenCandidates>();
  /** Drifted applications per Environment (gauge kpromo_drifted_applications). */
  private readonly driftTally = new DriftTally((namespace, environment, n) =>
    metrics.driftedApplications.set({ namespace, environment }, n),
  );
  /** Drift reporting of the Application reconcile: an Event per new drift, the gauge. */
  private readonly appHooks: ApplicationHooks;

  constructor(private readonly o: ControllerOptions) {
    const shard = o.shard;
    const scope = shard ? new NamespaceShard(o.clients.control, shard.namespaceSelector, o.log) : undefined;
    if (scope) scope.onChange(() => this.reportShard());
    this.cache = new LiveCache(o.clients, scope ?? o.namespaces, { workloadKinds: BUILTIN_WORKLOAD_KINDS, log: o.log });
    this.scope = scope;
    const control = o.clients.control;
    const extensions = o.extensions;
    this.deps = {
      cache: this.cache,
      control,
      clientFor: (env: Environment) => o.clients.forEnvironment(env),
      copyImage: o.copyImage,
      resolveDigest: o.resolveDigest,
      commitImageChange: o.commitImageChange,
      readSecret: (ns, name, key) => this.readSecret(ns, name, key),
      // reportingInstance names the replica (and so the shard) that acted.
      events: new EventRecorder(
        control,
        'kpromo-controller',
        (e) => o.log.debug({ err: String(e) }, 'event not recorded'),
        o.leaderElection.identity,
      ),
      notify: o.notify,
      log: o.log,
      maxAttempts: o.maxAttempts,
      lineStopNamespace: o.lineStopNamespace,
      orgPolicyNamespace: o.orgPolicyNamespace,
      supplyChain: o.supplyChain,
      persons: o.persons,
      agents: o.agents,
      claims: new Map(),
      span: (name, attrs, fn) => withSpan(name, attrs, () => fn()),
      // Without leader election (one replica) there is nothing to fence against.
      fence: (ns) => {
        this.elector?.fence();
        this.fenceNamespace(ns);
      },
      deliveryMethods: extensions.deliveryMethods,
      workloadKinds: extensions.workloadKinds,
      checkProviders: extensions.checkProviders,
      forgeFor: o.forgeFor ?? ((env) => forgeForEnvironment(control, env)),
      ...(o.planURL ? { planURL: o.planURL } : {}),
    };
    const events = this.deps.events;
    this.appHooks = driftReporting(
      this.driftTally,
      async (obj, type, reason, message) => events?.record(obj, type, reason, message),
      o.notify && { send: (e) => o.notify?.(e), planOf: (ns, name) => this.cache.getPlan(ns, name) },
    );
    this.deliveryAccess = new DeliveryAccessTracker((env) => o.clients.forEnvironment(env), extensions);
    this.reconcileEnvironment = environmentReconciler((env) => this.deliveryAccess.get(env), o.orgPolicyNamespace);
    this.authorizer = new Authorizer(o.reviewClient ?? control);
    const access = new Access(this.authorizer);
    // A forge reviewer as a Kubernetes user (no groups: the forge vouches for a login only).
    this.deps.mayApprove = (user, ns, env) =>
      access.mayRelease({ username: user, groups: [], source: 'static' }, 'approve', ns, env);
    this.api = {
      cache: this.cache,
      control,
      asController: true,
      access,
      namespace: o.defaultNamespace,
      resolveDigest: o.resolveDigest,
      resourceKinds: o.resourceKinds ?? [],
      persons: o.persons,
      agentKillSwitchNamespace: o.lineStopNamespace,
      adoption: {
        environmentClient: (env: Environment) => o.clients.forEnvironment(env),
        deliveryMethods: extensions.deliveryMethods,
      },
    };
    if (o.leaderElection.enabled) {
      // Its own client and rate limit: renewals never wait behind other requests (issue 31).
      this.elector = new LeaderElector(leaderElectionClient(control), {
        ...o.leaderElection,
        log: o.log,
        onStartedLeading: (signal) => {
          this.leaderSignal = signal;
          metrics.leader.set(this.leaderLabels(), 1);
          this.enqueueAllPlans();
        },
        onStoppedLeading: () => {
          this.leaderSignal = undefined;
          metrics.leader.set(this.leaderLabels(), 0);
        },
      });
    }
  }

  private leaderLabels() {
    return {
      lease: `${this.o.leaderElection.namespace}/${this.o.leaderElection.name}`,
      shard: this.o.shard?.name ?? '',
    };
  }

  /** Whether this controller reconciles `ns`: always unsharded, else while its shard owns it. */
  private owns(ns: string): boolean {
    return !this.scope || this.scope.has(ns);
  }

  /** Sharded: throws unless this shard still owns `ns` (it may have been relabelled to another). */
  private fenceNamespace(ns: string) {
    if (!this.owns(ns))
      throw new FencedError(
        `namespace ${ns} is no longer in shard ${this.o.shard?.name} (selector ${this.o.shard?.namespaceSelector}): the shard that owns it now resumes from the status journal`,
      );
  }

  private reportShard() {
    if (this.scope && this.o.shard) metrics.shardNamespaces.set({ shard: this.o.shard.name }, this.scope.list().length);
  }

  /**
   * A governed field (approvers, stages, where an Environment delivers, an Application's workloads, …;
   * GOVERNED_FIELDS of @kpromo/api) differs from the digests
   * its status recorded: a PolicyChanged Event says which fields and who says they changed them; the
   * status write right after records the new digests (a failed write repeats the Event, never loses it).
   */
  private async recordPolicyChange(obj: Governed | undefined) {
    if (!obj) return;
    const fields = changedPolicyFields(obj.status?.policyDigests, policyDigests(obj));
    if (!fields.length) return;
    const message = policyChangeMessage(obj, fields);
    this.o.log.info({ object: `${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name}`, fields }, message);
    await this.deps.events?.record(obj, 'Normal', 'PolicyChanged', message);
  }

  /** The namespaces this shard owns now (undefined when not sharded). */
  shardNamespaces(): string[] | undefined {
    return this.scope?.list();
  }

  /** Believes it leads but has not renewed within the renew deadline (a stuck elector). */
  leaderStale(): boolean {
    return !!this.elector?.isLeader && !this.elector.holds();
  }

  get isLeader(): boolean {
    return this.standalone || !!this.elector?.isLeader;
  }

  async readSecret(ns: string, name: string, key: string): Promise<string | undefined> {
    const s = await this.o.clients.control.getOrUndefined<{ data?: Record<string, string> }>(
      resourcePath(SECRET, ns, name),
    );
    const v = s?.data?.[key];
    return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
  }

  private enqueuePlan(p: PromotionPlan) {
    if (!this.isLeader) return;
    if (
      p.status?.phase &&
      TERMINAL_PLAN_PHASES.has(p.status.phase) &&
      p.status.observedGeneration === p.metadata.generation
    )
      return;
    this.queue.add(`PromotionPlan:${p.metadata.namespace}/${p.metadata.name}`);
  }

  private enqueueApp(ns: string | undefined, name: string, afterMs = 0) {
    if (this.isLeader) this.statusQueue.addAfter(`Application:${ns}/${name}`, afterMs);
  }

  /** Flow and Environment statuses (candidates, reachability) are derived from the cache. */
  private enqueueStatuses(ns: string | undefined, what: { flows?: boolean; envs?: boolean | string } = {}) {
    if (!this.isLeader) return;
    if (what.flows !== false)
      for (const f of this.cache.flows(ns))
        this.debounced(`PromotionFlow:${f.metadata.namespace}/${f.metadata.name}`, FLOW_STATUS_DEBOUNCE_MS);
    if (what.envs !== false)
      for (const e of this.cache.environments(ns))
        if (typeof what.envs !== 'string' || targetKey(e) === what.envs)
          this.debounced(`Environment:${e.metadata.namespace}/${e.metadata.name}`);
  }

  /**
   * Environment and Flow statuses summarise many objects, so a burst of events (a 100-app plan)
   * collapses into one reconcile per window instead of one per event.
   */
  private debounced(key: string, windowMs = STATUS_DEBOUNCE_MS) {
    this.statusQueue.addAfter(key, windowMs);
  }

  enqueueAllPlans(): void {
    for (const p of this.cache.plans()) this.enqueuePlan(p);
    for (const a of this.cache.applications()) this.enqueueApp(a.metadata.namespace, a.metadata.name);
    this.enqueueStatuses(undefined);
  }

  /** What a cache event wakes: the plans, applications and statuses it can change (level-triggered). */
  private routeEvent(e: CacheEvent): void {
    if (e.kind === 'PromotionPlan') {
      if (e.type !== 'delete') this.enqueuePlan(e.obj as PromotionPlan);
      // A finished plan changed what its apps were delivered: their drift is judged again.
      if (!isOpen(e.obj as PromotionPlan))
        for (const a of (e.obj as PromotionPlan).status?.apps ?? [])
          this.enqueueApp(e.obj.metadata.namespace, a.application, APP_STATUS_DEBOUNCE_MS);
      // Apps waiting for this plan (same target environment) may go now.
      const changed = e.obj as PromotionPlan;
      // So may its automatic rollback, once this plan's status binds it (planGate.ts automaticRollback).
      for (const p of this.cache.plans(changed.metadata.namespace))
        if (
          p.metadata.name !== changed.metadata.name &&
          ((p.spec.to === changed.spec.to && p.status?.apps?.some((a) => a.reason === 'WaitingForPlan')) ||
            (p.spec.rollbackOf === changed.metadata.name && isOpen(p)))
        )
          this.enqueuePlan(p);
    } else if (e.kind === 'Target') {
      // A cluster became reachable/synced/broken: its Environments and the flows using them.
      for (const env of this.cache.environments()) {
        if (targetKey(env) !== e.workloadKey) continue;
        this.enqueueStatuses(env.metadata.namespace, { envs: e.workloadKey });
        for (const a of this.cache.applications(env.metadata.namespace))
          this.enqueueApp(a.metadata.namespace, a.metadata.name);
      }
    } else if (e.kind === 'Workload' || e.kind === 'HelmRelease') {
      // Rollout progress: wake plans promoting into this cluster+namespace.
      for (const p of this.cache.plans()) {
        if (p.status?.phase !== 'Promoting') continue;
        const env = this.cache.getEnvironment(p.metadata.namespace ?? '', p.spec.to);
        if (env && targetKey(env) === e.workloadKey) this.enqueuePlan(p);
      }
      // Versions/health shown in Application status (read by the exporter and portals).
      for (const env of this.cache.environments()) {
        if (targetKey(env) !== e.workloadKey) continue;
        this.enqueueStatuses(env.metadata.namespace, { envs: e.workloadKey });
        for (const a of this.cache.applicationsNamingWorkload(env.metadata.namespace ?? '', e.obj.metadata.name)) {
          if (workloadsFor(a, env.metadata.name).some((w) => w.name === e.obj.metadata.name))
            this.enqueueApp(a.metadata.namespace, a.metadata.name, APP_STATUS_DEBOUNCE_MS);
        }
      }
    } else if (e.kind === 'Application') {
      if (e.type !== 'delete') this.enqueueApp(e.obj.metadata.namespace, e.obj.metadata.name);
      for (const p of this.cache.plans(e.obj.metadata.namespace)) if (isOpen(p)) this.enqueuePlan(p);
      this.enqueueStatuses(e.obj.metadata.namespace);
    } else if (e.kind === 'Environment') {
      this.enqueueStatuses(e.obj.metadata.namespace);
      for (const a of this.cache.applications(e.obj.metadata.namespace))
        this.enqueueApp(a.metadata.namespace, a.metadata.name);
      for (const p of this.cache.plans(e.obj.metadata.namespace)) if (isOpen(p)) this.enqueuePlan(p);
    } else if (e.kind === 'LineStop') {
      // The line stopped or goes on: open plans of the namespace (of every namespace for a stop of
      // the line-stop namespace) hold or resume at their next app.
      const ns = e.obj.metadata.namespace;
      const everywhere = ns === this.o.lineStopNamespace;
      for (const p of this.cache.plans(everywhere ? undefined : ns)) if (isOpen(p)) this.enqueuePlan(p);
    } else if (e.kind === 'OrgPolicy') {
      // The org's gates changed: every open plan is judged again, every flow's status says which
      // rules apply, every Environment's the rules covering it (admission judges flows by them).
      // An OrgPolicy elsewhere counts for nothing.
      if (e.obj.metadata.namespace === this.o.orgPolicyNamespace) {
        for (const p of this.cache.plans()) if (isOpen(p)) this.enqueuePlan(p);
        this.enqueueStatuses(undefined);
      }
    } else if (e.kind === 'PromotionFlow') {
      // A reference may now resolve; waiting/invalid plans re-check (terminal ones are skipped).
      for (const p of this.cache.plans(e.obj.metadata.namespace)) if (isOpen(p)) this.enqueuePlan(p);
      // At once when the spec changed; a status-only update (our own write, which summarises
      // candidates) must not re-trigger itself around the debounce: that wrote a flow's status
      // every ~2 s during a 500-app plan instead of every 5 s.
      const f = e.obj as PromotionFlow;
      if (e.type !== 'delete' && this.isLeader && f.status?.observedGeneration !== f.metadata.generation)
        this.statusQueue.add(`PromotionFlow:${f.metadata.namespace}/${f.metadata.name}`);
    }
    metrics.queueDepth.set({ queue: 'plans' }, this.queue.length);
    metrics.queueDepth.set({ queue: 'statuses' }, this.statusQueue.length);
  }

  async start(signal?: AbortSignal): Promise<void> {
    this.cache.onEvent((e) => this.routeEvent(e));
    await this.cache.start(signal);
    if (this.scope && this.o.shard) {
      this.reportShard();
      this.o.log.info(
        { shard: this.o.shard.name, selector: this.o.shard.namespaceSelector, namespaces: this.scope.list() },
        'running as a shard',
      );
    }
    // Workload informers for every Environment, so rollout checks and versions read a warm cache.
    await Promise.all(
      // Bounded: an unreachable workload cluster must not keep the controller (and other environments) from starting.
      this.cache
        .environments()
        .map((e) =>
          this.cache
            .waitForEnvironment(e, AbortSignal.any([AbortSignal.timeout(30_000), ...(signal ? [signal] : [])]))
            .catch((err) =>
              this.o.log.warn(
                { environment: e.metadata.name, err: String(err) },
                'environment cluster not synced at start; continuing',
              ),
            ),
        ),
    );
    if (this.elector) this.elector.start();
    else {
      this.standalone = true;
      this.enqueueAllPlans();
    }
    const handle = (key: string) => this.reconcileKey(key);
    const onError = (key: string, err: unknown, retry: number) =>
      this.o.log.warn(
        { key, err: String(err instanceof Error ? err.message : err), retryInMs: retry },
        'reconcile failed',
      );
    this.workers = Promise.all([
      runWorkers(this.queue, this.o.workers, handle, onError),
      runWorkers(this.statusQueue, Math.max(1, Math.ceil(this.o.workers / 2)), handle, onError),
    ]);
  }

  /** One reconcile of a queued key (`Kind:namespace/name`), when this replica leads and owns it. */
  private async reconcileKey(key: string): Promise<{ requeueAfterMs?: number } | undefined> {
    if (!this.isLeader) return undefined;
    const [kind, ref] = key.split(':');
    const [ns, name] = ref.split('/');
    // Queued before its namespace moved to another shard: that shard has it now.
    if (!this.owns(ns)) return undefined;
    // The shard's namespaces are changing and the cache is relisting: decide nothing for a moment.
    if (this.cache.settling) return { requeueAfterMs: 250 };
    const end = metrics.reconcileDuration.startTimer({ kind });
    try {
      let r: { requeueAfterMs?: number } = {};
      const control = this.o.clients.control;
      if (kind === 'Application') {
        await this.recordPolicyChange(this.cache.getApplication(ns, name));
        if (!this.cache.getApplication(ns, name)) this.driftTally.set(ns, name, []);
        await reconcileApplication(this.cache, control, ns, name, new Date(), this.appHooks);
      } else if (kind === 'PromotionFlow') {
        await this.recordPolicyChange(this.cache.getFlow(ns, name));
        // Automatic promotion first: the flow status shows the stages its cooldowns hold.
        const now = new Date();
        const a = await autoPromote(this.cache, control, this.autoSeen, ns, name, now);
        for (const p of a.created) this.o.log.info({ plan: `${ns}/${p}` }, 'automatic promotion plan created');
        await reconcileFlow(this.cache, control, ns, name, now, a.cooldowns, this.o.orgPolicyNamespace);
        // A cooldown's end is a time, not an event: look again then (level-triggered).
        if (a.requeueAfterMs !== undefined) r = { requeueAfterMs: a.requeueAfterMs };
      } else if (kind === 'Environment') {
        const env = this.cache.getEnvironment(ns, name);
        await this.recordPolicyChange(env);
        // Once its workloads are watched, ask its cluster what the controller may write there.
        if (!env) this.deliveryAccess.forget(ns, name);
        else if (this.cache.environmentSynced(env)) await this.deliveryAccess.refresh(env, this.cache.applications(ns));
        await this.reconcileEnvironment(this.cache, control, ns, name);
      } else r = await reconcilePlan(this.deps, ns, name, this.leaderSignal);
      metrics.reconcileTotal.inc({ kind, result: r.requeueAfterMs !== undefined ? 'requeue' : 'success' });
      return r;
    } catch (e) {
      metrics.reconcileTotal.inc({ kind, result: 'error' });
      throw e;
    } finally {
      end();
    }
  }

  /** Graceful: stop taking work, let in-flight reconciles finish (bounded), release the lease. */
  async stop(): Promise<void> {
    this.queue.shutdown();
    this.statusQueue.shutdown();
    const grace = this.o.shutdownGraceMs ?? 20_000;
    const [drained] = await Promise.all([this.queue.drain(grace), this.statusQueue.drain(grace)]);
    if (!drained)
      this.o.log.warn({}, 'in-flight reconciles did not finish in time; the next leader resumes them from status');
    await this.elector?.stop();
    this.standalone = false;
    this.cache.stop();
  }
}
