import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { ConfigReader } from '@backstage/config';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPromotionsConfig } from '../src/config.js';
import { ControllerClient } from '../src/controllerClient.js';

// A stand-in controller: answers with the status the test asks for and records the request headers.
let server: Server;
let base = '';
const seen: IncomingHttpHeaders[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req.headers);
    const status = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('status') ?? 200);
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(status === 200 ? { items: [] } : { error: `controller says ${status}` }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('ControllerClient', () => {
  it('authenticates with the bearer token and names the identity and its groups', async () => {
    const c = new ControllerClient(async () => base, 'backstage-token-0123456789');
    await c.call(
      { user: 'user:default/alice', groups: ['group:default/team-a', 'group:default/ops', 'group:default/team-a'] },
      (api) => api.GET('/plans'),
    );
    expect(seen.at(-1)).toMatchObject({
      authorization: 'Bearer backstage-token-0123456789',
      'x-kpromo-user': 'user:default/alice',
      'x-kpromo-groups': 'group:default/team-a,group:default/ops',
    });
    await c.call({ user: 'port:carol@example.com' }, (api) => api.GET('/plans'));
    expect(seen.at(-1)?.['x-kpromo-user']).toBe('port:carol@example.com');
    expect(seen.at(-1)?.['x-kpromo-groups']).toBeUndefined();
  });

  it("maps the controller's 401/403/400/404/409 to Backstage errors with its message", async () => {
    const c = new ControllerClient(async () => base, 'backstage-token-0123456789');
    // The stand-in answers with the status named in the query (an extra parameter the contract lacks).
    const call = (status: number) =>
      c.call({ user: 'user:default/x' }, (api) =>
        api.GET('/plans', { params: { query: { status } as Record<string, number> } }),
      );
    await expect(call(401)).rejects.toMatchObject({
      name: 'AuthenticationError',
      message: expect.stringMatching(/promotions\.controller\.token.*controller says 401$/),
    });
    await expect(call(403)).rejects.toMatchObject({ name: 'NotAllowedError', message: 'controller says 403' });
    await expect(call(400)).rejects.toMatchObject({ name: 'InputError', message: 'controller says 400' });
    await expect(call(404)).rejects.toMatchObject({ name: 'NotFoundError', message: 'controller says 404' });
    await expect(call(409)).rejects.toMatchObject({ name: 'ConflictError', message: 'controller says 409' });
    await expect(call(500)).rejects.toMatchObject({
      name: 'ServiceUnavailableError',
      message: 'kpromo controller answered 500: controller says 500',
    });
  });
});

describe('readPromotionsConfig', () => {
  const read = (controller: Record<string, string>) =>
    readPromotionsConfig(new ConfigReader({ promotions: { controller } })).controller;

  it('reads controller.token, and the deprecated mcpToken when token is unset', () => {
    expect(read({ token: 'a-token', mcpToken: 'old' })).toMatchObject({ token: 'a-token' });
    expect(read({ token: 'a-token', mcpToken: 'old' }).tokenFromDeprecatedKey).toBeUndefined();
    expect(read({ mcpToken: 'old' })).toMatchObject({ token: 'old', tokenFromDeprecatedKey: true });
    expect(read({}).token).toBeUndefined();
  });
});
