import type { HttpAuthService, LoggerService } from '@backstage/backend-plugin-api';
import { BACKEND_API, type BackendOperationId, mountRoutes } from '@kpromo/plugin-promotions-common';
import express, { type NextFunction, type Request, type Response } from 'express';
import Router from 'express-promise-router';
import { createMcpProxy } from './mcpProxy.js';
import type { Caller, PromotionsService } from './service.js';

const STATUS: Record<string, number> = {
  InputError: 400,
  AuthenticationError: 401,
  NotAllowedError: 403,
  NotFoundError: 404,
  ConflictError: 409,
  ServiceUnavailableError: 503,
};

export function createRouter(o: {
  service: PromotionsService;
  httpAuth: HttpAuthService;
  logger: LoggerService;
  /** Backend modules' routers (promotionsRoutesExtensionPoint), mounted before any body parser. */
  modules?: Array<{ path: string; router: express.Router }>;
}): express.Router {
  const { service: s, httpAuth } = o;
  const router = Router();
  const caller = async (req: Request): Promise<Caller> => ({
    kind: 'backstage',
    credentials: await httpAuth.credentials(req, { allow: ['user', 'service'] }),
  });

  // MCP first, before any body parser: the proxy forwards the raw body and streams the answer.
  router.all(
    '/mcp',
    createMcpProxy({
      mcpUrl: s.cfg.controller.mcpUrl,
      token: s.cfg.controller.token,
      httpAuth,
      logger: o.logger,
      actorOf: (credentials) => s.actorOf({ kind: 'backstage', credentials }),
      sessions: s.cfg.controller.mcpSessions,
    }),
  );

  for (const m of o.modules ?? []) router.use(m.path, m.router);

  router.use(express.json({ limit: '1mb' }));
  // The routes of the published contract (BACKEND_API), each from its operationId: a route without a
  // handler, or a handler without a route, fails at start-up (and the map's type at compile time).
  mountRoutes<BackendOperationId, Request, Response>(router, BACKEND_API.routes, {
    listEnvironments: async (req) => s.environments(await caller(req), req.query),
    listApplications: async (req) => s.applications(await caller(req), req.query),
    diff: async (req) => s.diff(await caller(req), req.query),
    listFlows: async (req) => s.flows(await caller(req), req.query),
    listPlans: async (req) => s.listPlans(await caller(req), req.query),
    createPlan: async (req) => s.createPlan(await caller(req), req.body),
    listHistory: async (req) => s.history(await caller(req), req.query),
    doraInsights: async (req) => s.dora(await caller(req), req.query),
    getPlan: async (req) => s.getPlan(await caller(req), req.params),
    approvePlan: async (req) => s.approve(await caller(req), req.params, req.body),
    continuePlan: async (req) => s.continue(await caller(req), req.params, req.body),
    rollbackPlan: async (req) => s.rollback(await caller(req), req.params, req.body),
    proposeAdoption: async (req) => s.proposeAdoption(await caller(req), req.body),
    listLineStops: async (req) => s.lineStops(await caller(req), req.query),
    stopLine: async (req) => s.stopLine(await caller(req), req.body),
    liftLineStop: async (req) => s.liftLine(await caller(req), req.params),
  });

  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const e = err as Error & { type?: string; status?: number };
    let status = STATUS[e.name] ?? 500;
    if (e.type === 'entity.parse.failed') status = 400;
    if (e.type === 'entity.too.large') status = 413;
    if (status >= 500) o.logger.error(`promotions request failed: ${e.message}`, e);
    res.status(status).json({ error: { name: e.name, message: e.message }, response: { statusCode: status } });
  });
  return router;
}
