import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { applyCrds, kubeConfigFor, waitFor } from '@kpromo/test-harness';
import { applyCr, deleteNs, ensureNs, restFor } from '@kpromo/test-harness/controller';
import { INIT, modernClient, ok, rawPost, type ToolOut, text } from '@kpromo/test-harness/mcpClient';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Access } from '../src/api/access.js';
import { Authenticator } from '../src/auth/authenticator.js';
import { Authorizer } from '../src/auth/authorizer.js';
import { AUTH_DEFAULTS, type JwtAuthenticatorConfig, JwtAuthenticatorSchema } from '../src/auth/config.js';
import { httpAuthFrom } from '../src/auth/httpAuth.js';
import { IssuerUnavailable, JwtAuthenticator } from '../src/auth/oidc.js';
import { loadConfig } from '../src/config.js';
import { ClusterClients } from '../src/kube/clusters.js';
import { LiveCache } from '../src/kube/liveCache.js';
import { type McpHttp, startMcpHttp } from '../src/mcp/http.js';
import { Egress } from '../src/net/guardedFetch.js';
import { createLogger } from '../src/observability/logger.js';
import { BUILTIN_WORKLOAD_KINDS } from '../src/rollout/registry.js';
import { createApp, listen } from '../src/server/httpServer.js';

// The issuer is real: the dev cluster's kube-apiserver, whose service-account issuer publishes an
// OIDC discovery document and JWKS (kube's ServiceAccountIssuerDiscovery). Tokens come from its
// TokenRequest API. The controller's TokenReview is OFF in the server under test, so a token that
// gets in got in through the JWT path. Unauthenticated clients may read the discovery document and
// JWKS only when RBAC lets system:unauthenticated do so (off by default): the test binds the
// built-in system:service-account-issuer-discovery ClusterRole to that group, as the Kubernetes docs
// suggest for public issuers, and removes the binding afterwards.
//
// Where the test plays the issuer: expired and not-yet-valid tokens cannot be minted by TokenRequest
// (it clamps lifetimes), so those are signed here with the cluster's own service-account signing key
// (the key file the harness gave the apiserver); the controller still verifies them against the JWKS
// the apiserver serves. Forged tokens are signed with a key generated here.

const RUN = Math.random().toString(36).slice(2, 7);
const NS = `oidc-${RUN}`;
const SA = 'agent';
const AUD = 'kpromo-mcp';
const PREFIX = 'oidc:';
const USER = `${PREFIX}system:serviceaccount:${NS}:${SA}`;
const DISCOVERY_BINDING = `kpromo-oidc-discovery-${RUN}`;
const kubeconfig = inject('kubeconfig');
const dev = restFor(kubeconfig, 'dev');
const cluster = dev.kc.getCurrentCluster()!;
const CA_PEM = Buffer.from(cluster.caData ?? '', 'base64').toString('utf8');
const SA_SIGNING_KEY = join(dirname(kubeconfig), 'pki', 'sa.key');

const logLines: string[] = [];
const log = createLogger({ level: 'debug', destination: { write: (s: string) => void logLines.push(s) } });
const logged = () =>
  logLines
    .flatMap((l) => l.split('\n'))
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const refusals = () => logged().filter((l) => l.msg === 'JWT bearer token refused');

// Loopback is outside the egress guard's default policy; the test allows the local apiserver.
const egress = new Egress({ allowedCidrs: ['127.0.0.1/32'] });
let ISSUER = '';
let issuerCfg: JwtAuthenticatorConfig;
let cache: LiveCache;
let mcp: McpHttp;
let api: { close(): void };
let apiPort = 0;
let authorizer: Authorizer;

const jwtConfig = (over: { issuer?: Record<string, unknown>; claimMappings?: Record<string, unknown> } = {}) =>
  JwtAuthenticatorSchema.parse({
    issuer: {
      url: ISSUER,
      discoveryURL: `${cluster.server}/.well-known/openid-configuration`,
      certificateAuthority: CA_PEM,
      audiences: [AUD],
      ...over.issuer,
    },
    claimMappings: over.claimMappings ?? { username: { claim: 'sub', prefix: PREFIX } },
  });

async function saToken(audiences: string[]): Promise<string> {
  const r = await dev.create<{ status: { token: string } }>(`/api/v1/namespaces/${NS}/serviceaccounts/${SA}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { audiences, expirationSeconds: 600 },
  });
  return r.status.token;
}

/** GET without credentials, trusting the cluster CA (what the controller's fetch will see). */
function anonymousGet(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(new URL(path, cluster.server), { ca: CA_PEM, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
const claimsOf = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;

function sign(key: KeyObject, kid: string, claims: Record<string, unknown>, times: { iat: number; exp: number }) {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid })
    .setIssuer(ISSUER)
    .setAudience(AUD)
    .setSubject(`system:serviceaccount:${NS}:${SA}`)
    .setIssuedAt(times.iat)
    .setNotBefore(times.iat)
    .setExpirationTime(times.exp)
    .sign(key);
}

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await ensureNs(dev, NS);
  ISSUER = (await dev.get<{ issuer: string }>('/.well-known/openid-configuration')).issuer;
  await dev.create('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: DISCOVERY_BINDING },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'system:service-account-issuer-discovery',
    },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:unauthenticated' }],
  });
  await waitFor('anonymous JWKS readable', async () => (await anonymousGet('/openid/v1/jwks')).status === 200, 30_000);
  await dev.create(`/api/v1/namespaces/${NS}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: SA, namespace: NS },
  });
  // The JWT identity (prefixed, so never a system: name) may read, not create plans.
  await dev.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'reader', namespace: NS },
    rules: [
      { apiGroups: ['promotions.kpromo.dev'], resources: ['applications', 'promotionplans'], verbs: ['get', 'list'] },
    ],
  });
  await dev.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'reader', namespace: NS },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: USER }],
  });
  await applyCr(dev, {
    kind: 'Application',
    metadata: { name: 'cart', namespace: NS },
    spec: {
      owner: 'team-a',
      image: { repository: `oidc${RUN}/cart` },
      workloads: [{ kind: 'Deployment', name: 'cart' }],
    },
  });

  issuerCfg = jwtConfig();
  // The MCP config as the controller builds it: loadConfig lists the auth.jwt issuer for RFC 9728.
  const cfg = loadConfig({
    env: {},
    flags: {
      mcp: { enabled: true, host: '127.0.0.1', port: 0, write: true },
      auth: { tokenReview: false, jwt: [issuerCfg] },
    },
  });
  const clients = ClusterClients.fromFile(kubeconfig, 'dev', [
    { namespaces: [NS], contexts: ['dev'], kubeconfigSecrets: [], inCluster: false, targetNamespaces: [] },
  ]);
  cache = new LiveCache(clients, [NS], { workloadKinds: BUILTIN_WORKLOAD_KINDS });
  await cache.start(AbortSignal.timeout(30_000));
  await waitFor('cart cached', async () => !!cache.getApplication(NS, 'cart'), 30_000);
  authorizer = new Authorizer(clients.control);
  const ctx = { cache, control: clients.control, access: new Access(authorizer), namespace: NS };
  // One authenticator for both doors, as in the runtime.
  const auth = httpAuthFrom(clients.control, cfg.auth, authorizer, { egress, log });
  mcp = await startMcpHttp(ctx, cfg.mcp, { log, auth });
  const server = await listen(
    createApp({ api: ctx, auth, healthy: () => ({ ok: true }), ready: () => ({ ready: true, detail: {} }) }),
    '127.0.0.1',
    0,
  );
  api = server;
  apiPort = (server.address() as { port: number }).port;
});

afterAll(async () => {
  await mcp?.close();
  api?.close();
  cache?.stop();
  await dev
    .delete(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${DISCOVERY_BINDING}`)
    .catch(() => undefined);
  await deleteNs(dev, NS);
});

const apiGet = (path: string, token: string) =>
  fetch(`http://127.0.0.1:${apiPort}${path}`, { headers: { authorization: `Bearer ${token}` } });

describe('JWT bearer tokens from a real OIDC issuer (kube-apiserver service-account issuer)', () => {
  it('a TokenRequest token for the kpromo-mcp audience is the prefixed sub; Kubernetes RBAC allows reads, refuses plan creation', async () => {
    const token = await saToken([AUD]);
    expect(claimsOf(token)).toMatchObject({ iss: ISSUER, aud: [AUD], sub: `system:serviceaccount:${NS}:${SA}` });

    const c = await modernClient(mcp.url, token);
    try {
      const tool = async (name: string, args: Record<string, unknown>) =>
        (await c.callTool({ name, arguments: args })) as ToolOut;
      const listed = ok<{ applications: Array<{ name: string }> }>(await tool('list', { namespace: NS }));
      expect(listed.applications.map((a) => a.name)).toEqual(['cart']);
      const plan = await tool('plan', { namespace: NS, from: 'dev', to: 'stable' });
      expect(plan.isError).toBe(true);
      expect(text(plan)).toBe(`forbidden: ${USER} may not create promotionplans in namespace ${NS} (Kubernetes RBAC)`);
    } finally {
      await c.close();
    }

    // The JSON API shares the authenticator: same identity, same RBAC.
    const apps = await apiGet(`/api/v1/applications?namespace=${NS}`, token);
    expect(apps.status).toBe(200);
    expect(JSON.stringify(await apps.json())).toContain('"cart"');
    const create = await fetch(`http://127.0.0.1:${apiPort}/api/v1/plans`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: NS, from: 'dev', to: 'stable' }),
    });
    expect(create.status).toBe(403);
    expect(((await create.json()) as { error: string }).error).toBe(
      `forbidden: ${USER} may not create promotionplans in namespace ${NS} (Kubernetes RBAC)`,
    );
    // The audit lines record how the caller got in: the JWT path, with system:authenticated added.
    const audits = logged().filter((l) => l.audit && l.msg === 'mcp tool call');
    expect(audits.map((l) => [l.tool, l.user, l.authSource, l.result])).toEqual([
      ['list', USER, 'oidc', 'ok'],
      ['plan', USER, 'oidc', 'refused'],
    ]);
    expect(audits[0].groups).toEqual(['system:authenticated']);
  });

  it('the protected-resource metadata names the issuer; every refused token gets 401 with resource_metadata and no reason', async () => {
    const base = new URL(mcp.url);
    const meta = await fetch(new URL('/.well-known/oauth-protected-resource/mcp', base));
    expect(((await meta.json()) as { authorization_servers: string[] }).authorization_servers).toEqual([ISSUER]);
    const challenge = `Bearer realm="kpromo-mcp", error="invalid_token", resource_metadata="${new URL('/.well-known/oauth-protected-resource/mcp', base).href}"`;

    const good = await saToken([AUD]);
    const [h, p] = good.split('.');
    const { kid } = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as { kid: string };
    const now = Math.floor(Date.now() / 1000);
    const issuerKey = createPrivateKey(readFileSync(SA_SIGNING_KEY));
    const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const publicJwks = (await anonymousGet('/openid/v1/jwks')).body;
    // Positive control for the tokens signed here: the issuer's key and live times are accepted.
    const control = await sign(issuerKey, kid, {}, { iat: now - 60, exp: now + 600 });
    expect((await rawPost(mcp.url, { authorization: `Bearer ${control}` }, INIT)).status).toBe(200);

    const cases: Array<[string, string, RegExp]> = [
      [
        'audience kpromo (not kpromo-mcp)',
        await saToken(['kpromo']),
        /ERR_JWT_CLAIM_VALIDATION_FAILED: unexpected "aud"/,
      ],
      [
        'signed by another key, same kid',
        await sign(otherKey, kid, {}, { iat: now, exp: now + 600 }),
        /ERR_JWS_SIGNATURE_VERIFICATION_FAILED/,
      ],
      [
        'signed by another key, unknown kid',
        await sign(otherKey, 'not-a-kid', {}, { iat: now, exp: now + 600 }),
        /ERR_JWKS_NO_MATCHING_KEY/,
      ],
      [
        'payload changed after signing',
        `${h}.${b64({ ...claimsOf(good), sub: `system:serviceaccount:${NS}:admin` })}.${good.split('.')[2]}`,
        /ERR_JWS_SIGNATURE_VERIFICATION_FAILED/,
      ],
      ['expired an hour ago', await sign(issuerKey, kid, {}, { iat: now - 7200, exp: now - 3600 }), /ERR_JWT_EXPIRED/],
      [
        'not valid before an hour from now',
        await sign(issuerKey, kid, {}, { iat: now + 3600, exp: now + 7200 }),
        /ERR_JWT_CLAIM_VALIDATION_FAILED: "nbf"/,
      ],
      ['alg none with a signature part', `${b64({ alg: 'none', kid })}.${p}.AAAA`, /ERR_JOSE_ALG_NOT_ALLOWED/],
      [
        'HS256 keyed with the public JWKS (algorithm confusion)',
        await new SignJWT(claimsOf(good))
          .setProtectedHeader({ alg: 'HS256', kid })
          .sign(new TextEncoder().encode(publicJwks)),
        /ERR_JOSE_ALG_NOT_ALLOWED/,
      ],
    ];
    for (const [what, token, reason] of cases) {
      const before = refusals().length;
      const r = await rawPost(mcp.url, { authorization: `Bearer ${token}` }, INIT);
      expect(r.status, what).toBe(401);
      expect(r.headers['www-authenticate'], what).toBe(challenge);
      expect(JSON.parse(r.body).error.message, what).toBe('invalid bearer token');
      const logged = refusals().slice(before);
      expect(logged.length, what).toBe(1);
      expect(logged[0], what).toMatchObject({ level: 'debug', issuer: ISSUER, reason: expect.stringMatching(reason) });
      expect((await apiGet(`/api/v1/applications?namespace=${NS}`, token)).status, `${what} (JSON API)`).toBe(401);
    }
    // alg none without a signature is not even a JWT candidate: refused without the JWT path.
    const refusedBefore = refusals().length;
    const unsigned = await rawPost(mcp.url, { authorization: `Bearer ${b64({ alg: 'none' })}.${p}.` }, INIT);
    expect(unsigned.status).toBe(401);
    expect(unsigned.headers['www-authenticate']).toBe(challenge);
    expect(refusals().length).toBe(refusedBefore);
  });

  it('maps like kube: default prefix issuer#, no system: identities, jwksURI + CA file works without discovery', async () => {
    const token = await saToken([AUD]);
    const caFile = join(mkdtempSync(join(tmpdir(), 'oidc-ca-')), 'ca.crt');
    writeFileSync(caFile, CA_PEM);
    const viaJwks = new JwtAuthenticator(
      [
        jwtConfig({
          issuer: {
            discoveryURL: undefined,
            jwksURI: `${cluster.server}/openid/v1/jwks`,
            certificateAuthority: caFile,
          },
          claimMappings: { username: { claim: 'sub' } },
        }),
      ],
      { egress, log },
    );
    expect(await viaJwks.verify(token)).toEqual({
      ok: true,
      caller: {
        username: `${ISSUER}#system:serviceaccount:${NS}:${SA}`,
        groups: ['system:authenticated'],
        source: 'oidc',
      },
    });
    // prefix "" would make the caller system:serviceaccount:… — the apiserver's own namespace of names.
    const unprefixed = new JwtAuthenticator(
      [jwtConfig({ claimMappings: { username: { claim: 'sub', prefix: '' } } })],
      {
        egress,
        log,
      },
    );
    expect(await unprefixed.verify(token)).toMatchObject({ ok: false, reason: /reserved system: prefix/ });
    // Without the issuer's CA the TLS handshake fails: unavailable, not accepted.
    const noCa = new JwtAuthenticator([jwtConfig({ issuer: { certificateAuthority: undefined } })], { egress, log });
    const r = await noCa.verify(token);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.unavailable?.message).toBe(`JWT issuer ${ISSUER} is unavailable`);
    expect(!r.ok && r.reason).toMatch(/discovery document https:\/\/127\.0\.0\.1:\d+\/.*connection failed/);
  });

  it('a discovery document naming another issuer is refused (the issuer is unavailable, not trusted)', async () => {
    const other = 'https://not-this-cluster.example';
    const jwt = new JwtAuthenticator([jwtConfig({ issuer: { url: other } })], { egress, log });
    const forged = `${b64({ alg: 'RS256' })}.${b64({ iss: other, sub: 'x', aud: AUD, exp: 9e9 })}.AAAA`;
    const r = await jwt.verify(forged);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.unavailable).toBeInstanceOf(IssuerUnavailable);
    expect(!r.ok && r.reason).toBe(
      `discovery document ${cluster.server}/.well-known/openid-configuration names issuer "${ISSUER}", not the configured ${other}`,
    );
  });

  it('with TokenReview on, ServiceAccount tokens for kpromo still go through TokenReview; kpromo-mcp ones through the JWT path', async () => {
    const a = new Authenticator({
      control: dev,
      jwt: new JwtAuthenticator([issuerCfg], { egress, log }),
      tokenReview: true,
      audiences: AUTH_DEFAULTS.tokenAudiences,
    });
    expect(await a.authenticate(await saToken(['kpromo']))).toMatchObject({
      username: `system:serviceaccount:${NS}:${SA}`,
      source: 'tokenreview',
    });
    expect(await a.authenticate(await saToken([AUD]))).toMatchObject({ username: USER, source: 'oidc' });
    // Neither audience: refused by both.
    await expect(a.authenticate(await saToken(['someone-else']))).rejects.toThrow(/invalid bearer token/);
  });
});
