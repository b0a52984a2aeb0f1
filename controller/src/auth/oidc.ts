import { existsSync, readFileSync } from 'node:fs';
import { createRemoteJWKSet, customFetch, errors, type JWTPayload, jwtVerify } from 'jose';
import { type Egress, EgressError } from '../net/guardedFetch.js';
import type { Logger } from '../observability/logger.js';
import type { JwtAuthenticatorConfig } from './config.js';
import type { Caller } from './identity.js';
import { callerFromClaims, JWT_ALGORITHMS, peekIssuer } from './jwtClaims.js';

// JWT bearer tokens from configured issuers: discovery and JWKS fetched through the egress guard
// (no redirects, bounded bodies, the issuer's own CA), keys cached and refetched on rotation by
// jose (an unknown `kid` triggers a refetch at most once per cooldown), then iss/aud/exp/nbf and the
// signature checked by jose against the algorithm allow-list, then claims mapped (jwtClaims.ts).

const FETCH_TIMEOUT_MS = 5_000;
const MAX_DOC_BYTES = 256 * 1024;
/** After a failed discovery, tokens of that issuer get "unavailable" for this long before a retry. */
const DISCOVERY_RETRY_MS = 10_000;
const CLOCK_SKEW_S = 30;

/** The issuer could not be asked (network, TLS, bad discovery document): not the caller's fault (503). */
export class IssuerUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IssuerUnavailable';
  }
}

export type JwtOutcome =
  | { ok: true; caller: Caller /** ms since the epoch: the token's exp. */; expiresAt?: number }
  | { ok: false; unavailable?: IssuerUnavailable; reason: string };

const isGenericJose = (e: unknown) => e instanceof errors.JOSEError && e.code === 'ERR_JOSE_GENERIC';

/** PEM inline (as kube's certificateAuthority) or a path to a mounted file. */
function loadCa(value: string | undefined, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (value.includes('-----BEGIN CERTIFICATE-----')) return value;
  if (!existsSync(value)) throw new Error(`${field}: neither a PEM certificate nor a readable file: ${value}`);
  const pem = readFileSync(value, 'utf8');
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`${field}: ${value} holds no PEM certificate`);
  return pem;
}

/** One configured issuer: its keys (after discovery, once) and the verification of its tokens. */
class TrustedIssuer {
  private readonly ca?: string;
  private keys?: ReturnType<typeof createRemoteJWKSet>;
  private discovering?: Promise<ReturnType<typeof createRemoteJWKSet>>;
  private failedAt = 0;
  private lastFailure?: IssuerUnavailable;

  constructor(
    readonly cfg: JwtAuthenticatorConfig,
    private readonly egress: Egress,
    field: string,
  ) {
    this.ca = loadCa(cfg.issuer.certificateAuthority, `${field}.issuer.certificateAuthority`);
  }

  /** A 200 body of at most MAX_DOC_BYTES from the issuer, through the egress guard. */
  private async fetchDoc(url: string, what: 'JWKS' | 'discovery document', signal?: AbortSignal): Promise<Buffer> {
    let r: Awaited<ReturnType<Egress['fetch']>>;
    try {
      r = await this.egress.fetch(url, {
        timeoutMs: FETCH_TIMEOUT_MS,
        signal,
        maxBodyBytes: MAX_DOC_BYTES,
        // kube-apiserver answers 406 to a JWKS request that does not accept application/jwk-set+json.
        headers: { accept: what === 'JWKS' ? 'application/jwk-set+json, application/json' : 'application/json' },
        ...(this.ca ? { ca: this.ca } : {}),
      });
    } catch (e) {
      throw new IssuerUnavailable(`${what} ${url}: ${e instanceof EgressError ? e.message : 'request failed'}`);
    }
    if (r.status !== 200) throw new IssuerUnavailable(`${what} ${url} answered HTTP ${r.status}`);
    if (r.truncated) throw new IssuerUnavailable(`${what} ${url} is larger than ${MAX_DOC_BYTES} bytes`);
    return r.body;
  }

  /** jwksURI from config, else the discovery document, whose `issuer` must be the configured url. */
  private async jwksUrl(): Promise<string> {
    const { url, jwksURI, discoveryURL } = this.cfg.issuer;
    if (jwksURI) return jwksURI;
    const where = discoveryURL ?? `${url.replace(/\/$/, '')}/.well-known/openid-configuration`;
    let doc: { issuer?: unknown; jwks_uri?: unknown } | null;
    try {
      doc = JSON.parse((await this.fetchDoc(where, 'discovery document')).toString('utf8'));
    } catch (e) {
      if (e instanceof IssuerUnavailable) throw e;
      throw new IssuerUnavailable(`discovery document ${where} is not JSON`);
    }
    if (doc?.issuer !== url)
      throw new IssuerUnavailable(
        `discovery document ${where} names issuer ${JSON.stringify(doc?.issuer)}, not the configured ${url}`,
      );
    if (typeof doc.jwks_uri !== 'string' || !/^https:\/\//.test(doc.jwks_uri))
      throw new IssuerUnavailable(`discovery document ${where} has no https jwks_uri`);
    return doc.jwks_uri;
  }

  private async discover(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    const href = await this.jwksUrl();
    return createRemoteJWKSet(new URL(href), {
      timeoutDuration: FETCH_TIMEOUT_MS,
      // jose parses and validates the JWKS; the guard decides where it may come from.
      [customFetch]: async (url: string, o: { signal: AbortSignal }) =>
        new Response(new Uint8Array(await this.fetchDoc(url, 'JWKS', o.signal)), {
          status: 200,
          headers: { 'content-type': 'application/json' },
        }),
    });
  }

  private async keySet(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (this.keys) return this.keys;
    if (this.lastFailure && Date.now() - this.failedAt < DISCOVERY_RETRY_MS) throw this.lastFailure;
    this.discovering ??= this.discover().finally(() => {
      this.discovering = undefined;
    });
    try {
      this.keys = await this.discovering;
      this.lastFailure = undefined;
      return this.keys;
    } catch (e) {
      this.failedAt = Date.now();
      this.lastFailure = e instanceof IssuerUnavailable ? e : new IssuerUnavailable((e as Error).message);
      throw this.lastFailure;
    }
  }

  /**
   * Discovery and the JWKS, fetched now as a token's verification would fetch them: the number of
   * keys, or IssuerUnavailable saying what failed (for `kpromo doctor`).
   */
  async probe(): Promise<number> {
    const href = await this.jwksUrl();
    let keys: unknown;
    try {
      keys = (JSON.parse((await this.fetchDoc(href, 'JWKS')).toString('utf8')) as { keys?: unknown }).keys;
    } catch (e) {
      if (e instanceof IssuerUnavailable) throw e;
      throw new IssuerUnavailable(`JWKS ${href} is not JSON`);
    }
    if (!Array.isArray(keys) || !keys.length) throw new IssuerUnavailable(`JWKS ${href} holds no keys`);
    return keys.length;
  }

  async verify(token: string): Promise<JwtOutcome> {
    let payload: JWTPayload;
    try {
      const keys = await this.keySet();
      ({ payload } = await jwtVerify(token, keys, {
        issuer: this.cfg.issuer.url,
        audience: this.cfg.issuer.audiences,
        algorithms: JWT_ALGORITHMS,
        clockTolerance: CLOCK_SKEW_S,
        requiredClaims: ['exp'],
      }));
    } catch (e) {
      // The client learns only that the issuer is unavailable; where and why (internal discovery/JWKS
      // addresses, TLS errors) go to the log. A JWKS that times out, is not JSON or not a key set is
      // the issuer's problem, not the token's.
      const unavailable = () => new IssuerUnavailable(`JWT issuer ${this.cfg.issuer.url} is unavailable`);
      if (e instanceof IssuerUnavailable) return { ok: false, unavailable: unavailable(), reason: e.message };
      if (e instanceof errors.JWKSTimeout || e instanceof errors.JWKSInvalid || isGenericJose(e))
        return { ok: false, unavailable: unavailable(), reason: `JWKS: ${(e as Error).message}` };
      // jose's errors name the check that failed (signature, aud, exp, alg...); they stay in the log.
      return { ok: false, reason: e instanceof errors.JOSEError ? `${e.code}: ${e.message}` : (e as Error).message };
    }
    const v = callerFromClaims(this.cfg, payload as Record<string, unknown>);
    return v.ok ? v : { ok: false, reason: v.reason };
  }
}

/** Verifies JWTs of the configured issuers (`auth.jwt`). */
export class JwtAuthenticator {
  private readonly issuers: Map<string, TrustedIssuer>;

  constructor(
    configs: JwtAuthenticatorConfig[],
    private readonly o: { egress: Egress; log?: Logger },
  ) {
    this.issuers = new Map(configs.map((c, i) => [c.issuer.url, new TrustedIssuer(c, o.egress, `auth.jwt[${i}]`)]));
  }

  /** Each issuer's discovery and JWKS, fetched now: its key count, or what failed. */
  async probe(): Promise<Array<{ issuer: string; keys?: number; error?: string }>> {
    return Promise.all(
      [...this.issuers.values()].map(async (i) => {
        try {
          return { issuer: i.cfg.issuer.url, keys: await i.probe() };
        } catch (e) {
          return { issuer: i.cfg.issuer.url, error: (e as Error).message };
        }
      }),
    );
  }

  /** Whether the token is a JWT naming one of the configured issuers (else: not ours to judge). */
  handles(token: string): boolean {
    const iss = peekIssuer(token);
    return iss !== undefined && this.issuers.has(iss);
  }

  async verify(token: string): Promise<JwtOutcome> {
    const iss = peekIssuer(token);
    const issuer = iss === undefined ? undefined : this.issuers.get(iss);
    if (!issuer) return { ok: false, reason: 'not a JWT of a configured issuer' };
    const r = await issuer.verify(token);
    if (!r.ok) {
      if (r.unavailable) this.o.log?.warn({ issuer: iss, err: r.reason }, 'JWT issuer unavailable');
      else this.o.log?.debug({ issuer: iss, reason: r.reason }, 'JWT bearer token refused');
    }
    return r;
  }
}
