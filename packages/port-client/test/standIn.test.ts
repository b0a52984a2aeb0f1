import { PortStandIn } from '@kpromo/test-harness/port';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPortClient } from '../src/index.js';

// The client against the exporter's spec-validating Port stand-in (every request and response is
// checked against packages/port-client/port-api/openapi.yaml), for the calls the Backstage backend makes.
let port: PortStandIn;
let client: ReturnType<typeof createPortClient>;

beforeEach(async () => {
  port = new PortStandIn();
  await port.start();
  client = createPortClient({
    baseUrl: port.url,
    clientId: port.clientId,
    clientSecret: port.clientSecret,
    baseBackoffMs: 10,
  });
});

afterEach(async () => {
  await port.stop();
  expect(port.violations).toEqual([]);
});

describe('Port client against the stand-in', () => {
  it('reports action run logs and status, through a 429, a 503 and an expired token', async () => {
    const { api } = client;
    const log = await api.POST('/v1/actions/runs/{run_id}/logs', {
      params: { path: { run_id: 'r1' } },
      body: { message: 'started' },
    });
    expect(log.response.status).toBe(201);
    port.faults = [
      {
        status: 429,
        times: 1,
        headers: { 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '0' },
      },
      { status: 503, times: 1 },
    ];
    port.expireTokens();
    const patch = await api.PATCH('/v1/actions/runs/{run_id}', {
      params: { path: { run_id: 'r1' }, query: { version: 'v2' } },
      body: { status: 'SUCCESS', statusLabel: 'Complete', summary: 'cart: Succeeded' },
    });
    expect(patch.data?.run?.status).toBe('SUCCESS');
    expect(port.runs.get('r1')?.logs).toEqual([{ message: 'started' }]);
    expect(port.calls.map((c) => c.status)).toEqual([200, 201, 429, 503, 401, 200, 200]);
    expect(client.stats).toEqual({ calls: 7, tokenFetches: 2, retries: 2 });
  });
});

describe('the stand-in as Port answers an integration (what port-k8s-exporter reads its mapping from)', () => {
  it('GET a seeded integration, PATCH validated against the spec and merged, 404 for an unknown one', async () => {
    // The generated client covers the routes kpromo calls; these are Port's exporter's, so untyped here.
    type Loose = (path: string, init: unknown) => Promise<{ response: Response }>;
    const api = client.api as unknown as { GET: Loose; PATCH: Loose };
    port.integrations.set('k8s', { installationId: 'k8s', title: 'k8s', config: { resources: [] } });
    const got = await api.GET('/v1/integration/{identifier}', { params: { path: { identifier: 'k8s' } } });
    expect(got.response.status).toBe(200);
    const patched = await api.PATCH('/v1/integration/{identifier}', {
      params: { path: { identifier: 'k8s' } },
      body: { version: '0.7.9' },
    });
    expect(patched.response.status).toBe(200);
    expect(port.integrations.get('k8s')).toMatchObject({ title: 'k8s', version: '0.7.9' });
    const missing = await api.GET('/v1/integration/{identifier}', { params: { path: { identifier: 'nope' } } });
    expect(missing.response.status).toBe(404);
    // A body the spec refuses is a violation (the afterEach above expects none until here).
    await api.PATCH('/v1/integration/{identifier}', {
      params: { path: { identifier: 'k8s' } },
      body: { actionsProcessingEnabled: 'yes' },
    });
    expect(port.violations.splice(0)).toEqual([
      'request PATCH /v1/integration/{identifier}: data/actionsProcessingEnabled must be boolean',
      'request PATCH /v1/integration/k8s: body does not match schema',
    ]);
  });
});
