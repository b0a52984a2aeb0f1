import { describe, expect, it } from 'vitest';
import { BACKEND_API, CONTROLLER_API, expressPath, mountRoutes } from '../src/index.js';

// A router that records what was mounted and lets a test call a mounted handler.
function recorder() {
  const mounted = new Map<string, (req: unknown, res: Res) => Promise<void>>();
  const target = {
    get: (path: string, h: (req: unknown, res: Res) => Promise<void>) => mounted.set(`GET ${path}`, h),
    post: (path: string, h: (req: unknown, res: Res) => Promise<void>) => mounted.set(`POST ${path}`, h),
  };
  return { target, mounted };
}
interface Res {
  status(code: number): { json(body: unknown): unknown };
}

const handlersFor = (ids: string[]) => Object.fromEntries(ids.map((id) => [id, async () => ({ op: id })]));

describe('mountRoutes', () => {
  it('mounts every route of the table at its express path and answers with its status', async () => {
    const { target, mounted } = recorder();
    mountRoutes(target, BACKEND_API.routes, handlersFor(BACKEND_API.routes.map((r) => r.operationId)));
    expect([...mounted.keys()].sort()).toEqual(
      BACKEND_API.routes.map((r) => `${r.method.toUpperCase()} ${expressPath(r.path)}`).sort(),
    );
    expect(mounted.has('POST /plans/:namespace/:name/approve')).toBe(true);
    const answered: Array<[number, unknown]> = [];
    const res: Res = { status: (code) => ({ json: (body) => answered.push([code, body]) }) };
    await mounted.get('POST /plans')?.({}, res);
    await mounted.get('GET /plans/:namespace/:name')?.({}, res);
    expect(answered).toEqual([
      [201, { op: 'createPlan' }],
      [200, { op: 'getPlan' }],
    ]);
  });

  it('refuses to start when a route has no handler or a handler no route', () => {
    const ids = CONTROLLER_API.routes.map((r) => r.operationId);
    expect(() => mountRoutes(recorder().target, CONTROLLER_API.routes, handlersFor(ids.slice(1)))).toThrow(
      `no handler for ${ids[0]}`,
    );
    expect(() =>
      mountRoutes(
        recorder().target,
        BACKEND_API.routes,
        handlersFor([...BACKEND_API.routes.map((r) => r.operationId), 'deleteAll']),
      ),
    ).toThrow('no route for handler deleteAll');
  });
});
