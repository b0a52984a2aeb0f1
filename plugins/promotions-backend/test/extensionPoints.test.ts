import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import {
  type BackstageCredentials,
  type BackstageUserPrincipal,
  coreServices,
  createBackendModule,
  createServiceFactory,
  type PermissionsService,
} from '@backstage/backend-plugin-api';
import { mockCredentials, type TestBackend } from '@backstage/backend-test-utils';
import mcpActionsBackend from '@backstage/plugin-mcp-actions-backend';
import { AuthorizeResult } from '@backstage/plugin-permission-common';
import {
  type PromotionsControllerLocateRequest,
  promotionsActionsExtensionPoint,
  promotionsControllerLocatorExtensionPoint,
  promotionsRoutesExtensionPoint,
} from '@kpromo/plugin-promotions-node';
import { startBackstageTestBackend } from '@kpromo/test-harness/backstage';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promotionsPlugin } from '../src/index.js';

// Backend modules that use the extension points of @kpromo/plugin-promotions-node, installed in a
// real test backend next to the promotions plugin.

const ALICE = 'user:default/alice';
const MALLORY = 'user:default/mallory';
const TOKEN = 'backend-token-0123456789abcdef';

/** A stand-in controller: records every request and answers an empty list. */
let controller: Server;
let controllerUrl = '';
const calls: Array<{ method?: string; url?: string; headers: IncomingHttpHeaders }> = [];
/** What the module's locator was asked, in order. */
const located: PromotionsControllerLocateRequest[] = [];
let backend: TestBackend;
let base = '';

const locatorModule = createBackendModule({
  pluginId: 'promotions',
  moduleId: 'test-locator',
  register(env) {
    env.registerInit({
      deps: { locator: promotionsControllerLocatorExtensionPoint },
      async init({ locator }) {
        locator.setControllerLocator({
          async locate(request) {
            located.push(request);
            if (request.namespace === 'nowhere') throw new Error('no controller serves namespace nowhere');
            return { baseUrl: `${controllerUrl}/` };
          },
        });
      },
    });
  },
});

const actionsModule = createBackendModule({
  pluginId: 'promotions',
  moduleId: 'test-actions',
  register(env) {
    env.registerInit({
      deps: { actions: promotionsActionsExtensionPoint },
      async init({ actions }) {
        actions.addAction({
          name: 'whoami',
          title: 'Who am I',
          description: 'Answers the caller of the action (a custom action added by a module).',
          attributes: { readOnly: true, destructive: false, idempotent: true },
          schema: {
            input: (z) => z.object({ greeting: z.string() }),
            output: (z) => z.object({ text: z.string() }),
          },
          action: async ({ input, credentials }) => ({
            output: {
              text: `${input.greeting}, ${(credentials.principal as BackstageUserPrincipal).userEntityRef}`,
            },
          }),
        });
      },
    });
  },
});

/**
 * A route the way the Port module adds its webhook: unauthenticated (it would check a signature
 * itself), acting through the plugin's operations as a named identity.
 */
const routesModule = createBackendModule({
  pluginId: 'promotions',
  moduleId: 'test-routes',
  register(env) {
    env.registerInit({
      deps: { routes: promotionsRoutesExtensionPoint },
      async init({ routes }) {
        routes.addRoutes({
          path: '/hook',
          auth: 'unauthenticated',
          create: (operations) =>
            express.Router().post('/', express.json(), async (req, res) => {
              const caller = { kind: 'port' as const, identity: `port:${req.body.email}` };
              const answer = await operations.getPlan(caller, { namespace: 'team-a', name: 'p1' }).then(
                () => 'read',
                (e: Error) => e.message,
              );
              res.json({ defaultNamespace: operations.defaultNamespace, answer });
            }),
        });
      },
    });
  },
});

/** The Backstage policy stays the plugin's: mallory is denied everything kpromo, whoever locates the controller. */
const permissions = createServiceFactory({
  service: coreServices.permissions,
  deps: {},
  factory(): PermissionsService {
    const decide = async (n: number, o?: { credentials: BackstageCredentials }) => {
      const who = (o?.credentials.principal as { userEntityRef?: string } | undefined)?.userEntityRef;
      return Array.from({ length: n }, () => ({
        result: who === MALLORY ? AuthorizeResult.DENY : AuthorizeResult.ALLOW,
      }));
    };
    return {
      authorize: (async (reqs: unknown[], o?: { credentials: BackstageCredentials }) =>
        decide(reqs.length, o)) as PermissionsService['authorize'],
      authorizeConditional: (async (reqs: unknown[], o?: { credentials: BackstageCredentials }) =>
        decide(reqs.length, o)) as PermissionsService['authorizeConditional'],
    };
  },
});

const options = {
  backend: { actions: { pluginSources: ['promotions'] } },
  // Unreachable on purpose: the module's locator replaces it.
  controller: { baseUrl: 'http://127.0.0.1:9', token: TOKEN, defaultNamespace: 'kpromo' },
};

async function get(path: string, user: string) {
  const res = await fetch(`${base}/api/promotions${path}`, {
    headers: { authorization: mockCredentials.user.header(user) },
  });
  return {
    status: res.status,
    json: (await res.json()) as { items?: unknown[]; error?: { name: string; message: string } },
  };
}

beforeAll(async () => {
  controller = createServer((req, res) => {
    calls.push({ method: req.method, url: req.url, headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ items: [{ name: 'dev', namespace: 'team-a' }] }));
  });
  await new Promise<void>((r) => controller.listen(0, '127.0.0.1', r));
  controllerUrl = `http://127.0.0.1:${(controller.address() as { port: number }).port}`;
  ({ backend, base } = await startBackstageTestBackend({
    features: [promotionsPlugin, locatorModule, actionsModule, routesModule, mcpActionsBackend, permissions],
    ...options,
    // The module's locator may send calls only to URLs the config allows (the token goes there).
    controller: { ...options.controller, allowedBaseUrls: [controllerUrl] },
  }));
});

afterAll(async () => {
  await backend?.stop();
  await new Promise<void>((r) => controller.close(() => r()));
});

describe('promotionsControllerLocatorExtensionPoint', () => {
  it("sends controller calls where the module's locator says, with the backend's token and the caller", async () => {
    const r = await get('/environments?namespace=team-a', ALICE);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.items).toEqual([{ name: 'dev', namespace: 'team-a' }]);
    expect(located.at(-1)).toEqual({ namespace: 'team-a' });
    expect(calls.at(-1)).toMatchObject({
      method: 'GET',
      url: '/api/v1/environments?namespace=team-a',
      headers: { authorization: `Bearer ${TOKEN}`, 'x-kpromo-user': ALICE },
    });
    // A call naming no namespace is located for promotions.controller.defaultNamespace.
    expect((await get('/plans', ALICE)).status).toBe(200);
    expect(located.at(-1)).toEqual({ namespace: 'kpromo' });
    expect(calls.at(-1)?.url).toBe('/api/v1/plans?namespace=kpromo');
  });

  it('keeps the Backstage permission check before any controller call', async () => {
    const before = { located: located.length, calls: calls.length };
    const denied = await get('/environments?namespace=team-a', MALLORY);
    expect(denied.status).toBe(403);
    expect(denied.json.error?.message).toBe(`${MALLORY} is not allowed to promotion.plan.read`);
    expect({ located: located.length, calls: calls.length }).toEqual(before);
  });

  it('answers 503 when the locator fails', async () => {
    const r = await get('/environments?namespace=nowhere', ALICE);
    expect(r.status).toBe(503);
    expect(r.json.error).toEqual({
      name: 'ServiceUnavailableError',
      message: 'kpromo controller not located: no controller serves namespace nowhere',
    });
  });

  it('refuses a second locator at startup', async () => {
    const second = createBackendModule({
      pluginId: 'promotions',
      moduleId: 'second-locator',
      register(env) {
        env.registerInit({
          deps: { locator: promotionsControllerLocatorExtensionPoint },
          async init({ locator }) {
            locator.setControllerLocator({ locate: async () => ({ baseUrl: 'http://127.0.0.1:9' }) });
          },
        });
      },
    });
    await expect(
      startBackstageTestBackend({ features: [promotionsPlugin, locatorModule, second], ...options }),
    ).rejects.toThrow(/a controller locator is already set/);
  });
});

describe('promotionsActionsExtensionPoint', () => {
  it("lists the module's action in the plugin's actions registry next to the built-in ones, and runs it as the caller", async () => {
    const headers = { authorization: mockCredentials.user.header(ALICE) };
    const list = (await (await fetch(`${base}/api/promotions/.backstage/actions/v1/actions`, { headers })).json()) as {
      actions: Array<{ id: string; attributes: object }>;
    };
    expect(list.actions.map((a) => a.id).sort()).toEqual([
      'promotions:continue-wave',
      'promotions:create-plan',
      'promotions:get-release-status',
      'promotions:promote',
      'promotions:rollback',
      'promotions:whoami',
    ]);
    expect(list.actions.find((a) => a.id === 'promotions:whoami')?.attributes).toEqual({
      readOnly: true,
      destructive: false,
      idempotent: true,
    });
    const invoked = await fetch(`${base}/api/promotions/.backstage/actions/v1/actions/promotions:whoami/invoke`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ greeting: 'hello' }),
    });
    expect(await invoked.json()).toEqual({ output: { text: `hello, ${ALICE}` } });
  });

  it('exposes it as an MCP tool through mcp-actions-backend', async () => {
    const client = new Client({ name: 'extension-points-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/api/mcp-actions/v1`), {
        requestInit: { headers: { authorization: mockCredentials.user.header(ALICE) } },
      }),
    );
    try {
      const tool = (await client.listTools()).tools.find((t) => t.name.endsWith('whoami'));
      expect(tool?.description).toMatch(/custom action added by a module/);
      const r = (await client.callTool({ name: tool!.name, arguments: { greeting: 'hi' } })) as {
        content: Array<{ text?: string }>;
      };
      expect(r.content.map((c) => c.text).join('')).toContain(`hi, ${ALICE}`);
    } finally {
      await client.close();
    }
  });

  it('fails startup when a module takes the name of a built-in action', async () => {
    const clash = createBackendModule({
      pluginId: 'promotions',
      moduleId: 'clash',
      register(env) {
        env.registerInit({
          deps: { actions: promotionsActionsExtensionPoint },
          async init({ actions }) {
            actions.addAction({
              name: 'promote',
              title: 'Another promote',
              description: 'Takes a built-in name.',
              schema: { input: (z) => z.object({}), output: (z) => z.object({}) },
              action: async () => ({ output: {} }),
            });
          },
        });
      },
    });
    await expect(startBackstageTestBackend({ features: [promotionsPlugin, clash], ...options })).rejects.toThrow(
      /promotions:promote.*already registered/,
    );
  });
});

describe('promotionsRoutesExtensionPoint', () => {
  it("serves a module's unauthenticated route, whose calls go through the plugin's operations as the identity it names", async () => {
    const res = await fetch(`${base}/api/promotions/hook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bob@example.com' }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { defaultNamespace?: string }).defaultNamespace).toBe('kpromo');
    // The controller call carries the backend's token and the module's caller, located like any other.
    expect(located.at(-1)).toEqual({ namespace: 'team-a' });
    expect(calls.at(-1)).toMatchObject({
      method: 'GET',
      url: '/api/v1/plans/team-a/p1',
      headers: { authorization: `Bearer ${TOKEN}`, 'x-kpromo-user': 'port:bob@example.com' },
    });
  });

  it('fails startup when two modules take the same path', async () => {
    const again = createBackendModule({
      pluginId: 'promotions',
      moduleId: 'routes-again',
      register(env) {
        env.registerInit({
          deps: { routes: promotionsRoutesExtensionPoint },
          async init({ routes }) {
            routes.addRoutes({ path: '/hook', create: () => express.Router() });
          },
        });
      },
    });
    await expect(
      startBackstageTestBackend({ features: [promotionsPlugin, routesModule, again], ...options }),
    ).rejects.toThrow(/routes at \/hook are already added by another module/);
  });
});
