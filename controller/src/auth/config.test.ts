import { describe, expect, it } from 'vitest';
import { AuthConfigSchema, FLOOD_DEFAULTS, JwtAuthenticatorSchema } from './config.js';

describe('auth flood budgets config', () => {
  it('absent: the auth section stays as written; FLOOD_DEFAULTS are what each key defaults to', () => {
    const c = AuthConfigSchema.parse({});
    expect(c.perSource).toBeUndefined();
    // A key given empty takes the same values as FLOOD_DEFAULTS (one source of truth for the docs).
    const empty = AuthConfigSchema.parse({
      perSource: {},
      tokenReviews: {},
      reviewClient: {},
      tokenCache: {},
      refusalLog: {},
    });
    expect(empty).toMatchObject(FLOOD_DEFAULTS);
  });

  it('coerces env-style strings and refuses what makes no sense, naming the field', () => {
    expect(AuthConfigSchema.parse({ perSource: { qps: '0' } }).perSource).toEqual({ qps: 0, burst: 40 });
    const bad = AuthConfigSchema.safeParse({ tokenReviews: { maxInFlight: 0 }, perSource: { burst: 0, extra: 1 } });
    expect(bad.success).toBe(false);
    const paths = bad.error?.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['tokenReviews.maxInFlight', 'perSource.burst', 'perSource']));
  });
});

describe('JWT groups prefix', () => {
  const jwt = (groups: object) =>
    JwtAuthenticatorSchema.parse({
      issuer: { url: 'https://issuer.example.com', audiences: ['kpromo'] },
      claimMappings: { username: { claim: 'sub' }, groups },
    });
  it('is absent unless written (then the issuer default applies), and "" is kept when written', () => {
    expect(jwt({ claim: 'groups' }).claimMappings.groups?.prefix).toBeUndefined();
    expect(jwt({ claim: 'groups', prefix: '' }).claimMappings.groups?.prefix).toBe('');
    expect(() => jwt({ claim: 'groups', prefix: 'system:' })).toThrow(/system:/);
  });
});
