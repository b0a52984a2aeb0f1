import dns from 'node:dns';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createBackendModule } from '@backstage/backend-plugin-api';
import { mockCredentials, type TestBackend } from '@backstage/backend-test-utils';
import { ConfigReader } from '@backstage/config';
import { promotionsModulePort } from '@kpromo/plugin-promotions-backend-module-port';
import { isNamespaceName, namespaceProblem } from '@kpromo/plugin-promotions-common';
import {
  type PromotionsControllerLocateRequest,
  promotionsControllerLocatorExtensionPoint,
} from '@kpromo/plugin-promotions-node';
import { startBackstageTestBackend } from '@kpromo/test-harness/backstage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPromotionsConfig } from '../src/config.js';
import { promotionsPlugin } from '../src/index.js';

// Issue 31, point 4: "the documented per-namespace controller locator leaks the backend's token".
// The locator documented before built `http://kpromo-controller.${namespace}:8080` from the request,
// and namespaces could contain dots, so `?namespace=evil.attacker.test` sent the backend's bearer
// token to kpromo-controller.evil.attacker.test, a host the caller names. Here the attacker's DNS is
// played by a lookup that resolves every kpromo-controller.* name to one local server, which records
// the Host each request was meant for, so a request to the attacker's domain is seen, token and all.

const ALICE = 'user:default/alice';
const TOKEN = 'backend-token-must-not-leak-0123456789';
const ATTACKER = /\.attacker\.test(:\d+)?$/;

let server: Server;
let port = 0;
const received: Array<{ host?: string; url?: string; headers: IncomingHttpHeaders }> = [];
const originalLookup = dns.lookup;

/** Requests that reached a host the attacker controls. */
const leaked = () => received.filter((r) => ATTACKER.test(r.host ?? ''));

beforeAll(async () => {
  // "The attacker's DNS": kpromo-controller.<anything> resolves to the local recording server.
  const lookup = ((host: string, options: unknown, callback: unknown) => {
    const cb = (typeof options === 'function' ? options : callback) as (...a: unknown[]) => void;
    const opts = (typeof options === 'object' && options) || {};
    if (host.startsWith('kpromo-controller.'))
      return (opts as { all?: boolean }).all
        ? cb(null, [{ address: '127.0.0.1', family: 4 }])
        : cb(null, '127.0.0.1', 4);
    return (originalLookup as (...a: unknown[]) => void)(host, options, callback);
  }) as typeof dns.lookup;
  dns.lookup = lookup;
  server = createServer((req, res) => {
    received.push({ host: req.headers.host, url: req.url, headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ items: [] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  dns.lookup = originalLookup;
  await new Promise<void>((r) => server.close(() => r()));
});

async function call(base: string, path: string, init: RequestInit = {}) {
  const res = await fetch(`${base}/api/promotions${path}`, {
    ...init,
    headers: {
      authorization: mockCredentials.user.header(ALICE),
      ...(init.body ? { 'content-type': 'application/json' } : {}),
      ...(init.headers as Record<string, string> | undefined),
    },
  });
  const text = await res.text();
  return { status: res.status, json: (text ? JSON.parse(text) : {}) as { error?: { name: string; message: string } } };
}

const NOT_A_NAMESPACE =
  /namespace: "evil\.attacker\.test" is not a Kubernetes namespace name \(RFC 1123 label: lowercase letters, digits and "-", starting and ending with a letter or digit, at most 63 characters\)/;

describe('the shared namespace check (promotions-common)', () => {
  it('accepts RFC 1123 labels only', () => {
    for (const ok of ['kpromo', 'team-a', 'a', '0', 'a1-b2', 'x'.repeat(63)])
      expect(isNamespaceName(ok), ok).toBe(true);
    for (const bad of [
      'evil.attacker.test',
      'a.b',
      'Team',
      '-a',
      'a-',
      '',
      'a_b',
      'a/b',
      'x'.repeat(64),
      'a:80',
      'a@b',
    ])
      expect(isNamespaceName(bad), bad).toBe(false);
    expect(isNamespaceName(undefined)).toBe(false);
    expect(namespaceProblem('a.b')).toBe(
      'namespace: "a.b" is not a Kubernetes namespace name (RFC 1123 label: lowercase letters, digits and "-", starting and ending with a letter or digit, at most 63 characters)',
    );
  });
});

describe('a module locator built the documented way (from the namespace) cannot leak the token', () => {
  let backend: TestBackend;
  let base = '';
  const asked: PromotionsControllerLocateRequest[] = [];
  const documentedLocator = createBackendModule({
    pluginId: 'promotions',
    moduleId: 'per-namespace-controllers',
    register(env) {
      env.registerInit({
        deps: { locator: promotionsControllerLocatorExtensionPoint },
        async init({ locator }) {
          locator.setControllerLocator({
            // The example the docs used to show (with the test server's port instead of 8080).
            locate: async (request) => {
              asked.push(request);
              return { baseUrl: `http://kpromo-controller.${request.namespace ?? 'kpromo'}:${port}` };
            },
          });
        },
      });
    },
  });

  beforeAll(async () => {
    ({ backend, base } = await startBackstageTestBackend({
      features: [promotionsPlugin, documentedLocator, promotionsModulePort],
      controller: {
        token: TOKEN,
        defaultNamespace: 'kpromo',
        mcpUrl: `http://kpromo-controller.kpromo:${port}/mcp`,
        // The only places the token may go, whatever the locator answers.
        allowedBaseUrls: [`http://kpromo-controller.kpromo:${port}`, `http://kpromo-controller.team-a:${port}`],
      },
      promotions: { port: { clientId: 'id', clientSecret: 'port-secret-0123456789' } },
    }));
  });
  afterAll(() => backend?.stop());

  it('refuses a namespace that is not a DNS label with 400 before the locator is asked or the token sent', async () => {
    const before = { asked: asked.length, received: received.length };
    const answers: Array<{ path: string; status: number; json: { error?: { name: string; message: string } } }> = [];
    for (const [path, init] of [
      ['/environments?namespace=evil.attacker.test', {}],
      ['/applications?namespace=evil.attacker.test', {}],
      ['/plans?namespace=evil.attacker.test', {}],
      ['/diff?namespace=evil.attacker.test&from=dev&to=stable', {}],
      ['/history?namespace=evil.attacker.test', {}],
      ['/plans/evil.attacker.test/p1', {}],
      ['/plans/evil.attacker.test/p1/approve', { method: 'POST', body: '{}' }],
      ['/plans/evil.attacker.test/p1/rollback', { method: 'POST', body: '{}' }],
      [
        '/plans',
        { method: 'POST', body: JSON.stringify({ namespace: 'evil.attacker.test', from: 'dev', to: 'stable' }) },
      ],
    ] as Array<[string, RequestInit]>)
      answers.push({ path, ...(await call(base, path, init)) });
    // Before the fix these reached kpromo-controller.evil.attacker.test with the backend's token.
    expect(leaked().map((r) => `${r.host} ${r.headers.authorization}`)).toEqual([]);
    for (const r of answers) {
      expect(r.status, `${r.path}: ${JSON.stringify(r.json)}`).toBe(400);
      expect(r.json.error?.name).toBe('InputError');
      expect(r.json.error?.message, r.path).toMatch(NOT_A_NAMESPACE);
    }
    expect({ asked: asked.length, received: received.length }).toEqual(before);
  });

  it('refuses it in the actions registry (MCP tools of mcp-actions-backend) too', async () => {
    const before = received.length;
    const res = await fetch(`${base}/api/promotions/.backstage/actions/v1/actions/promotions:rollback/invoke`, {
      method: 'POST',
      headers: { authorization: mockCredentials.user.header(ALICE), 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: 'evil.attacker.test', plan: 'p1' }),
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toMatch(/is not a Kubernetes namespace name/);
    expect(received.length).toBe(before);
  });

  it('refuses it in the MCP proxy (tool arguments and the mirrored header) before going upstream', async () => {
    const before = received.length;
    const body = {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'list', arguments: { namespace: 'evil.attacker.test' } },
    };
    const r = await call(base, '/mcp', {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream' },
      body: JSON.stringify(body),
    });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({
      id: 7,
      error: { message: expect.stringMatching(/arguments\.namespace: "evil\.attacker\.test" is not/) },
    });
    const h = await call(base, '/mcp', {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream', 'mcp-param-namespace': 'evil.attacker.test' },
      body: JSON.stringify({ ...body, params: { name: 'list', arguments: {} } }),
    });
    expect(h.status).toBe(400);
    expect(received.length).toBe(before);
  });

  it('refuses it in a signed Port webhook with 400', async () => {
    const { createHmac } = await import('node:crypto');
    const raw = JSON.stringify({
      runId: 'ns-1',
      action: 'kpromo_promote',
      user: 'alice@example.com',
      inputs: { namespace: 'evil.attacker.test', from: 'dev', to: 'stable' },
    });
    const ts = String(Date.now());
    const res = await fetch(`${base}/api/promotions/port/webhook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-port-timestamp': ts,
        'x-port-signature': `v1,${createHmac('sha256', 'port-secret-0123456789').update(`${ts}.${raw}`).digest('base64')}`,
      },
      body: raw,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
      /inputs\.namespace: "evil\.attacker\.test" is not a Kubernetes namespace name/,
    );
  });

  it('sends calls only to allowed URLs: a valid namespace the locator maps elsewhere is a 503, nothing sent', async () => {
    const ok = await call(base, '/environments?namespace=team-a');
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    expect(received.at(-1)).toMatchObject({
      host: `kpromo-controller.team-a:${port}`,
      headers: { authorization: `Bearer ${TOKEN}`, 'x-kpromo-user': ALICE },
    });
    const before = received.length;
    // team-b is a fine namespace name, but the URL the locator makes for it is not in the allow-list.
    const refused = await call(base, '/environments?namespace=team-b');
    expect(refused.status).toBe(503);
    expect(refused.json.error?.message).toBe(
      `kpromo controller not located: the locator answered "http://kpromo-controller.team-b:${port}", which is not in promotions.controller.allowedBaseUrls (nor baseUrl, byNamespace); the backend sends its token only to those`,
    );
    expect(received.length).toBe(before);
    expect(leaked()).toEqual([]);
  });
});

describe('the default locator maps namespaces to configured controllers (promotions.controller.byNamespace)', () => {
  let backend: TestBackend;
  let base = '';
  beforeAll(async () => {
    ({ backend, base } = await startBackstageTestBackend({
      features: [promotionsPlugin],
      controller: {
        token: TOKEN,
        baseUrl: `http://kpromo-controller.kpromo:${port}`,
        byNamespace: [{ namespaces: ['team-a', 'team-b'], baseUrl: `http://kpromo-controller.teams:${port}/` }],
      },
    }));
  });
  afterAll(() => backend?.stop());

  it('sends each namespace to its configured controller, others to baseUrl, and refuses non-labels', async () => {
    expect((await call(base, '/environments?namespace=team-b')).status).toBe(200);
    expect(received.at(-1)?.host).toBe(`kpromo-controller.teams:${port}`);
    expect((await call(base, '/environments?namespace=shop')).status).toBe(200);
    expect(received.at(-1)?.host).toBe(`kpromo-controller.kpromo:${port}`);
    const before = received.length;
    const bad = await call(base, '/environments?namespace=evil.attacker.test');
    expect(bad.status).toBe(400);
    expect(bad.json.error?.message).toMatch(NOT_A_NAMESPACE);
    expect(received.length).toBe(before);
    expect(leaked()).toEqual([]);
  });
});

describe('controller config', () => {
  const read = (controller: object) => readPromotionsConfig(new ConfigReader({ promotions: { controller } }));
  it('lists every allowed URL and refuses bad entries at startup', () => {
    expect(
      read({
        baseUrl: 'http://kpromo-controller.kpromo:8080/',
        byNamespace: [{ namespaces: ['team-a'], baseUrl: 'HTTP://Kpromo-Controller.team-a.svc:8080' }],
        allowedBaseUrls: ['https://kpromo.example.com:443/api/'],
      }).controller.allowedBaseUrls,
    ).toEqual([
      'http://kpromo-controller.kpromo:8080',
      'http://kpromo-controller.team-a.svc:8080',
      'https://kpromo.example.com/api',
    ]);
    expect(() => read({ defaultNamespace: 'a.b' })).toThrow(
      /promotions\.controller\.defaultNamespace: namespace: "a\.b" is not/,
    );
    expect(() => read({ byNamespace: [{ namespaces: ['evil.example'], baseUrl: 'http://x' }] })).toThrow(
      /byNamespace\[0\]\.namespaces: "evil\.example" is not a Kubernetes namespace name/,
    );
    expect(() =>
      read({
        byNamespace: [
          { namespaces: ['a'], baseUrl: 'http://x' },
          { namespaces: ['a'], baseUrl: 'http://y' },
        ],
      }),
    ).toThrow(/namespace a is listed twice/);
    expect(() => read({ byNamespace: [{ namespaces: ['a'], baseUrl: 'ftp://x' }] })).toThrow(/is not an http\(s\) URL/);
    expect(() => read({ allowedBaseUrls: ['http://user:pw@x'] })).toThrow(/is not an http\(s\) URL/);
  });
});
