import type {
  DiscoveryService,
  LoggerService,
  PermissionsService,
  UserInfoService,
} from '@backstage/backend-plugin-api';
import type { Config } from '@backstage/config';
import { InputError, NotAllowedError, NotFoundError, ServiceUnavailableError } from '@backstage/errors';
import type { BasicPermission, ResourcePermission } from '@backstage/plugin-permission-common';
import { AuthorizeResult } from '@backstage/plugin-permission-common';
import {
  type AdoptionProposal,
  type ApplicationInfo,
  type CreatePlanResponse,
  continuedWave,
  type DiffWithImages,
  type DoraReport,
  type EnvironmentInfo,
  type FlowView,
  type HistoryList,
  isRollback,
  type LiftResult,
  type LineStopList,
  type LineStopView,
  type ListResponse,
  noCandidatesMessage,
  type PlanDetails,
  PlansQuery,
  type PromotionPlan,
  planProgress,
  promotionAdoptPermission,
  promotionContinuePermission,
  promotionLineStopPermission,
  promotionPlanApprovePermission,
  promotionPlanCreatePermission,
  promotionPlanReadPermission,
  promotionRollbackPermission,
  type ResourceActionResult,
  rollbackApplications,
  UID_REQUIRED,
} from '@kpromo/plugin-promotions-common';
import {
  type Actor,
  callerIdentity,
  type PromotionsCaller,
  type PromotionsControllerLocateRequest,
  type PromotionsControllerLocator,
  type PromotionsOperations,
} from '@kpromo/plugin-promotions-node';
import {
  configControllerLocator,
  controllerUrl,
  entityRefFor,
  type PromotionsConfig,
  readPromotionsConfig,
} from './config.js';
import { ControllerClient } from './controllerClient.js';
import {
  AdoptBody,
  ApplicationsQuery,
  ApproveBody,
  ContinueBody,
  CreatePlanBody,
  DiffQuery,
  DoraQuery,
  HistoryQuery,
  LineStopParams,
  NamespaceQuery,
  PlanParams,
  parseInput,
  ResourceActionBody,
  RollbackBody,
  requireNamespace,
  StopLineBody,
} from './schemas.js';

/** A list as the controller's query takes it: comma-separated, absent when empty. */
const csv = (list?: readonly string[]) => (list?.length ? list.join(',') : undefined);

/** Who is acting: see {@link PromotionsCaller} (`@kpromo/plugin-promotions-node`). */
export type Caller = PromotionsCaller;

export const identityOf = callerIdentity;

/**
 * Everything the routes, actions, scaffolder actions and backend modules (Port webhook, assistant)
 * do: Backstage permission checks here, then the controller call made for the caller's identity
 * ({@link actorOf}), where Kubernetes RBAC decides again as that identity.
 */
export class PromotionsService implements PromotionsOperations {
  /**
   * @param controllerBaseUrl the controller's JSON API root for a call in `namespace` (see
   *   {@link PromotionsControllerLocator}); every call still carries the backend's token and the
   *   caller's identity, added by {@link ControllerClient}.
   */
  constructor(
    readonly cfg: PromotionsConfig,
    private readonly permissions: PermissionsService,
    private readonly logger: LoggerService,
    private readonly controllerBaseUrl: (request: PromotionsControllerLocateRequest) => Promise<string>,
    private readonly userInfo?: Pick<UserInfoService, 'getUserInfo'>,
  ) {}

  get defaultNamespace(): string | undefined {
    return this.cfg.controller.defaultNamespace;
  }

  get controllerMcp(): { url: string; token: string } | undefined {
    const { mcpUrl, token } = this.cfg.controller;
    return mcpUrl && token ? { url: mcpUrl, token } : undefined;
  }

  /**
   * @param deps.locator where the controller is (a module's, through
   *   `promotionsControllerLocatorExtensionPoint`); default {@link configControllerLocator}.
   */
  static create(deps: {
    config: Config;
    discovery: DiscoveryService;
    permissions: PermissionsService;
    logger: LoggerService;
    userInfo: UserInfoService;
    locator?: PromotionsControllerLocator;
  }): PromotionsService {
    const cfg = readPromotionsConfig(deps.config);
    const locator = deps.locator ?? configControllerLocator(cfg, deps.discovery);
    // A module's locator only picks among the configured URLs: the token never goes to a URL made
    // from a request (a namespace such as "evil.example" in "http://kpromo-controller.<ns>:8080").
    const allowed = new Set(cfg.controller.allowedBaseUrls ?? []);
    if (!cfg.controller.token)
      deps.logger.warn(
        'promotions.controller.token is not set: the kpromo controller refuses unauthenticated calls (401)',
      );
    else if (cfg.controller.tokenFromDeprecatedKey)
      deps.logger.warn('promotions.controller.mcpToken is deprecated: rename it to promotions.controller.token');
    return new PromotionsService(
      cfg,
      deps.permissions,
      deps.logger,
      async (request) => {
        let baseUrl: string;
        try {
          ({ baseUrl } = await locator.locate(request));
        } catch (e) {
          throw new ServiceUnavailableError(`kpromo controller not located: ${(e as Error).message}`);
        }
        const url = controllerUrl(baseUrl);
        if (!url)
          throw new ServiceUnavailableError(
            `kpromo controller not located: ${JSON.stringify(baseUrl)} is not an http(s) URL`,
          );
        if (deps.locator && !allowed.has(url)) {
          deps.logger.error(
            `controller locator answered ${JSON.stringify(url)} for namespace ${JSON.stringify(request.namespace ?? null)}, which is not an allowed controller URL; the call was not made`,
          );
          throw new ServiceUnavailableError(
            `kpromo controller not located: the locator answered ${JSON.stringify(url)}, which is not in promotions.controller.allowedBaseUrls (nor baseUrl, byNamespace); the backend sends its token only to those`,
          );
        }
        return url;
      },
      deps.userInfo,
    );
  }

  /** The controller client for a call in `namespace` (undefined: the controller's default). */
  private controller(namespace: string | undefined): ControllerClient {
    // Every input was checked already (parseInput); this is the last line before a request carries the token.
    if (namespace !== undefined) requireNamespace(namespace);
    return new ControllerClient(() => this.controllerBaseUrl({ namespace }), this.cfg.controller.token);
  }

  /**
   * The identity the controller acts as for this caller: a user with their ownership entity refs
   * (groups such as `group:default/team-a`, without the user's own ref) as groups; a service
   * principal (`service:<subject>`) or a Port run (`port:<email>`) without groups.
   */
  async actorOf(c: Caller): Promise<Actor> {
    const user = identityOf(c);
    if (c.kind === 'port' || (c.credentials.principal as { type: string }).type !== 'user' || !this.userInfo)
      return { user };
    try {
      const info = await this.userInfo.getUserInfo(c.credentials);
      return { user, groups: info.ownershipEntityRefs.filter((r) => r !== user) };
    } catch (e) {
      // Fewer groups can only mean fewer rights at the controller.
      this.logger.warn(`no ownership entity refs for ${user}; acting without groups: ${(e as Error).message}`);
      return { user };
    }
  }

  private ns(n?: string) {
    return n ?? this.cfg.controller.defaultNamespace;
  }

  /**
   * Backstage permission check for a Backstage caller. A Port run has no Backstage principal to
   * check; the controller's RBAC for its identity is its authorisation (see {@link Caller}).
   */
  async requireBasic(c: Caller, permission: BasicPermission): Promise<void> {
    if (c.kind === 'port') return;
    const [d] = await this.permissions.authorize([{ permission }], { credentials: c.credentials });
    if (d.result !== AuthorizeResult.ALLOW)
      throw new NotAllowedError(`${identityOf(c)} is not allowed to ${permission.name}`);
  }

  /**
   * Resource permission for every application, against its catalog entity; all must be allowed.
   * Not applicable to a Port run, as {@link requireBasic}. With `subject` (what the decision is
   * for), an empty list is refused: a decision with nothing to decide on is never an allow.
   */
  async requireForApps(
    c: Caller,
    permission: ResourcePermission,
    namespace: string,
    apps: string[],
    subject?: string,
  ): Promise<void> {
    if (c.kind === 'port') return;
    if (!apps.length) {
      if (subject)
        throw new NotAllowedError(
          `${identityOf(c)} is not allowed to ${permission.name} for ${subject}: it names no application to check ${permission.name} for`,
        );
      return;
    }
    const refs = [...new Set(apps)].map((name) => entityRefFor(this.cfg.entityRef, { namespace, name }));
    const ds = await this.permissions.authorize(
      refs.map((resourceRef) => ({ permission, resourceRef })),
      { credentials: c.credentials },
    );
    const denied = refs.filter((_, i) => ds[i].result !== AuthorizeResult.ALLOW);
    if (denied.length)
      throw new NotAllowedError(`${identityOf(c)} is not allowed to ${permission.name} for ${denied.join(', ')}`);
  }

  async environments(c: Caller, q: unknown): Promise<ListResponse<EnvironmentInfo>> {
    const { namespace } = parseInput(NamespaceQuery, q, 'query');
    await this.requireBasic(c, promotionPlanReadPermission);
    return this.controller(this.ns(namespace)).call(await this.actorOf(c), (api) =>
      api.GET('/environments', { params: { query: { namespace: this.ns(namespace) } } }),
    );
  }

  /** Applications with their versions; paging (limit/continue) and filters pass through to the controller. */
  async applications(c: Caller, q: unknown): Promise<ListResponse<ApplicationInfo>> {
    const a = parseInput(ApplicationsQuery, q, 'query');
    await this.requireBasic(c, promotionPlanReadPermission);
    const namespace = this.ns(a.namespace);
    const r = await this.controller(namespace).call(await this.actorOf(c), (api) =>
      api.GET('/applications', {
        params: {
          query: {
            namespace,
            limit: a.limit,
            continue: a.continue,
            teams: csv(a.teams),
            applications: csv(a.applications),
            labelSelector: a.labelSelector
              ? Object.entries(a.labelSelector)
                  .map(([k, v]) => `${k}=${v}`)
                  .join(',')
              : undefined,
          },
        },
      }),
    );
    return {
      items: r.items.map((x) => ({ ...x, entityRef: entityRefFor(this.cfg.entityRef, x) })),
      ...(r.continue ? { continue: r.continue } : {}),
      ...(r.total !== undefined ? { total: r.total } : {}),
    };
  }

  async diff(c: Caller, q: unknown): Promise<DiffWithImages> {
    const d = parseInput(DiffQuery, q, 'query');
    await this.requireBasic(c, promotionPlanReadPermission);
    const r = await this.controller(this.ns(d.namespace)).call(await this.actorOf(c), (api) =>
      api.GET('/diff', {
        params: {
          query: {
            ...d,
            namespace: this.ns(d.namespace),
            applications: csv(d.applications),
            teams: csv(d.teams),
          },
        },
      }),
    );
    return {
      flow: r.flow,
      from: d.from,
      to: d.to,
      candidates: r.candidates,
      skipped: r.skipped,
      skippedTotal: r.skippedTotal,
      skippedByReason: r.skippedByReason,
      ...(r.images ? { images: r.images } : {}),
    };
  }

  /** PromotionFlows (stages, selector, approval settings); the controller lists only namespaces RBAC lets the caller list flows in. */
  async flows(c: Caller, q: unknown): Promise<ListResponse<FlowView>> {
    const { namespace } = parseInput(NamespaceQuery, q, 'query');
    await this.requireBasic(c, promotionPlanReadPermission);
    return this.controller(this.ns(namespace)).call(await this.actorOf(c), (api) =>
      api.GET('/flows', { params: { query: { namespace: this.ns(namespace) } } }),
    );
  }

  /** Plans, newest first; filters and paging (limit/continue) pass through to the controller. */
  async listPlans(c: Caller, q: unknown): Promise<ListResponse<PromotionPlan>> {
    const p = parseInput(PlansQuery, q, 'query');
    await this.requireBasic(c, promotionPlanReadPermission);
    const namespace = this.ns(p.namespace);
    return this.controller(namespace).call(await this.actorOf(c), (api) =>
      api.GET('/plans', { params: { query: { ...p, namespace } } }),
    );
  }

  /** Release history (promotions and rollbacks), newest first; the controller reads only namespaces RBAC lets the caller list plans in. */
  async history(c: Caller, q: unknown): Promise<HistoryList> {
    const h = parseInput(HistoryQuery, q, 'query');
    await this.requireBasic(c, promotionPlanReadPermission);
    const namespace = this.ns(h.namespace);
    return this.controller(namespace).call(await this.actorOf(c), (api) =>
      api.GET('/history', { params: { query: { ...h, namespace } } }),
    );
  }

  /** The DORA four keys over the window, from the history the caller may read. */
  async dora(c: Caller, q: unknown): Promise<DoraReport> {
    const d = parseInput(DoraQuery, q, 'query');
    await this.requireBasic(c, promotionPlanReadPermission);
    const namespace = this.ns(d.namespace);
    return this.controller(namespace).call(await this.actorOf(c), (api) =>
      api.GET('/insights/dora', {
        params: { query: { ...d, namespace, window: d.window === undefined ? undefined : `${d.window}d` } },
      }),
    );
  }

  async getPlan(c: Caller, params: unknown): Promise<PlanDetails> {
    const p = parseInput(PlanParams, params, 'plan reference');
    await this.requireBasic(c, promotionPlanReadPermission);
    const plan = await this.readPlan(c, p.namespace, p.name);
    return { plan, progress: planProgress(plan) };
  }

  private async readPlan(c: Caller, namespace: string, name: string): Promise<PromotionPlan> {
    return this.controller(namespace).call(await this.actorOf(c), (api) =>
      api.GET('/plans/{namespace}/{name}', { params: { path: { namespace, name } } }),
    );
  }

  /**
   * Creates a plan from filters. With approve=true the candidates are computed first and the
   * caller must hold promotion.plan.approve for each; the plan is then restricted to exactly
   * those applications, so it cannot pick up an application nobody authorised.
   */
  async createPlan(c: Caller, body: unknown): Promise<CreatePlanResponse> {
    const b = parseInput(CreatePlanBody, body, 'request body');
    await this.requireBasic(c, promotionPlanCreatePermission);
    const namespace = this.ns(b.namespace);
    const user = identityOf(c);
    let applications = b.applications;
    if (b.approve) {
      const d = await this.diff(c, {
        namespace,
        flow: b.flow,
        from: b.from,
        to: b.to,
        applications: b.applications,
        teams: b.teams,
        tagPattern: b.tagPattern,
      });
      applications = d.candidates.map((x) => x.application);
      if (!applications.length) throw new InputError(noCandidatesMessage(b.from, b.to, d));
      await this.requireForApps(c, promotionPlanApprovePermission, namespace ?? '', applications);
    }
    // The controller records the caller as spec.requestedBy and, with approve, as the approver.
    const r = await this.controller(namespace).call(await this.actorOf(c), (api) =>
      api.POST('/plans', { body: { ...b, namespace, applications, approve: b.approve } }),
    );
    this.logger.info(`promotion plan ${r.plan.metadata.namespace}/${r.plan.metadata.name} created by ${user}`, {
      approved: b.approve,
    });
    return r;
  }

  /**
   * Adds the caller's approval to a plan (the controller promotes once the target stage's policy is
   * met). Here: promotion.plan.approve for every candidate application of a promotion, and
   * promotion.rollback for every application a rollback plan restores (a rollback plan has no
   * candidates of its own: its applications are those the rolled-back plan changed). At the
   * controller: the RBAC verb approve (rollback for a rollback plan; override-freeze with
   * overrideFreeze, which needs overrideReason).
   */
  async approve(c: Caller, params: unknown, body?: unknown): Promise<PlanDetails> {
    const p = parseInput(PlanParams, params, 'plan reference');
    const b = parseInput(ApproveBody, body, 'request body');
    await this.requireBasic(c, promotionPlanReadPermission); // the plan is read first
    const user = identityOf(c);
    const plan = await this.readPlan(c, p.namespace, p.name);
    if (isRollback(plan))
      await this.requireForApps(
        c,
        promotionRollbackPermission,
        p.namespace,
        await this.rollbackApplications(c, p.namespace, plan),
        `rollback plan ${p.namespace}/${p.name}`,
      );
    else
      await this.requireForApps(
        c,
        promotionPlanApprovePermission,
        p.namespace,
        plan.spec.candidates.map((x) => x.application),
        `plan ${p.namespace}/${p.name}`,
      );
    const out = await this.controller(p.namespace).call(await this.actorOf(c), (api) =>
      api.POST('/plans/{namespace}/{name}/approve', {
        params: { path: p },
        body: {
          ...(b.overrideFreeze ? { overrideFreeze: true } : {}),
          ...(b.overrideReason ? { overrideReason: b.overrideReason } : {}),
          ...(b.comment ? { comment: b.comment } : {}),
          // The plan the caller was shown (required by the contract): the controller refuses (409)
          // to approve a plan recreated under this name since, even one authorised above.
          uid: b.uid,
        },
      }),
    );
    this.logger.info(
      `promotion plan ${p.namespace}/${p.name} approved by ${user}${b.overrideFreeze ? ` (overriding freezes and line stops: ${b.overrideReason})` : ''}`,
    );
    return { plan: out, progress: planProgress(out) };
  }

  /**
   * Lets the next wave of a fleet plan start after a pause (the controller appends a continuation
   * naming the caller). Here: promotion.continue for every application the plan promotes (for a
   * rollback plan, every application it restores), as approve checks its permission. At the
   * controller: the RBAC verb continue for the target environment, and that the wave waits.
   */
  async continue(c: Caller, params: unknown, body?: unknown): Promise<PlanDetails> {
    const p = parseInput(PlanParams, params, 'plan reference');
    const b = parseInput(ContinueBody, body, 'request body');
    await this.requireBasic(c, promotionPlanReadPermission); // the plan is read first
    const user = identityOf(c);
    const plan = await this.readPlan(c, p.namespace, p.name);
    await this.requireForApps(
      c,
      promotionContinuePermission,
      p.namespace,
      isRollback(plan)
        ? await this.rollbackApplications(c, p.namespace, plan)
        : plan.spec.candidates.map((x) => x.application),
      `${isRollback(plan) ? 'rollback plan' : 'plan'} ${p.namespace}/${p.name}`,
    );
    const uid = b.uid ?? plan.metadata.uid;
    const out = await this.controller(p.namespace).call(await this.actorOf(c), (api) =>
      api.POST('/plans/{namespace}/{name}/continue', {
        params: { path: p },
        body: {
          ...(b.wave ? { wave: b.wave } : {}),
          ...(b.comment ? { comment: b.comment } : {}),
          // The plan the caller was shown, else the one authorised above: the controller refuses
          // (409) to continue a plan recreated under this name since.
          ...(uid ? { uid } : {}),
        },
      }),
    );
    const wave = continuedWave(out, { wave: b.wave, user })?.name;
    this.logger.info(`promotion plan ${p.namespace}/${p.name}: wave ${wave ?? '(waiting)'} continued by ${user}`);
    return { plan: out, progress: planProgress(out) };
  }

  /**
   * The applications a rollback plan restores, as the read model says (the controller's rule:
   * once started its own status, before that what the rolled-back plan wrote, narrowed to
   * spec.applications), the rolled-back plan read as the caller. Empty when neither can be read.
   */
  private async rollbackApplications(c: Caller, namespace: string, plan: PromotionPlan): Promise<string[]> {
    if (c.kind === 'port') return []; // no Backstage decision to make (see Caller)
    const original =
      plan.spec.rollbackOf && !plan.status?.apps?.length
        ? await this.readPlan(c, namespace, plan.spec.rollbackOf).catch((e: Error) => {
            if (e.name === 'NotFoundError') return undefined;
            throw e;
          })
        : undefined;
    return planProgress(plan, { rollbackOf: original }).affectedApplications;
  }

  /** Creates a rollback plan; needs promotion.rollback for every application the plan changed. */
  async rollback(c: Caller, params: unknown, body: unknown): Promise<PlanDetails> {
    const p = parseInput(PlanParams, params, 'plan reference');
    const b = parseInput(RollbackBody, body, 'request body');
    // Approved by the caller unless the body says approve: false (the route's documented default),
    // and an approval names the plan the caller reviewed, here as at the controller.
    const approve = b.approve ?? true;
    if (approve && !b.uid) throw new InputError(`invalid request body: uid: ${UID_REQUIRED}`);
    await this.requireBasic(c, promotionPlanReadPermission); // the plan is read first
    const user = identityOf(c);
    const plan = await this.readPlan(c, p.namespace, p.name);
    const changed = rollbackApplications({ spec: {} }, plan);
    await this.requireForApps(
      c,
      promotionRollbackPermission,
      p.namespace,
      changed.length ? changed : plan.spec.candidates.map((x) => x.application),
    );
    const out = await this.controller(p.namespace).call(await this.actorOf(c), (api) =>
      api.POST('/plans/{namespace}/{name}/rollback', {
        params: { path: p },
        // The plan the caller was shown: the controller refuses (409) to roll back a plan recreated
        // under this name since, even one authorised above.
        body: { approve, ...(b.name ? { name: b.name } : {}), ...(b.uid ? { uid: b.uid } : {}) },
      }),
    );
    this.logger.info(`rollback ${out.metadata.name} of ${p.namespace}/${p.name} created by ${user}`);
    return { plan: out, progress: planProgress(out) };
  }

  /**
   * One write to a custom resource (create, spec merge, delete) through the controller's
   * POST /resources, for a Port run only: there is no Backstage permission for arbitrary kinds, so
   * the controller's decision as the run's identity (kind allow-list, SubjectAccessReview, the
   * impersonated write) is the whole authorisation.
   */
  async applyResource(c: Caller, body: unknown): Promise<ResourceActionResult> {
    if (c.kind !== 'port') throw new NotAllowedError('resource actions are open to Port runs only');
    const b = parseInput(ResourceActionBody, body, 'request body');
    const r = await this.controller(b.namespace).call(await this.actorOf(c), (api) =>
      api.POST('/resources', { body: b }),
    );
    this.logger.info(`${r.kind} ${r.namespace}/${r.name}: ${b.operation} by ${identityOf(c)}`);
    return r;
  }

  /**
   * Proposes Applications for what runs in a flow's Environments, as the caller: promotion.adopt
   * here, RBAC create on applications at the controller, which reads the clusters and writes nothing.
   */
  async proposeAdoption(c: Caller, body: unknown): Promise<AdoptionProposal> {
    const b = parseInput(AdoptBody, body, 'request body');
    await this.requireBasic(c, promotionAdoptPermission);
    const namespace = this.ns(b.namespace);
    const out = await this.controller(namespace).call(await this.actorOf(c), (api) =>
      api.POST('/adopt', { body: { ...b, ...(namespace ? { namespace } : {}) } }),
    );
    this.logger.info(
      `adoption proposed in ${out.namespace} (flow ${out.flow}) for ${identityOf(c)}: ${out.resources.length} resource(s)`,
    );
    return out;
  }

  /** Where the line is stopped, in namespaces the user may list LineStops (the controller filters). */
  async lineStops(c: Caller, q: unknown): Promise<LineStopList> {
    const { namespace } = parseInput(NamespaceQuery, q, 'query');
    await this.requireBasic(c, promotionPlanReadPermission);
    const ns = this.ns(namespace);
    return this.controller(ns).call(await this.actorOf(c), (api) =>
      api.GET('/linestops', { params: { query: { namespace: ns } } }),
    );
  }

  /**
   * Stops the line as the caller: promotion.line.stop here, RBAC create on linestops at the
   * controller, which records the caller's identity as stoppedBy (never a name from the body).
   */
  async stopLine(c: Caller, body: unknown): Promise<LineStopView> {
    const b = parseInput(StopLineBody, body, 'request body');
    await this.requireBasic(c, promotionLineStopPermission);
    const namespace = this.ns(b.namespace);
    const out = await this.controller(namespace).call(await this.actorOf(c), (api) =>
      api.POST('/linestops', { body: { ...b, ...(namespace ? { namespace } : {}) } }),
    );
    this.logger.info(`line stopped in ${out.namespace} (${out.name}) by ${identityOf(c)}: ${out.reason}`);
    return out;
  }

  /** Lifts a stop as the caller: promotion.line.stop here, RBAC delete on linestops at the controller. */
  async liftLine(c: Caller, params: unknown): Promise<LiftResult> {
    const p = parseInput(LineStopParams, params, 'path');
    await this.requireBasic(c, promotionLineStopPermission);
    const out = await this.controller(p.namespace).call(await this.actorOf(c), (api) =>
      api.POST('/linestops/{namespace}/{name}/lift', { params: { path: p } }),
    );
    this.logger.info(`line stop ${out.lifted} lifted by ${identityOf(c)}`);
    return out;
  }

  /** Release status: a plan's progress, or an application's versions per environment. */
  async releaseStatus(
    c: Caller,
    q: { namespace?: string; plan?: string; application?: string },
  ): Promise<{ plan?: PlanDetails['progress']; application?: ApplicationInfo }> {
    if (!!q.plan === !!q.application) throw new InputError('pass exactly one of plan or application');
    const namespace = this.ns(q.namespace);
    if (q.plan) {
      if (!namespace) throw new InputError('namespace is required');
      return { plan: (await this.getPlan(c, { namespace, name: q.plan })).progress };
    }
    const apps = await this.applications(c, { namespace });
    const a = apps.items.find((x) => x.name === q.application);
    if (!a) throw new NotFoundError(`Application ${namespace ?? ''}/${q.application} not found`);
    return { application: a };
  }
}
