import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Egress } from '../net/guardedFetch.js';
import { retryingRequest } from './retryingRequest.js';

let hits = 0;
const server = createServer((_req, res) => {
  hits++;
  res.writeHead(500).end();
});
let url = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe('retryingRequest refusal (credentials checked right before every attempt)', () => {
  const base = () => ({
    url,
    shown: 'receiver',
    headers: () => ({ authorization: 'Bearer x' }),
    timeoutMs: 2_000,
    maxAttempts: 4,
    retryBaseMs: 1,
    retryMaxMs: 5,
    egress: new Egress({ allowedCidrs: ['127.0.0.1/32'] }),
  });

  it('sends nothing when refused before the first attempt', async () => {
    hits = 0;
    const asked: string[] = [];
    const out = await retryingRequest({
      ...base(),
      refusal: (u) => {
        asked.push(u);
        return 'Secret a/b may not go there';
      },
    });
    expect(out).toEqual({ ok: false, attempts: 0, error: 'Secret a/b may not go there' });
    expect(asked).toEqual([url]);
    expect(hits).toBe(0);
  });

  it('asks again before each retry and stops there, without retrying a refusal', async () => {
    hits = 0;
    let calls = 0;
    const out = await retryingRequest({
      ...base(),
      refusal: () => (++calls >= 3 ? 'refused now' : undefined),
    });
    expect(out).toEqual({ ok: false, attempts: 2, error: 'refused now' });
    expect(calls).toBe(3);
    expect(hits).toBe(2);
  });
});
