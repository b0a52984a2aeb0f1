import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiCallError, answer, backendApi, controllerApi } from '../src/index.js';

// A real HTTP server that echoes what reached it, or answers the error a test asks for.
let server: Server;
let base = '';
beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const fail = url.searchParams.get('limit');
      if (fail === '403') {
        res.writeHead(403, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: 'alice may not list plans in team-b' }));
      }
      if (fail === '409') {
        res.writeHead(409, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: { name: 'ConflictError', message: 'plan was recreated' } }));
      }
      if (fail === '502') {
        res.writeHead(502, { 'content-type': 'text/plain' });
        return res.end('bad gateway from the proxy');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          items: [],
          echo: { method: req.method, path: url.pathname, search: url.search, auth: req.headers.authorization, body },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const echoOf = (data: unknown) => (data as { echo: Record<string, string> }).echo;

describe('the typed clients derived from the contract', () => {
  it('fill path parameters encoded, send lists comma-separated, JSON bodies and the given headers', async () => {
    const api = controllerApi({ baseUrl: `${base}/api/v1/`, headers: { authorization: 'Bearer t-1' } });
    const get = echoOf(
      await answer(api.GET('/plans/{namespace}/{name}', { params: { path: { namespace: 'team-a', name: 'a b/c' } } })),
    );
    expect(get).toMatchObject({ method: 'GET', path: '/api/v1/plans/team-a/a%20b%2Fc', auth: 'Bearer t-1' });
    const list = echoOf(
      await answer(api.GET('/applications', { params: { query: { namespace: 'team-a', applications: 'cart,web' } } })),
    );
    expect(new URLSearchParams(list.search).get('applications')).toBe('cart,web');
    const post = echoOf(
      await answer(
        api.POST('/plans/{namespace}/{name}/approve', {
          params: { path: { namespace: 'team-a', name: 'p1' } },
          body: { comment: 'ok', uid: 'u-1' },
        }),
      ),
    );
    expect(post.method).toBe('POST');
    expect(JSON.parse(post.body)).toEqual({ comment: 'ok', uid: 'u-1' });
  });

  it("turn a refusal into ApiCallError with the server's status and message (both error body shapes)", async () => {
    const api = controllerApi({ baseUrl: `${base}/api/v1` });
    await expect(answer(api.GET('/plans', { params: { query: { limit: 403 } } }))).rejects.toEqual(
      new ApiCallError(403, 'alice may not list plans in team-b'),
    );
    const backend = backendApi({ baseUrl: `${base}/api/promotions` });
    const conflict = await answer(backend.GET('/plans', { params: { query: { limit: 409 } } })).catch((e) => e);
    expect(conflict).toBeInstanceOf(ApiCallError);
    expect(conflict).toMatchObject({ status: 409, errorName: 'ConflictError', message: 'plan was recreated' });
    await expect(answer(backend.GET('/plans', { params: { query: { limit: 502 } } }))).rejects.toMatchObject({
      status: 502,
      message: 'bad gateway from the proxy',
    });
  });

  it('let a network failure through for the caller to report as unreachable', async () => {
    const api = controllerApi({ baseUrl: 'http://127.0.0.1:9/api/v1' });
    const e = await answer(api.GET('/plans')).catch((x) => x);
    expect(e).not.toBeInstanceOf(ApiCallError);
    expect(e).toBeInstanceOf(Error);
  });
});
