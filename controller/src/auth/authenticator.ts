import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { KubeRest } from '../kube/rest.js';
import type { Caller } from './identity.js';
import type { JwtAuthenticator } from './oidc.js';

export class AuthError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthError';
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
  error?: string;
}

/**
 * Bearer token -> Caller, like the apiserver's union of authenticators: static tokens (constant-time
 * compare), then JWTs naming a configured issuer (verified here), then TokenReview, which also gets
 * JWTs the issuer check refused (a ServiceAccount token of a cluster whose issuer is configured for
 * another audience still works through TokenReview).
 */
export class Authenticator {
  private readonly cache = new Map<string, { caller: Caller | null; until: number }>();
  constructor(
    private readonly o: {
      control?: KubeRest;
      staticTokens?: Array<{ hash: Buffer; caller: Caller }>;
      jwt?: Pick<JwtAuthenticator, 'handles' | 'verify'>;
      tokenReview: boolean;
      audiences?: string[];
      cacheMs?: number;
    },
  ) {}

  async authenticate(token: string): Promise<Caller> {
    const h = sha(token);
    for (const t of this.o.staticTokens ?? []) if (timingSafeEqual(t.hash, h)) return t.caller;
    let issuerDown: Error | undefined;
    if (this.o.jwt?.handles(token)) {
      const r = await this.o.jwt.verify(token);
      if (r.ok) return r.caller;
      issuerDown = r.unavailable;
    }
    if (!this.o.tokenReview || !this.o.control) {
      if (issuerDown) throw issuerDown;
      throw new AuthError('invalid bearer token');
    }
    try {
      return await this.tokenReview(this.o.control, token, h);
    } catch (e) {
      // Refused by TokenReview too, but the issuer could not be asked: "retry", not "go away".
      if (e instanceof AuthError && issuerDown) throw issuerDown;
      throw e;
    }
  }

  private async tokenReview(control: KubeRest, token: string, h: Buffer): Promise<Caller> {
    const key = h.toString('hex');
    const hit = this.cache.get(key);
    if (hit && hit.until > Date.now()) {
      if (!hit.caller) throw new AuthError('invalid bearer token');
      return hit.caller;
    }
    const r = await control.create<{ status?: TokenReviewStatus }>('/apis/authentication.k8s.io/v1/tokenreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token, ...(this.o.audiences?.length ? { audiences: this.o.audiences } : {}) },
    });
    const st = r.status;
    const caller: Caller | null =
      st?.authenticated && st.user?.username
        ? {
            username: st.user.username,
            groups: st.user.groups ?? [],
            uid: st.user.uid,
            extra: st.user.extra,
            source: 'tokenreview',
          }
        : null;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(key, { caller, until: Date.now() + (this.o.cacheMs ?? 30_000) });
    if (!caller) throw new AuthError('invalid bearer token');
    return caller;
  }
}
