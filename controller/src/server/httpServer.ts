import type { Server } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { type ApiContext, ApiError } from '../api/context.js';
import {
  approvePlan,
  createPlan,
  diff,
  getPlan,
  listApplications,
  listEnvironments,
  listPlans,
  rollbackPlan,
} from '../api/promotions.js';
import { metricsRegistry } from '../observability/metrics.js';

export interface ServerDeps {
  api: ApiContext;
  healthy(): boolean;
  ready(): { ready: boolean; detail: Record<string, unknown> };
}

const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined);
const list = (v: unknown) =>
  typeof v === 'string' && v ? v.split(',') : Array.isArray(v) ? (v as string[]) : undefined;

/** HTTP front end: health, metrics and a thin JSON API over api/ (the MCP server calls the same functions). */
export function createApp(d: ServerDeps): express.Express {
  const app = express();
  app.use(express.json({ limit: '1mb' }));
  app.get('/healthz', (_req, res) => {
    res.status(d.healthy() ? 200 : 500).json({ ok: d.healthy() });
  });
  app.get('/readyz', (_req, res) => {
    const r = d.ready();
    res.status(r.ready ? 200 : 503).json(r);
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metricsRegistry.contentType).send(await metricsRegistry.metrics());
  });
  app.get('/api/v1/applications', (req, res) => {
    res.json({ items: listApplications(d.api, { namespace: str(req.query.namespace) }) });
  });
  app.get('/api/v1/environments', (req, res) => {
    res.json({ items: listEnvironments(d.api, { namespace: str(req.query.namespace) }) });
  });
  app.get('/api/v1/diff', async (req, res) => {
    const q = req.query;
    res.json(
      await diff(d.api, {
        namespace: str(q.namespace),
        flow: str(q.flow),
        from: str(q.from) ?? '',
        to: str(q.to) ?? '',
        applications: list(q.applications),
        teams: list(q.teams),
        tagPattern: str(q.tagPattern),
      }),
    );
  });
  app.get('/api/v1/plans', (req, res) => {
    res.json({ items: listPlans(d.api, { namespace: str(req.query.namespace) }) });
  });
  app.post('/api/v1/plans', async (req, res) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    const r = await createPlan(d.api, {
      namespace: str(b.namespace),
      flow: str(b.flow),
      from: str(b.from) ?? '',
      to: str(b.to) ?? '',
      name: str(b.name),
      applications: list(b.applications),
      teams: list(b.teams),
      matchLabels: b.matchLabels as Record<string, string> | undefined,
      tagPattern: str(b.tagPattern),
      approve: b.approve === true,
      approvedBy: str(b.approvedBy),
    });
    res.status(201).json(r);
  });
  app.get('/api/v1/plans/:ns/:name', async (req, res) => {
    res.json(await getPlan(d.api, req.params.ns, req.params.name));
  });
  app.post('/api/v1/plans/:ns/:name/approve', async (req, res) => {
    res.json(
      await approvePlan(d.api, req.params.ns, req.params.name, str((req.body as Record<string, unknown>)?.approvedBy)),
    );
  });
  app.post('/api/v1/plans/:ns/:name/rollback', async (req, res) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    res.status(201).json(
      await rollbackPlan(d.api, req.params.ns, req.params.name, {
        approve: b.approve === true,
        approvedBy: str(b.approvedBy),
        rollbackName: str(b.name),
      }),
    );
  });
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (err instanceof ApiError) res.status(err.status).json({ error: err.message });
    else res.status(500).json({ error: err instanceof Error ? err.message : String(err) });
  });
  return app;
}

export function listen(app: express.Express, host: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = app.listen(port, host, (err?: Error) => (err ? reject(err) : resolve(srv)));
  });
}
