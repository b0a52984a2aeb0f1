import { describe, expect, it } from 'vitest';
import { KeyedRateLimiter } from '../kube/rateLimit.js';
import { AuthBusy, AuthError, Authenticator } from './authenticator.js';
import { authenticateHttp, floodGate, type HttpAuthDeps, HttpAuthFailure, sourceKey } from './httpAuth.js';
import type { Caller } from './identity.js';

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const admin: Caller = { username: 'admin', groups: ['system:authenticated'], source: 'static' };

function deps(o: { qps?: number; burst?: number; authenticate?: (t: string) => Promise<Caller> } = {}) {
  let checked = 0;
  const authenticator: HttpAuthDeps['authenticator'] = {
    known: (t) => (t === 'good-token' ? admin : undefined),
    authenticate: async (t) => {
      checked++;
      if (o.authenticate) return o.authenticate(t);
      if (t === 'good-token') return admin;
      throw new AuthError('invalid bearer token');
    },
  };
  const d: HttpAuthDeps = {
    authenticator,
    authorizer: { check: async () => ({ allowed: true, reason: '' }) },
    perSource: new KeyedRateLimiter({ qps: o.qps ?? 1, burst: o.burst ?? 3, now: () => 0 }),
  };
  return { d, checked: () => checked };
}

const failure = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    if (e instanceof HttpAuthFailure) return e;
    throw e;
  }
  throw new Error('expected a refusal');
};

describe('sourceKey', () => {
  it('an IPv4 address as is, an IPv6 one by its /64', () => {
    expect(sourceKey('10.1.2.3')).toBe('10.1.2.3');
    expect(sourceKey('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(sourceKey('2001:db8:0:1:aaaa::1')).toBe('2001:db8:0:1::/64');
    expect(sourceKey('2001:db8:0:1:bbbb:cccc:dddd:eeee')).toBe('2001:db8:0:1::/64');
    expect(sourceKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(sourceKey('::1')).toBe('0:0:0:0::/64');
    expect(sourceKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(sourceKey(undefined)).toBe('unknown');
  });
});

describe('authenticateHttp per-source limit', () => {
  it('unknown tokens from one address: 429 with a Retry-After once its burst is spent, nothing checked', async () => {
    const { d, checked } = deps({ burst: 3 });
    for (let i = 0; i < 3; i++)
      expect((await failure(authenticateHttp(d, bearer(`junk-${i}`), '10.0.0.9'))).status).toBe(401);
    const limited = await failure(authenticateHttp(d, bearer('junk-x'), '10.0.0.9'));
    expect(limited.status).toBe(429);
    expect(limited.retryAfter).toBe(1);
    expect(checked()).toBe(3);
    // Requests without a token count too.
    expect((await failure(authenticateHttp(d, {}, '10.0.0.9'))).status).toBe(429);
    // Another address is not affected; the flood gate (before any body is read) agrees.
    expect((await failure(authenticateHttp(d, bearer('junk-y'), '10.0.0.10'))).status).toBe(401);
    expect(floodGate(d, bearer('junk-z'), '10.0.0.9')?.status).toBe(429);
  });

  it('a known valid token passes from an address that floods', async () => {
    const { d } = deps({ burst: 1 });
    await failure(authenticateHttp(d, bearer('junk'), '10.0.0.9'));
    await failure(authenticateHttp(d, bearer('junk'), '10.0.0.9'));
    expect(await authenticateHttp(d, bearer('good-token'), '10.0.0.9')).toBe(admin);
    expect(floodGate(d, bearer('good-token'), '10.0.0.9')).toBeUndefined();
  });

  it('a full token review budget is a quick 503 with Retry-After, its reason not in the message', async () => {
    const { d } = deps({
      authenticate: async () => {
        throw new AuthBusy('token review budget full (4 in flight and 32 waiting)');
      },
    });
    const f = await failure(authenticateHttp(d, bearer('junk'), '10.0.0.9'));
    expect(f).toMatchObject({ status: 503, retryAfter: 1, message: 'token validation busy, retry later' });
    expect(f.detail).toContain('4 in flight');
  });

  it('with the real Authenticator: static tokens are known, the refusal cache answers repeated junk', async () => {
    const { createHash } = await import('node:crypto');
    const a = new Authenticator({
      tokenReview: false,
      staticTokens: [{ hash: createHash('sha256').update('static-token-0123456789').digest(), caller: admin }],
    });
    expect(a.known('static-token-0123456789')).toBe(admin);
    expect(a.known('other')).toBeUndefined();
    const d: HttpAuthDeps = { authenticator: a, authorizer: { check: async () => ({ allowed: true, reason: '' }) } };
    expect(await authenticateHttp(d, bearer('static-token-0123456789'))).toBe(admin);
    expect((await failure(authenticateHttp(d, bearer('junk')))).status).toBe(401);
  });
});
