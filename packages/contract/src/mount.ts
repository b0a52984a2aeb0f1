import type { Route } from './routes.js';

/** The part of an express Router (or app) that {@link mountRoutes} needs: no express import here. */
export interface RouteTarget<Req, Res> {
  get(path: string, handler: (req: Req, res: Res) => Promise<void>): unknown;
  post(path: string, handler: (req: Req, res: Res) => Promise<void>): unknown;
}

/** `/plans/{namespace}/{name}` → `/plans/:namespace/:name`. */
export const expressPath = (openApiPath: string) => openApiPath.replace(/\{([^}]+)\}/g, ':$1');

/**
 * Mounts every route of a route table on a router from one handler per operationId, answering with
 * the route's status (200/201) and the handler's result as JSON. The handler map is typed by the
 * table's operationIds (a missing one fails to compile); at start-up a route without a handler or a
 * handler without a route throws, so the server can never drift from the contract it publishes.
 * Errors propagate to the router's error handler (express-promise-router / express 5).
 */
export function mountRoutes<
  Id extends string,
  Req,
  Res extends { status(code: number): { json(body: unknown): unknown } },
>(router: RouteTarget<Req, Res>, routes: readonly Route[], handlers: Record<Id, (req: Req) => Promise<unknown>>): void {
  const byId = new Map<string, (req: Req) => Promise<unknown>>(Object.entries(handlers));
  const unserved = routes.filter((r) => !byId.has(r.operationId)).map((r) => r.operationId);
  const unknown = [...byId.keys()].filter((id) => !routes.some((r) => r.operationId === id));
  if (unserved.length || unknown.length)
    throw new Error(
      `route table and handlers differ: ${[
        unserved.length ? `no handler for ${unserved.join(', ')}` : '',
        unknown.length ? `no route for handler ${unknown.join(', ')}` : '',
      ]
        .filter(Boolean)
        .join('; ')}`,
    );
  for (const route of routes) {
    const handle = byId.get(route.operationId) as (req: Req) => Promise<unknown>;
    router[route.method](expressPath(route.path), async (req, res) => {
      res.status(route.status).json(await handle(req));
    });
  }
}
