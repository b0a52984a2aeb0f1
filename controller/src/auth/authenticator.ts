import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { BudgetExhausted, ConcurrencyBudget, type ConcurrencyBudgetOptions } from '../kube/rateLimit.js';
import type { KubeRest } from '../kube/rest.js';
import { metrics } from '../observability/metrics.js';
import type { Caller } from './identity.js';
import { peekExpiry } from './jwtClaims.js';
import type { JwtAuthenticator } from './oidc.js';

export class AuthError extends Error {
  constructor(
    message: string,
    /** cached: refused again from the refusal cache, without asking anyone. */
    readonly why: 'invalid' | 'cached' = 'invalid',
  ) {
    super(message);
    this.name = 'AuthError';
  }
}

/** The token review budget is full: nothing was asked, the caller should retry shortly (503). */
export class AuthBusy extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthBusy';
  }
}

const StaticTokens = z.object({
  tokens: z.array(
    z.object({
      token: z.string().min(16, 'static tokens must be at least 16 characters'),
      username: z.string().min(1),
      groups: z.array(z.string()).default([]),
    }),
  ),
});

const sha = (s: string) => createHash('sha256').update(s).digest();

export function loadStaticTokens(file: string): Array<{ hash: Buffer; caller: Caller }> {
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new AuthError(`static tokens file ${file}: ${(e as Error).message.split('\n')[0]}`);
  }
  const r = StaticTokens.safeParse(parsed);
  if (!r.success)
    throw new AuthError(
      `static tokens file ${file}: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return r.data.tokens.map((t) => ({
    hash: sha(t.token),
    caller: { username: t.username, groups: t.groups, source: 'static' as const },
  }));
}

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  audiences?: string[];
  error?: string;
}

/** Entries that expire, at most `size` of them: beyond, the oldest goes (not the whole cache). */
class BoundedTtlCache<V> {
  private readonly m = new Map<string, { v: V; until: number }>();
  constructor(private readonly size: number) {}
  get(key: string, now = Date.now()): V | undefined {
    const e = this.m.get(key);
    if (!e) return undefined;
    if (e.until > now) return e.v;
    this.m.delete(key);
    return undefined;
  }
  set(key: string, v: V, until: number): void {
    if (this.size <= 0) return;
    this.m.delete(key);
    while (this.m.size >= this.size) this.m.delete(this.m.keys().next().value as string);
    this.m.set(key, { v, until });
  }
  get length(): number {
    return this.m.size;
  }
}

export interface AuthenticatorOptions {
  /** The client TokenReviews go through: its own (runtime.ts), never the one of Lease renewals. */
  control?: KubeRest;
  staticTokens?: Array<{ hash: Buffer; caller: Caller }>;
  jwt?: Pick<JwtAuthenticator, 'handles' | 'verify'>;
  tokenReview: boolean;
  /** Audiences asked for in each TokenReview; the answer's status.audiences must then name one. */
  audiences?: string[];
  /** How long a valid token is remembered (ms; a JWT at most until its exp). Default 30 s. */
  cacheMs?: number;
  /** How long a refused token is remembered, by its sha256 (ms). Default 10 s. */
  refusedCacheMs?: number;
  /** Entries of each cache (valid, refused). Default 10,000. */
  cacheSize?: number;
  /** TokenReviews at once and waiting; beyond, {@link AuthBusy}. Default 4 / 32 / 2 s. */
  budget?: ConcurrencyBudgetOptions;
}

/**
 * Bearer token -> Caller, like the apiserver's union of authenticators: static tokens (constant-time
 * compare), then JWTs naming a configured issuer (verified here), then TokenReview, which also gets
 * JWTs the issuer check refused (a ServiceAccount token of a cluster whose issuer is configured for
 * another audience still works through TokenReview).
 *
 * Built so that strangers cannot use it against the controller: valid and refused tokens are cached
 * apart (junk never pushes a valid token out), a refused token is answered from the refusal cache
 * (by its sha256) without asking again, concurrent checks of one token share one review, and
 * TokenReviews run within a bounded budget ({@link ConcurrencyBudget}): beyond it {@link AuthBusy}
 * at once rather than a queue without end.
 */
export class Authenticator {
  private readonly valid: BoundedTtlCache<Caller>;
  private readonly refused: BoundedTtlCache<true>;
  private readonly pending = new Map<string, Promise<Caller>>();
  readonly budget: ConcurrencyBudget;
  private readonly cacheMs: number;
  private readonly refusedCacheMs: number;

  constructor(private readonly o: AuthenticatorOptions) {
    this.valid = new BoundedTtlCache(o.cacheSize ?? 10_000);
    this.refused = new BoundedTtlCache(o.cacheSize ?? 10_000);
    this.cacheMs = o.cacheMs ?? 30_000;
    this.refusedCacheMs = o.refusedCacheMs ?? 10_000;
    this.budget = new ConcurrencyBudget(o.budget ?? { maxInFlight: 4, maxQueued: 32, maxWaitMs: 2_000 });
  }

  /** The caller of a token known to be valid without asking anyone (static, or cached); else undefined. */
  known(token: string): Caller | undefined {
    const h = sha(token);
    for (const t of this.o.staticTokens ?? []) if (timingSafeEqual(t.hash, h)) return t.caller;
    return this.valid.get(h.toString('hex'));
  }

  async authenticate(token: string): Promise<Caller> {
    const h = sha(token);
    for (const t of this.o.staticTokens ?? []) if (timingSafeEqual(t.hash, h)) return t.caller;
    const key = h.toString('hex');
    const hit = this.valid.get(key);
    if (hit) return hit;
    if (this.refused.get(key)) throw new AuthError('invalid bearer token', 'cached');
    // Concurrent requests with one token (a client's burst, or a flood repeating one token) share one check.
    const running = this.pending.get(key);
    if (running) return running;
    const p = this.check(token, key).finally(() => this.pending.delete(key));
    this.pending.set(key, p);
    return p;
  }

  private async check(token: string, key: string): Promise<Caller> {
    let issuerDown: Error | undefined;
    if (this.o.jwt?.handles(token)) {
      const r = await this.o.jwt.verify(token);
      if (r.ok) {
        // Verified, exp required: remembered no longer than the token is valid.
        const until = Math.min(Date.now() + this.cacheMs, peekExpiry(token) ?? 0);
        this.valid.set(key, r.caller, until);
        return r.caller;
      }
      issuerDown = r.unavailable;
    }
    try {
      if (!this.o.tokenReview || !this.o.control) throw new AuthError('invalid bearer token');
      const caller = await this.tokenReview(this.o.control, token);
      this.valid.set(key, caller, Date.now() + this.cacheMs);
      return caller;
    } catch (e) {
      if (!(e instanceof AuthError)) throw e;
      // Refused by TokenReview too, but the issuer could not be asked: "retry", not "go away" (and
      // not remembered as refused).
      if (issuerDown) throw issuerDown;
      this.refused.set(key, true, Date.now() + this.refusedCacheMs);
      throw e;
    }
  }

  private async tokenReview(control: KubeRest, token: string): Promise<Caller> {
    const audiences = this.o.audiences?.length ? this.o.audiences : undefined;
    let r: { status?: TokenReviewStatus };
    try {
      r = await this.budget.run(() => {
        this.reportBudget();
        return control.create<{ status?: TokenReviewStatus }>('/apis/authentication.k8s.io/v1/tokenreviews', {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token, ...(audiences ? { audiences } : {}) },
        });
      });
    } catch (e) {
      if (e instanceof BudgetExhausted) throw new AuthBusy(`token review budget full (${e.message})`);
      metrics.tokenReviews.inc({ result: 'error' });
      throw e;
    } finally {
      this.reportBudget();
    }
    const st = r.status;
    // As the TokenReview API asks of clients that set spec.audiences: the answer must name one of
    // them, else the authenticator that said yes did not check the token was minted for us.
    const forUs = !audiences || (st?.audiences ?? []).some((a) => audiences.includes(a));
    const ok = !!(st?.authenticated && st.user?.username && forUs);
    metrics.tokenReviews.inc({ result: ok ? 'authenticated' : 'refused' });
    if (!ok || !st?.user?.username) throw new AuthError('invalid bearer token');
    return {
      username: st.user.username,
      groups: st.user.groups ?? [],
      uid: st.user.uid,
      extra: st.user.extra,
      source: 'tokenreview',
    };
  }

  private reportBudget() {
    metrics.tokenReviewsInFlight.set({ state: 'running' }, this.budget.running);
    metrics.tokenReviewsInFlight.set({ state: 'queued' }, this.budget.queued);
  }
}
