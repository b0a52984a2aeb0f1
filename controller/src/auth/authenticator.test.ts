import { describe, expect, it } from 'vitest';
import type { KubeRest } from '../kube/rest.js';
import { AuthError, Authenticator } from './authenticator.js';

interface Review {
  authenticated?: boolean;
  user?: { username: string; groups?: string[] };
  audiences?: string[];
}

/**
 * A stand-in for the TokenReview endpoint only (the unit under test is what the authenticator does
 * with its answers): `answer` decides per token; every review sent is recorded.
 */
function tokenReviews(answer: (token: string, audiences?: string[]) => Review, delayMs = 0) {
  const sent: Array<{ token: string; audiences?: string[] }> = [];
  const control = {
    clusterName: 'control',
    async create(_path: string, body: { spec: { token: string; audiences?: string[] } }) {
      sent.push(body.spec);
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      return { status: answer(body.spec.token, body.spec.audiences) };
    },
  } as unknown as KubeRest;
  return { control, sent };
}

const ALICE = { username: 'system:serviceaccount:ci:deployer', groups: ['system:serviceaccounts'] };

describe('TokenReview audiences', () => {
  // Attack (issue 31): a TokenReview that answers "authenticated" without saying for which audience
  // (an authenticator that is not audience-aware, e.g. a webhook or a legacy token) accepted a token
  // minted for another service. The answer's status.audiences must intersect the ones asked for.
  it('refuses a token whose review names none of the audiences asked for', async () => {
    const { control } = tokenReviews((token) =>
      token === 'no-audiences'
        ? { authenticated: true, user: ALICE }
        : token === 'other-audience'
          ? { authenticated: true, user: ALICE, audiences: ['vault'] }
          : { authenticated: true, user: ALICE, audiences: ['kpromo'] },
    );
    const a = new Authenticator({ control, tokenReview: true, audiences: ['kpromo'] });
    await expect(a.authenticate('no-audiences')).rejects.toBeInstanceOf(AuthError);
    await expect(a.authenticate('other-audience')).rejects.toBeInstanceOf(AuthError);
    await expect(a.authenticate('for-kpromo')).resolves.toMatchObject({ username: ALICE.username });
  });

  it('does not check audiences when it asked for none (the apiserver defaults them)', async () => {
    const { control, sent } = tokenReviews(() => ({ authenticated: true, user: ALICE }));
    const a = new Authenticator({ control, tokenReview: true });
    await expect(a.authenticate('t')).resolves.toMatchObject({ username: ALICE.username });
    expect(sent[0].audiences).toBeUndefined();
  });
});

describe('Authenticator under a flood of unknown tokens', () => {
  const onlyGood = (token: string): Review =>
    token === 'good' ? { authenticated: true, user: ALICE, audiences: ['kpromo'] } : { authenticated: false };

  it('remembers a refused token by its hash: asked again, nobody is asked', async () => {
    const { control, sent } = tokenReviews(onlyGood);
    const a = new Authenticator({ control, tokenReview: true, audiences: ['kpromo'] });
    await expect(a.authenticate('junk')).rejects.toMatchObject({ why: 'invalid' });
    for (let i = 0; i < 50; i++) await expect(a.authenticate('junk')).rejects.toMatchObject({ why: 'cached' });
    expect(sent).toHaveLength(1);
  });

  it('refused tokens expire from the refusal cache', async () => {
    const { control, sent } = tokenReviews(onlyGood);
    const a = new Authenticator({ control, tokenReview: true, refusedCacheMs: 0 });
    await expect(a.authenticate('junk')).rejects.toBeInstanceOf(AuthError);
    await expect(a.authenticate('junk')).rejects.toMatchObject({ why: 'invalid' });
    expect(sent).toHaveLength(2);
  });

  it('one review for concurrent requests with the same token', async () => {
    const { control, sent } = tokenReviews(onlyGood, 20);
    const a = new Authenticator({ control, tokenReview: true, audiences: ['kpromo'] });
    const r = await Promise.allSettled(Array.from({ length: 40 }, () => a.authenticate('junk')));
    expect(r.every((x) => x.status === 'rejected')).toBe(true);
    expect(sent).toHaveLength(1);
  });

  it('bounded: beyond maxInFlight + maxQueued, refused at once with AuthBusy (nothing asked)', async () => {
    const { control, sent } = tokenReviews(onlyGood, 30);
    const a = new Authenticator({
      control,
      tokenReview: true,
      budget: { maxInFlight: 2, maxQueued: 3, maxWaitMs: 0 },
    });
    const r = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => a.authenticate(`junk-${i}`)));
    const reasons = r.map((x) => (x.status === 'rejected' ? (x.reason as Error).name : 'ok'));
    expect(reasons.filter((n) => n === 'AuthError')).toHaveLength(5);
    expect(reasons.filter((n) => n === 'AuthBusy')).toHaveLength(15);
    expect(sent).toHaveLength(5);
    expect(a.budget.running + a.budget.queued).toBe(0);
  });

  it('a waiter that gets no slot within maxWaitMs gives up with AuthBusy', async () => {
    const { control } = tokenReviews(onlyGood, 200);
    const a = new Authenticator({
      control,
      tokenReview: true,
      budget: { maxInFlight: 1, maxQueued: 10, maxWaitMs: 20 },
    });
    const [first, second] = await Promise.allSettled([a.authenticate('junk-1'), a.authenticate('junk-2')]);
    expect(first.status === 'rejected' && (first.reason as Error).name).toBe('AuthError');
    expect(second.status === 'rejected' && (second.reason as Error).name).toBe('AuthBusy');
  });

  it('junk never pushes a valid token out of the cache, and a valid token is known without asking', async () => {
    const { control, sent } = tokenReviews(onlyGood);
    const a = new Authenticator({ control, tokenReview: true, audiences: ['kpromo'], cacheSize: 10 });
    expect(a.known('good')).toBeUndefined();
    await a.authenticate('good');
    for (let i = 0; i < 100; i++) await a.authenticate(`junk-${i}`).catch(() => undefined);
    expect(a.known('good')).toMatchObject({ username: ALICE.username });
    const before = sent.length;
    await a.authenticate('good');
    expect(sent).toHaveLength(before);
    // The refusal cache is bounded too: the oldest junk was forgotten and is asked about again.
    await a.authenticate('junk-0').catch(() => undefined);
    expect(sent).toHaveLength(before + 1);
  });
});

describe('verified JWTs', () => {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const jws = (payload: object) => `${b64({ alg: 'RS256' })}.${b64(payload)}.c2ln`;
  it('are remembered (known without verifying again), never past their exp', async () => {
    let verified = 0;
    const jwt = {
      handles: () => true,
      verify: async () => {
        verified++;
        return { ok: true as const, caller: { username: 'oidc:alice', groups: [], source: 'oidc' as const } };
      },
    };
    const a = new Authenticator({ jwt, tokenReview: false });
    const later = jws({ iss: 'https://issuer.example.com', exp: Math.floor(Date.now() / 1000) + 3600 });
    await a.authenticate(later);
    expect(a.known(later)).toMatchObject({ username: 'oidc:alice' });
    await a.authenticate(later);
    expect(verified).toBe(1);
    const expiring = jws({ iss: 'https://issuer.example.com', exp: Math.floor(Date.now() / 1000) - 1 });
    await a.authenticate(expiring);
    expect(a.known(expiring)).toBeUndefined();
    await a.authenticate(expiring);
    expect(verified).toBe(3);
  });
});
