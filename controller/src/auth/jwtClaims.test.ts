import { describe, expect, it } from 'vitest';
import { JwtAuthenticatorSchema } from './config.js';
import { callerFromClaims, peekExpiry, peekIssuer, usernamePrefix } from './jwtClaims.js';

const ISS = 'https://issuer.example.com';
const cfg = (over: Record<string, unknown> = {}) =>
  JwtAuthenticatorSchema.parse({
    issuer: { url: ISS, audiences: ['kpromo'] },
    claimMappings: { username: { claim: 'sub', prefix: 'oidc:' }, groups: { claim: 'groups', prefix: 'oidc:' } },
    ...over,
  });
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
const jws = (payload: unknown) => `${b64({ alg: 'RS256' })}.${b64(payload)}.c2ln`;

describe('peekIssuer', () => {
  it('reads iss of a compact JWS and nothing of other tokens', () => {
    expect(peekIssuer(jws({ iss: ISS, sub: 'a' }))).toBe(ISS);
    expect(peekIssuer(jws({ sub: 'a' }))).toBeUndefined();
    expect(peekIssuer(jws({ iss: 42 }))).toBeUndefined();
    expect(peekIssuer('static-token-0123456789')).toBeUndefined();
    expect(peekIssuer(`${b64({ alg: 'none' })}.${b64({ iss: ISS })}.`)).toBeUndefined(); // unsigned: not even a candidate
    expect(peekIssuer(`${b64({})}.bm90IGpzb24.c2ln`)).toBeUndefined();
    expect(peekIssuer(jws({ iss: ISS, pad: 'x'.repeat(20_000) }))).toBeUndefined();
  });
});

describe('usernamePrefix (kube --oidc-username-prefix defaults)', () => {
  it('is the configured one, else none for email and issuer# for other claims', () => {
    expect(usernamePrefix(cfg())).toBe('oidc:');
    expect(usernamePrefix(cfg({ claimMappings: { username: { claim: 'email' } } }))).toBe('');
    expect(usernamePrefix(cfg({ claimMappings: { username: { claim: 'sub' } } }))).toBe(`${ISS}#`);
    expect(usernamePrefix(cfg({ claimMappings: { username: { claim: 'sub', prefix: '' } } }))).toBe('');
  });
});

describe('callerFromClaims', () => {
  // Attack (issue 31): an issuer's users choose their groups (self-service groups, a compromised
  // IdP). Mapped without a prefix, a token saying `groups: [release-managers]` is the Kubernetes
  // group release-managers, which RBAC binds to approve into prod for other people.
  it('prefixes groups with the issuer by default: an issuer cannot mint a Kubernetes group', () => {
    const noGroupsPrefix = cfg({
      claimMappings: { username: { claim: 'sub', prefix: 'oidc:' }, groups: { claim: 'groups' } },
    });
    const v = callerFromClaims(noGroupsPrefix, { sub: 'mallory', groups: ['release-managers'] });
    expect(v.ok && v.caller.groups).toEqual([`${ISS}#release-managers`, 'system:authenticated']);
    expect(v.ok && v.caller.groups).not.toContain('release-managers');
    // No prefix is possible, but only written out.
    const explicit = cfg({ claimMappings: { username: { claim: 'sub' }, groups: { claim: 'groups', prefix: '' } } });
    const e = callerFromClaims(explicit, { sub: 'a', groups: ['release-managers'] });
    expect(e.ok && e.caller.groups).toEqual(['release-managers', 'system:authenticated']);
  });

  it('maps username and groups with their prefixes and adds system:authenticated', () => {
    expect(callerFromClaims(cfg(), { sub: 'alice', groups: ['dev', 'ops'] })).toEqual({
      ok: true,
      caller: { username: 'oidc:alice', groups: ['oidc:dev', 'oidc:ops', 'system:authenticated'], source: 'oidc' },
    });
    const single = callerFromClaims(cfg(), { sub: 'bob', groups: 'dev' });
    expect(single.ok && single.caller.groups).toEqual(['oidc:dev', 'system:authenticated']);
    const none = callerFromClaims(cfg(), { sub: 'carol' });
    expect(none.ok && none.caller.groups).toEqual(['system:authenticated']);
  });

  it('refuses a missing, empty or non-string username claim', () => {
    for (const sub of [undefined, '', 7, ['a']])
      expect(callerFromClaims(cfg(), { sub })).toMatchObject({ ok: false, reason: /username claim sub/ });
  });

  it('refuses identities in the reserved system: namespace', () => {
    const noPrefix = cfg({ claimMappings: { username: { claim: 'sub', prefix: '' } } });
    expect(callerFromClaims(noPrefix, { sub: 'system:serviceaccount:ns:sa' })).toMatchObject({
      ok: false,
      reason: /reserved system: prefix/,
    });
    expect(callerFromClaims(noPrefix, { sub: 'system:masters' }).ok).toBe(false);
    const plainGroups = cfg({
      claimMappings: { username: { claim: 'sub', prefix: 'u:' }, groups: { claim: 'g', prefix: '' } },
    });
    expect(callerFromClaims(plainGroups, { sub: 'a', g: ['dev', 'system:masters'] })).toMatchObject({
      ok: false,
      reason: /group system:masters would use the reserved/,
    });
    // The schema refuses a prefix that would put every identity there.
    expect(() => cfg({ claimMappings: { username: { claim: 'sub', prefix: 'system:x:' } } })).toThrow(/system:/);
  });

  it('refuses a groups claim that is not strings', () => {
    expect(callerFromClaims(cfg(), { sub: 'a', groups: [1, 2] })).toMatchObject({ ok: false, reason: /groups claim/ });
    expect(callerFromClaims(cfg(), { sub: 'a', groups: { admin: true } }).ok).toBe(false);
  });

  it('requires email_verified to be true when present for the email claim', () => {
    const email = cfg({ claimMappings: { username: { claim: 'email' } } });
    expect(callerFromClaims(email, { email: 'a@example.com', email_verified: true })).toMatchObject({
      ok: true,
      caller: { username: 'a@example.com' },
    });
    expect(callerFromClaims(email, { email: 'a@example.com' }).ok).toBe(true);
    for (const v of [false, 'true', null])
      expect(callerFromClaims(email, { email: 'a@example.com', email_verified: v })).toMatchObject({
        ok: false,
        reason: /email_verified/,
      });
  });

  it('applies claimValidationRules: the claim must be that exact string', () => {
    const hd = cfg({ claimValidationRules: [{ claim: 'hd', requiredValue: 'example.com' }] });
    expect(callerFromClaims(hd, { sub: 'a', hd: 'example.com' }).ok).toBe(true);
    for (const v of [undefined, 'evil.com', ['example.com']])
      expect(callerFromClaims(hd, { sub: 'a', hd: v })).toMatchObject({ ok: false, reason: /claim hd must be/ });
  });
});

describe('peekExpiry', () => {
  it('reads exp (ms) of a compact JWS, nothing of other tokens', () => {
    expect(peekExpiry(jws({ iss: ISS, exp: 1_800_000_000 }))).toBe(1_800_000_000_000);
    expect(peekExpiry(jws({ iss: ISS }))).toBeUndefined();
    expect(peekExpiry(jws({ exp: 'soon' }))).toBeUndefined();
    expect(peekExpiry('static-token-0123456789')).toBeUndefined();
  });
});

describe('RFC 8693 delegation (act claim)', () => {
  it('keeps sub as the caller and names act.sub as the agent acting for them, with the username prefix', () => {
    const v = callerFromClaims(cfg(), { sub: 'alice', act: { sub: 'release-bot', act: { sub: 'gateway' } } });
    expect(v).toMatchObject({
      ok: true,
      caller: { username: 'oidc:alice', agent: { name: 'oidc:release-bot', username: 'oidc:release-bot' } },
    });
  });

  it('refuses an act claim without sub, and one that would name a system: user', () => {
    expect(callerFromClaims(cfg(), { sub: 'alice', act: {} })).toMatchObject({ ok: false });
    expect(callerFromClaims(cfg(), { sub: 'alice', act: 'release-bot' })).toMatchObject({ ok: false });
    const bare = cfg({ claimMappings: { username: { claim: 'sub', prefix: '' } } });
    expect(callerFromClaims(bare, { sub: 'alice', act: { sub: 'system:admin' } })).toMatchObject({ ok: false });
  });

  it("a token without act is nobody's agent", () => {
    const v = callerFromClaims(cfg(), { sub: 'alice' });
    expect(v.ok && v.caller.agent).toBeUndefined();
  });
});
