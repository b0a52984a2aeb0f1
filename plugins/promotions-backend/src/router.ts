import type { HttpAuthService, LoggerService } from '@backstage/backend-plugin-api';
import express, { type NextFunction, type Request, type Response } from 'express';
import Router from 'express-promise-router';
import { createAssistantRouter } from './assistant/route.js';
import { createMcpProxy } from './mcpProxy.js';
import type { PortRunner } from './port.js';
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
  portRunner?: PortRunner;
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

  router.post('/port/webhook', express.raw({ type: '*/*', limit: '1mb' }), async (req, res) => {
    if (!o.portRunner)
      return void res
        .status(503)
        .json({ error: { name: 'NotConfigured', message: 'promotions.port is not configured' } });
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const work = await o.portRunner.prepare(raw, {
      signature: req.header('x-port-signature'),
      timestamp: req.header('x-port-timestamp'),
    });
    res.status(202).json({ accepted: true });
    void work();
  });

  router.use(express.json({ limit: '1mb' }));
  router.use('/assistant', createAssistantRouter({ service: s, httpAuth, logger: o.logger }));
  router.get('/environments', async (req, res) => void res.json(await s.environments(await caller(req), req.query)));
  router.get('/applications', async (req, res) => void res.json(await s.applications(await caller(req), req.query)));
  router.get('/diff', async (req, res) => void res.json(await s.diff(await caller(req), req.query)));
  router.get('/flows', async (req, res) => void res.json(await s.flows(await caller(req), req.query)));
  router.get('/plans', async (req, res) => void res.json(await s.listPlans(await caller(req), req.query)));
  router.post('/plans', async (req, res) => void res.status(201).json(await s.createPlan(await caller(req), req.body)));
  router.get('/history', async (req, res) => void res.json(await s.history(await caller(req), req.query)));
  router.get('/insights/dora', async (req, res) => void res.json(await s.dora(await caller(req), req.query)));
  router.get(
    '/plans/:namespace/:name',
    async (req, res) => void res.json(await s.getPlan(await caller(req), req.params)),
  );
  router.post(
    '/plans/:namespace/:name/approve',
    async (req, res) => void res.json(await s.approve(await caller(req), req.params, req.body)),
  );
  router.post(
    '/plans/:namespace/:name/rollback',
    async (req, res) => void res.status(201).json(await s.rollback(await caller(req), req.params, req.body)),
  );

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
