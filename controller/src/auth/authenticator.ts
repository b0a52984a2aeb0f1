import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { KubeRest } from '../kube/rest.js';
import type { Caller } from './identity.js';

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

/** Bearer token -> Caller. Static tokens are compared in constant time; others go to TokenReview. */
export class Authenticator {
  private readonly cache = new Map<string, { caller: Caller | null; until: number }>();
  constructor(
    private readonly o: {
      control?: KubeRest;
      staticTokens?: Array<{ hash: Buffer; caller: Caller }>;
      tokenReview: boolean;
      audiences?: string[];
      cacheMs?: number;
    },
  ) {}

  async authenticate(token: string): Promise<Caller> {
    const h = sha(token);
    for (const t of this.o.staticTokens ?? []) if (timingSafeEqual(t.hash, h)) return t.caller;
    if (!this.o.tokenReview || !this.o.control) throw new AuthError('invalid bearer token');
    const key = h.toString('hex');
    const hit = this.cache.get(key);
    if (hit && hit.until > Date.now()) {
      if (!hit.caller) throw new AuthError('invalid bearer token');
      return hit.caller;
    }
    const r = await this.o.control.create<{ status?: TokenReviewStatus }>(
      '/apis/authentication.k8s.io/v1/tokenreviews',
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token, ...(this.o.audiences?.length ? { audiences: this.o.audiences } : {}) },
      },
    );
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
