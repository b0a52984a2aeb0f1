import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The call a confirmation is for: the model's tool call id, the tool and its exact arguments. */
export interface ConfirmableCall {
  id: string;
  name: string;
  /** The arguments JSON as the model sent it (the loop runs exactly what was shown). */
  arguments: string;
}

export type ConfirmationCheck = { ok: true } | { ok: false; reason: string };

/** Canonical JSON (object keys sorted), so equal arguments hash alike however they were spelt. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

export function argumentsHash(args: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args || '{}');
  } catch {
    parsed = args;
  }
  return createHash('sha256').update(canonicalJson(parsed)).digest('base64url');
}

/**
 * Confirmation tokens for tool calls that change something: issued when the loop stops at such a
 * call, they are bound to the user, the call id, the tool and a hash of its arguments, expire after
 * `ttlMs` and are accepted once. The key lives in this process only: a restart voids open tokens.
 */
export class ConfirmationBinder {
  private readonly used = new Map<string, number>();

  constructor(
    private readonly key: Buffer = randomBytes(32),
    private readonly ttlMs = 5 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  private mac(user: string, call: ConfirmableCall, exp: number, nonce: string): Buffer {
    return createHmac('sha256', this.key)
      .update(JSON.stringify([user, call.id, call.name, argumentsHash(call.arguments), exp, nonce]))
      .digest();
  }

  issue(user: string, call: ConfirmableCall): { token: string; expiresAt: Date } {
    const exp = this.now() + this.ttlMs;
    const nonce = randomBytes(12).toString('base64url');
    const token = `${exp}.${nonce}.${this.mac(user, call, exp, nonce).toString('base64url')}`;
    return { token, expiresAt: new Date(exp) };
  }

  /** Checks a token for `user` and `call`; a valid one is used up. */
  redeem(user: string, call: ConfirmableCall, token: string): ConfirmationCheck {
    const [expText, nonce, sig, extra] = token.split('.');
    const exp = Number(expText);
    if (extra !== undefined || !nonce || !sig || !Number.isSafeInteger(exp))
      return { ok: false, reason: 'the confirmation token is malformed' };
    const want = this.mac(user, call, exp, nonce);
    const got = Buffer.from(sig, 'base64url');
    if (got.length !== want.length || !timingSafeEqual(got, want))
      return {
        ok: false,
        reason: `the confirmation does not match this call (${call.name} with these arguments) or this user`,
      };
    const now = this.now();
    for (const [n, e] of this.used) if (e < now) this.used.delete(n);
    if (exp < now) return { ok: false, reason: 'the confirmation expired: ask the assistant again' };
    if (this.used.has(nonce)) return { ok: false, reason: 'this confirmation was already used' };
    this.used.set(nonce, exp);
    return { ok: true };
  }
}
