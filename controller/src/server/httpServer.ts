import type { Server } from 'node:http';
import {
  AdoptBody,
  AlertmanagerWebhookBody,
  CONTROLLER_API,
  type ControllerOperationId,
  DoraQuery,
  HistoryQuery,
  LineStopParams,
  mountRoutes,
  PlansQuery,
  StopLineBody,
} from '@kpromo/contract';
import express, { type NextFunction, type Request, type Response } from 'express';
import { proposeAdoptionFor } from '../api/adopt.js';
import { type LineStopAlertSettings, receiveAlerts } from '../api/alertReceiver.js';
import { type ApiContext, ApiError } from '../api/context.js';
import { continuePlan } from '../api/continueWave.js';
import { listFlows } from '../api/flows.js';
import { doraInsights, listHistory } from '../api/history.js';
import { liftLineStop, lineStopView, listLineStops, stopLine } from '../api/lineStops.js';
import { listPlansPage } from '../api/planList.js';
import {
  approvePlan,
  createPlan,
  diffWithImages,
  getPlan,
  listApplications,
  listEnvironments,
  rollbackPlan,
} from '../api/promotions.js';
import { applyResource } from '../api/resources.js';
import { authenticateHttp, type HttpAuthDeps, HttpAuthFailure, refusalHeaders } from '../auth/httpAuth.js';
import type { Caller } from '../auth/identity.js';
import { LINE_STOP_ALERT_DEFAULTS } from '../config.js';
import type { Logger } from '../observability/logger.js';
import { metricsRegistry } from '../observability/metrics.js';
import { SampledLog } from '../observability/sampledLog.js';
import {
  ApplicationsQuery,
  ApproveBody,
  ContinueBody,
  CreatePlanBody,
  DiffQuery,
  NamespaceQuery,
  PlanParams,
  parseInput,
  ResourceActionBody,
  RollbackBody,
} from './schemas.js';

export interface ServerDeps {
  api: ApiContext;
  auth: HttpAuthDeps;
  /** Serve /metrics without a token (auth.anonymousMetrics); otherwise RBAC `get` on the /metrics URL. */
  anonymousMetrics?: boolean;
  log?: Logger;
  /** Liveness (event loop, informers, lease renewals), for the kubelet's liveness probe. */
  healthy(): { ok: boolean; problems?: string[]; [k: string]: unknown };
  ready(): { ready: boolean; detail: Record<string, unknown> };
  /** How Alertmanager notifications stop the line (config lineStopAlerts, lineStopNamespace); the defaults when absent. */
  lineStopAlerts?: LineStopAlertSettings;
}

type Authed = Request & { caller?: Caller };
const callerOf = (req: Request): Caller => (req as Authed).caller!;

/** Why /readyz says no, in a few words; what exactly goes to the log. */
function notReadyReason(detail: Record<string, unknown>): string {
  if (detail.synced === false) return 'caches not synced';
  if (Array.isArray(detail.errors) && detail.errors.length) return 'informer errors';
  return 'starting';
}

/**
 * Logs `what` when its state changes (ready -> not ready, other problems), not on every probe: a
 * kubelet, or anyone, polling /readyz must not write a line each time.
 */
function onChange(log: Logger | undefined, level: 'info' | 'warn') {
  let last: string | undefined;
  return (state: string, fields: object, message: string) => {
    if (state === last) return;
    last = state;
    log?.[level](fields, message);
  };
}

/**
 * HTTP front end: health, metrics and a thin JSON API over api/ (the MCP server calls the same
 * functions). Only /healthz and /readyz are anonymous; every other route needs a bearer token, and
 * api/ authorises each call as that caller.
 */
export function createApp(d: ServerDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  mountProbes(app, d);
  const authenticate = authenticator(d);
  if (d.anonymousMetrics)
    app.get('/metrics', async (_req, res) => {
      res.type(metricsRegistry.contentType).send(await metricsRegistry.metrics());
    });
  else
    app.get('/metrics', authenticate, async (req, res, next) => {
      try {
        if (!(await d.auth.authorizer.check(callerOf(req), { verb: 'get', path: '/metrics' })).allowed)
          throw new ApiError(403, `forbidden: ${callerOf(req).username} may not get /metrics (Kubernetes RBAC)`);
        res.type(metricsRegistry.contentType).send(await metricsRegistry.metrics());
      } catch (e) {
        next(e);
      }
    });
  app.use('/api', authenticate, express.json({ limit: '1mb' }));
  app.use('/api', auditWrites(d.log));
  app.use('/api/v1', apiRoutes(d));
  app.use('/api', (req, res) => {
    res.status(404).json({ error: `no such API route: ${req.method} ${req.baseUrl}${req.path}` });
  });
  app.use(errorHandler(d.log));
  return app;
}

/**
 * /healthz and /readyz. Anonymous probes answer a short state; the reasons (informer errors, shard
 * namespaces, …) are internal and go to the log when they change.
 */
function mountProbes(app: express.Express, d: ServerDeps): void {
  const healthLog = onChange(d.log, 'warn');
  app.get('/healthz', (_req, res) => {
    const h = d.healthy();
    healthLog(h.ok ? 'ok' : JSON.stringify(h.problems ?? []), h, h.ok ? 'healthy again' : 'unhealthy (/healthz 503)');
    if (h.ok) return void res.json({ ok: true });
    res.status(503).json({ ok: false, reason: 'unhealthy' });
  });
  const readyLog = onChange(d.log, 'info');
  app.get('/readyz', (_req, res) => {
    const r = d.ready();
    const reason = r.ready ? undefined : notReadyReason(r.detail);
    readyLog(reason ?? 'ready', r.detail, r.ready ? 'ready' : `not ready (/readyz 503): ${reason}`);
    if (!r.ready) return void res.status(503).json({ ready: false, reason });
    // Only whether the caches are synced and this replica leads: no names, errors or namespaces.
    res.json({ ready: true, detail: { synced: r.detail.synced === true, leader: r.detail.leader === true } });
  });
}

/**
 * The middleware that authenticates the bearer token and sets the caller. Refusals a stranger can
 * cause (no token, a bad one, too many) are logged sampled; refusals of an authenticated caller
 * (impersonation) are audit lines, always written.
 */
function authenticator(d: ServerDeps) {
  const refusals =
    d.auth.refusals ?? new SampledLog(d.log, { lines: 10, intervalMs: 10_000, what: 'requests refused' });
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      (req as Authed).caller = await authenticateHttp(d.auth, req.headers, req.socket.remoteAddress);
      next();
    } catch (e) {
      if (!(e instanceof HttpAuthFailure)) return next(e);
      res.set(refusalHeaders(e, 'kpromo', !!req.headers.authorization));
      const line = {
        audit: true,
        user: e.authenticated?.username,
        method: req.method,
        path: req.path,
        status: e.status,
        result: 'refused',
        ...(e.detail ? { err: e.detail } : {}),
      };
      if (e.authenticated) d.log?.warn(line, e.message);
      else refusals.warn({ ...line, source: req.socket.remoteAddress }, e.message);
      res.status(e.status).json({ error: e.message });
    }
  };
}

/** Writes are logged with the authenticated identity (and the proxy it came through). */
function auditWrites(log: Logger | undefined) {
  return (req: Request, _res: Response, next: NextFunction) => {
    if (req.method !== 'GET') {
      const c = callerOf(req);
      log?.info(
        {
          audit: true,
          user: c.username,
          ...(c.via ? { via: c.via.username } : {}),
          ...(c.agent ? { agent: c.agent.name } : {}),
          method: req.method,
          path: req.path,
        },
        'api write',
      );
    }
    next();
  };
}

/**
 * The routes of the published contract (CONTROLLER_API), each from its operationId: a route
 * without a handler, or a handler without a route, fails at start-up (and the map's type at
 * compile time). Every query, body and path is checked against its schema (schemas.ts) first: a 400
 * naming the field.
 */
function apiRoutes(d: ServerDeps): express.Router {
  const nsQuery = (req: Request) => parseInput(NamespaceQuery, req.query, 'query');
  const planParams = (req: Request) => parseInput(PlanParams, req.params, 'path');
  const api = express.Router();
  mountRoutes<ControllerOperationId, Request, Response>(api, CONTROLLER_API.routes, {
    listApplications: async (req) =>
      listApplications(d.api, callerOf(req), parseInput(ApplicationsQuery, req.query, 'query')),
    listEnvironments: async (req) => ({ items: await listEnvironments(d.api, callerOf(req), nsQuery(req)) }),
    diff: async (req) => diffWithImages(d.api, callerOf(req), parseInput(DiffQuery, req.query, 'query')),
    listFlows: async (req) => listFlows(d.api, callerOf(req), nsQuery(req)),
    listPlans: async (req) => listPlansPage(d.api, callerOf(req), parseInput(PlansQuery, req.query, 'query')),
    // Identity never comes from the body: the approver is the authenticated caller.
    createPlan: async (req) => {
      const b = parseInput(CreatePlanBody, req.body, 'request body');
      return createPlan(d.api, callerOf(req), { ...b, approve: b.approve === true });
    },
    getPlan: async (req) => {
      const p = planParams(req);
      return getPlan(d.api, callerOf(req), p.namespace, p.name);
    },
    approvePlan: async (req) => {
      const p = planParams(req);
      const b = parseInput(ApproveBody, req.body, 'request body');
      return approvePlan(d.api, callerOf(req), p.namespace, p.name, {
        overrideFreeze: b.overrideFreeze === true,
        overrideReason: b.overrideReason,
        comment: b.comment,
        uid: b.uid,
      });
    },
    // The user recorded in the continuation is the authenticated caller, never a body field.
    continuePlan: async (req) => {
      const p = planParams(req);
      const b = parseInput(ContinueBody, req.body, 'request body');
      return continuePlan(d.api, callerOf(req), p.namespace, p.name, {
        wave: b.wave,
        comment: b.comment,
        uid: b.uid,
      });
    },
    rollbackPlan: async (req) => {
      const p = planParams(req);
      const b = parseInput(RollbackBody, req.body, 'request body');
      return rollbackPlan(d.api, callerOf(req), p.namespace, p.name, {
        approve: b.approve === true,
        rollbackName: b.name,
        // The plan the caller reviewed (required with approve): another uid is a 409.
        uid: b.uid,
      });
    },
    // Release history and DORA keys: only namespaces where the caller may list PromotionPlans (api/history.ts).
    listHistory: async (req) => listHistory(d.api, callerOf(req), parseInput(HistoryQuery, req.query, 'query')),
    doraInsights: async (req) => doraInsights(d.api, callerOf(req), parseInput(DoraQuery, req.query, 'query')),
    // Onboarding: a proposal to review, never a write (api/adopt.ts).
    proposeAdoption: async (req) =>
      proposeAdoptionFor(d.api, callerOf(req), parseInput(AdoptBody, req.body, 'request body')),
    // One custom resource of a kind opened by resourceKinds, written as the caller (api/resources.ts).
    applyResource: async (req) =>
      applyResource(d.api, callerOf(req), parseInput(ResourceActionBody, req.body, 'request body')),
    // Stop the line (api/lineStops.ts): the stopper recorded is the caller, never a body field.
    listLineStops: async (req) => ({
      items: (await listLineStops(d.api, callerOf(req), nsQuery(req).namespace)).map(lineStopView),
    }),
    stopLine: async (req) =>
      lineStopView(await stopLine(d.api, callerOf(req), parseInput(StopLineBody, req.body, 'request body'))),
    // Alertmanager's webhook: each stop and lift authorised as the caller (its bearer token's identity).
    receiveAlerts: async (req) =>
      receiveAlerts(
        d.api,
        callerOf(req),
        parseInput(AlertmanagerWebhookBody, req.body, 'request body'),
        d.lineStopAlerts ?? LINE_STOP_ALERT_DEFAULTS,
      ),
    liftLineStop: async (req) => {
      const p = parseInput(LineStopParams, req.params, 'path');
      await liftLineStop(d.api, callerOf(req), p.namespace, p.name);
      return { lifted: `${p.namespace}/${p.name}` };
    },
  });
  return api;
}

/** API errors as JSON: a refusal's message; a 5xx in a few words, its detail in the log. */
function errorHandler(log: Logger | undefined) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (err instanceof ApiError && err.status < 500) return void res.status(err.status).json({ error: err.message });
    if (err instanceof ApiError) {
      // A 5xx says what could not be done in a few words (the part before the parenthesis); the
      // detail (apiserver errors, addresses) goes to the log.
      log?.warn(
        { status: err.status, method: req.method, path: req.path, err: err.message },
        'api request unavailable',
      );
      if (err.status === 503) res.setHeader('Retry-After', '5');
      return void res.status(err.status).json({ error: `${err.message.split(' (')[0].slice(0, 200)}; retry later` });
    }
    if ((err as { type?: string }).type === 'entity.parse.failed')
      return void res.status(400).json({ error: 'request body is not valid JSON' });
    if ((err as { type?: string }).type === 'entity.too.large')
      return void res.status(413).json({ error: 'request body too large (limit 1mb)' });
    // The body parser's and router's other refusals (unsupported charset or encoding, an undecodable
    // path parameter, …) carry a 4xx status and a message meant for the client.
    const e = err as { status?: unknown; expose?: unknown; message?: unknown };
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500)
      return void res
        .status(e.status)
        .json({ error: e.expose === true && typeof e.message === 'string' ? e.message : 'bad request' });
    log?.error({ err: err instanceof Error ? err.message : String(err) }, 'api request failed');
    res.status(500).json({ error: 'internal error; see the controller log' });
  };
}

export function listen(app: express.Express, host: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = app.listen(port, host, (err?: Error) => (err ? reject(err) : resolve(srv)));
  });
}
