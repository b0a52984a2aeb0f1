import { describe, expect, it } from 'vitest';
import { errorStatus, isNotFound, PromotionsClient } from './api';

const plan = {
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'PromotionPlan',
  metadata: { name: 'p1', namespace: 'shop' },
  spec: { flow: 'shop', from: 'dev', to: 'stable', candidates: [] },
};

/** A client whose fetch answers like the promotions backend and records the requests. */
function client(answer: (url: string, init?: RequestInit) => Response) {
  const requests: Array<{ url: string; method: string; body?: unknown }> = [];
  const c = new PromotionsClient({
    discoveryApi: { getBaseUrl: async (id: string) => `http://backstage.test/api/${id}` },
    fetchApi: {
      // The typed client passes a Request (as Backstage's fetchApi accepts); plain (url, init) also works.
      fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
        const req = input instanceof Request ? input : new Request(String(input), init);
        const text = await req.text();
        const url = req.url;
        requests.push({ url, method: req.method, body: text ? JSON.parse(text) : undefined });
        return answer(url, { method: req.method });
      },
    },
  });
  return { c, requests };
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

describe('PromotionsClient', () => {
  it('keeps the progress the backend sends with a plan ({plan, progress}) and unwraps lists ({items})', async () => {
    const { c, requests } = client((url) =>
      url.endsWith('/plans') ? json({ items: [plan] }) : json({ plan, progress: { phase: 'Pending' } }, 200),
    );
    expect(await c.getPlan('shop', 'p1')).toEqual({ plan, progress: { phase: 'Pending' } });
    expect((await c.approvePlan('shop', 'p1', { uid: 'uid-1' })).progress.phase).toBe('Pending');
    expect((await c.rollbackPlan('shop', 'p1', { approve: true, uid: 'uid-1' })).plan.metadata.name).toBe('p1');
    expect((await c.listPlans())[0].metadata.name).toBe('p1');
    expect(
      (
        await c.approvePlan('shop', 'p1', {
          uid: 'uid-1',
          overrideFreeze: true,
          overrideReason: 'hotfix INC-7: checkout answers 500',
          comment: 'hotfix INC-7',
        })
      ).plan.metadata.name,
    ).toBe('p1');
    expect(requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'GET http://backstage.test/api/promotions/plans/shop/p1',
      'POST http://backstage.test/api/promotions/plans/shop/p1/approve',
      'POST http://backstage.test/api/promotions/plans/shop/p1/rollback',
      'GET http://backstage.test/api/promotions/plans',
      'POST http://backstage.test/api/promotions/plans/shop/p1/approve',
    ]);
    // The approver is never sent: the backend approves as the signed-in user, the plan of the uid shown.
    expect(requests[1].body).toEqual({ uid: 'uid-1' });
    expect(requests[2].body).toEqual({ approve: true, uid: 'uid-1' });
    expect(requests[4].body).toEqual({
      overrideFreeze: true,
      overrideReason: 'hotfix INC-7: checkout answers 500',
      comment: 'hotfix INC-7',
      uid: 'uid-1',
    });
  });

  it('continues a wave of a fleet plan with the wave and the uid of the plan shown, never the user', async () => {
    const { c, requests } = client(() => json({ plan, progress: { phase: 'Promoting' } }));
    expect(await c.continuePlan('shop', 'p1', { wave: 'eu', uid: 'uid-1' })).toEqual({
      plan,
      progress: { phase: 'Promoting' },
    });
    await c.continuePlan('shop', 'p1', { comment: 'canary fine' });
    expect(requests.map((r) => [`${r.method} ${r.url}`, r.body])).toEqual([
      ['POST http://backstage.test/api/promotions/plans/shop/p1/continue', { wave: 'eu', uid: 'uid-1' }],
      ['POST http://backstage.test/api/promotions/plans/shop/p1/continue', { comment: 'canary fine' }],
    ]);
  });

  it('sends diff filters as comma lists and leaves empty ones out', async () => {
    const { c, requests } = client(() => json({ from: 'dev', to: 'stable', candidates: [], skipped: [] }));
    await c.getDiff({ from: 'dev', to: 'stable', teams: ['a', 'b'], applications: [] });
    expect(requests[0].url).toBe('http://backstage.test/api/promotions/diff?from=dev&to=stable&teams=a%2Cb');
  });

  it('turns backend errors into errors with the message and status', async () => {
    const { c } = client(() =>
      json(
        {
          error: { name: 'NotAllowedError', message: 'user:default/bob is not allowed to promotion.plan.approve' },
          response: { statusCode: 403 },
        },
        403,
      ),
    );
    const err = await c
      .approvePlan('shop', 'p1', { uid: 'uid-1' })
      .catch((e: Error & { response?: { status: number } }) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('not allowed to promotion.plan.approve');
    expect((err as { response?: { status: number } }).response?.status).toBe(403);
  });
});

describe('PromotionsClient lists and errors', () => {
  it('pages through GET /applications with limit and continue', async () => {
    const app = (name: string) => ({ name, namespace: 'shop', versions: [] });
    const { c, requests } = client((url) =>
      url.includes('continue=')
        ? json({ items: [app('c')], total: 3 })
        : json({ items: [app('a'), app('b')], continue: 'tok', total: 3 }),
    );
    expect((await c.listApplications({ namespace: 'shop', teams: ['team-shop'] })).map((a) => a.name)).toEqual([
      'a',
      'b',
      'c',
    ]);
    // The same parameters in any order.
    const sorted = (u: string) => {
      const url = new URL(u);
      url.searchParams.sort();
      return url.toString();
    };
    expect(requests.map((r) => sorted(r.url))).toEqual([
      'http://backstage.test/api/promotions/applications?limit=500&namespace=shop&teams=team-shop',
      'http://backstage.test/api/promotions/applications?continue=tok&limit=500&namespace=shop&teams=team-shop',
    ]);
  });

  it('shortens digests in error messages and tells a missing plan from a missing backend', async () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    const { c } = client(() =>
      json(
        {
          error: {
            name: 'InputError',
            message: `no release candidates dev -> stable: checkout: stable runs ${digest}`,
          },
          response: { statusCode: 400 },
        },
        400,
      ),
    );
    const err = (await c.createPlan({ from: 'dev', to: 'stable' }).catch((e: Error) => e)) as Error;
    expect(err.message).toBe(
      'no release candidates dev -> stable: checkout: stable runs sha256:aaaaaaaaaaaa… (HTTP 400)',
    );

    const missing = client(() =>
      json(
        {
          error: { name: 'NotFoundError', message: 'PromotionPlan shop/nope not found' },
          response: { statusCode: 404 },
        },
        404,
      ),
    ).c;
    const e404 = await missing.getPlan('shop', 'nope').catch((e: Error) => e);
    expect(isNotFound(e404)).toBe(true);
    expect(errorStatus(e404)).toBe(404);
    const noBackend = client(() => new Response('<html>Not Found</html>', { status: 404 })).c;
    expect(isNotFound(await noBackend.getPlan('shop', 'nope').catch((e: Error) => e))).toBe(false);
  });
});
