import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { Egress } from '../net/guardedFetch.js';
import { AuthError, Authenticator } from './authenticator.js';
import { AuthConfigSchema, JwtAuthenticatorSchema } from './config.js';
import { authenticateHttp, HttpAuthFailure } from './httpAuth.js';
import { IssuerUnavailable, JwtAuthenticator } from './oidc.js';

// What needs no issuer: configuration, and what happens when the issuer cannot be reached. Tokens
// verified against a real issuer (kube-apiserver's service-account issuer) are in
// controller/test/oidc.int.test.ts.

const ISS = 'https://issuer.example.com';
const issuer = (over: Record<string, unknown> = {}) =>
  JwtAuthenticatorSchema.parse({
    issuer: { url: ISS, audiences: ['kpromo'], ...over },
    claimMappings: { username: { claim: 'sub', prefix: 'oidc:' } },
  });

async function token(iss = ISS) {
  const { privateKey } = await generateKeyPair('RS256');
  return new SignJWT({ sub: 'alice' })
    .setProtectedHeader({ alg: 'RS256' })
    .setIssuer(iss)
    .setAudience('kpromo')
    .setExpirationTime('5m')
    .sign(privateKey);
}

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('auth.jwt configuration', () => {
  it('accepts a kube-style entry and rejects unsafe or unsupported ones with the field', () => {
    const ok = AuthConfigSchema.parse({
      jwt: [
        {
          issuer: { url: ISS, audiences: ['kpromo'], audienceMatchPolicy: 'MatchAny' },
          claimValidationRules: [{ claim: 'hd', requiredValue: 'example.com' }],
          claimMappings: { username: { claim: 'email' }, groups: { claim: 'groups', prefix: 'oidc:' } },
        },
      ],
    });
    expect(ok.jwt?.[0].claimMappings.groups?.prefix).toBe('oidc:');
    const bad = (entry: Record<string, unknown>) => () =>
      AuthConfigSchema.parse({
        jwt: [{ issuer: { url: ISS, audiences: ['kpromo'] }, claimMappings: { username: { claim: 'sub' } }, ...entry }],
      });
    expect(bad({ issuer: { url: 'http://issuer.example.com', audiences: ['a'] } })).toThrow(/https/);
    expect(bad({ issuer: { url: ISS, audiences: [] } })).toThrow(/at least one audience/);
    expect(bad({ issuer: { url: `${ISS}?x=1`, audiences: ['a'] } })).toThrow(/query/);
    expect(bad({ issuer: { url: ISS, audiences: ['a'], jwksURI: 'http://keys.example.com' } })).toThrow(/jwksURI/);
    // CEL is not evaluated here: an expression rule is refused instead of silently ignored.
    expect(bad({ claimValidationRules: [{ expression: 'claims.hd == "x"' }] })).toThrow();
    expect(bad({ claimMappings: { username: { expression: 'claims.sub' } } })).toThrow();
    expect(() =>
      AuthConfigSchema.parse({
        jwt: [0, 1].map(() => ({
          issuer: { url: ISS, audiences: ['a'] },
          claimMappings: { username: { claim: 'sub' } },
        })),
      }),
    ).toThrow(/unique/);
  });

  it('loadConfig names every auth.jwt issuer as an authorization server of the MCP endpoint', () => {
    const c = loadConfig({
      env: {},
      flags: {
        auth: {
          jwt: [{ issuer: { url: ISS, audiences: ['kpromo'] }, claimMappings: { username: { claim: 'sub' } } }],
        },
        mcp: { oauth: { authorizationServers: ['https://as.example.com', ISS] } },
      },
    });
    expect(c.mcp.oauth.authorizationServers).toEqual(['https://as.example.com', ISS]);
  });

  it('reads certificateAuthority inline or from a file and names the field when it is neither', () => {
    const egress = new Egress();
    const dir = mkdtempSync(join(tmpdir(), 'oidc-ca-'));
    const empty = join(dir, 'empty.pem');
    writeFileSync(empty, 'not a certificate');
    expect(
      () => new JwtAuthenticator([issuer({ certificateAuthority: join(dir, 'missing.pem') })], { egress }),
    ).toThrow(/auth\.jwt\[0\]\.issuer\.certificateAuthority: neither a PEM certificate nor a readable file/);
    expect(() => new JwtAuthenticator([issuer({ certificateAuthority: empty })], { egress })).toThrow(
      /holds no PEM certificate/,
    );
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    expect(() => new JwtAuthenticator([issuer({ certificateAuthority: pem })], { egress })).not.toThrow();
  });
});

describe('JwtAuthenticator without a reachable issuer', () => {
  it('leaves tokens of other issuers and non-JWTs alone (401, nothing fetched)', async () => {
    const jwt = new JwtAuthenticator([issuer()], { egress: new Egress() });
    expect(jwt.handles(await token('https://other.example.com'))).toBe(false);
    expect(jwt.handles('static-token-0123456789')).toBe(false);
    expect(jwt.handles(await token())).toBe(true);
    const a = new Authenticator({ jwt, tokenReview: false });
    await expect(a.authenticate(await token('https://other.example.com'))).rejects.toBeInstanceOf(AuthError);
  });

  it('an issuer the egress guard refuses is "unavailable" (503), not a bad token (401)', async () => {
    // Default policy: loopback is blocked, so discovery at 127.0.0.1 never leaves the process.
    const jwt = new JwtAuthenticator([issuer({ jwksURI: 'https://127.0.0.1:1/keys' })], { egress: new Egress() });
    const r = await jwt.verify(await token());
    expect(r.ok).toBe(false);
    expect(!r.ok && r.unavailable).toBeInstanceOf(IssuerUnavailable);
    expect(!r.ok && r.reason).toMatch(/JWKS https:\/\/127\.0\.0\.1:1\/keys: blocked by egress policy: .*loopback/);
  });

  it('an issuer that does not answer gives 503 through the HTTP door', async () => {
    const port = await closedPort();
    const egress = new Egress({ allowedCidrs: ['127.0.0.1/32'] });
    const jwt = new JwtAuthenticator([issuer({ discoveryURL: `https://127.0.0.1:${port}/.well-known/x` })], {
      egress,
    });
    const deps = {
      authenticator: new Authenticator({ jwt, tokenReview: false }),
      authorizer: { check: async () => ({ allowed: false, reason: '' }) },
    };
    const err = await authenticateHttp(deps, { authorization: `Bearer ${await token()}` }).catch((e) => e);
    expect(err).toBeInstanceOf(HttpAuthFailure);
    expect(err.status).toBe(503);
    // The client hears which issuer, not the (possibly internal) address tried or the network error.
    expect(err.message).toBe(`token validation unavailable, retry later (JWT issuer ${ISS} is unavailable)`);
    const r = await jwt.verify(await token());
    expect(!r.ok && r.reason).toMatch(
      new RegExp(`discovery document https://127\\.0\\.0\\.1:${port}/.*connection failed \\(ECONNREFUSED\\)`),
    );
  });
});
