import { createHash } from 'node:crypto';
import type { Environment, PromotionFlow } from '@kpromo/api';

/**
 * The fields of release policy, as the admission policy kpromo-governance names them
 * (examples/deploy/admission-policy.yaml): changing any of them needs the `govern` verb.
 */
export const GOVERNED_FIELDS = {
  PromotionFlow: ['stages', 'approval', 'selector', 'tagPattern', 'signaturePolicy', 'promotionAttestation'],
  Environment: ['cluster', 'namespace', 'registry', 'delivery', 'freezeWindows', 'tier'],
} as const;

/** Annotation a writer may set to their own name when changing policy (admission checks it). */
export const CHANGED_BY_ANNOTATION = 'promotions.kpromo.dev/changed-by';

/** JSON with sorted keys: the digest of a field depends on its value, not on how a writer ordered it. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v ?? null);
}

/** Pure: a short digest per governed field of a flow or Environment (kept in its status). */
export function policyDigests(obj: PromotionFlow | Environment): Record<string, string> {
  const kind = obj.kind === 'Environment' ? 'Environment' : 'PromotionFlow';
  const spec = obj.spec as unknown as Record<string, unknown>;
  return Object.fromEntries(
    GOVERNED_FIELDS[kind].map((f) => [f, createHash('sha256').update(canonical(spec[f])).digest('hex').slice(0, 16)]),
  );
}

/**
 * Pure: the governed fields whose digest differs from the one last recorded in status, in their
 * declared order; empty when nothing was recorded yet (a new object, or one from before this field).
 */
export function changedPolicyFields(
  recorded: Readonly<Record<string, string>> | undefined,
  now: Readonly<Record<string, string>>,
): string[] {
  if (!recorded) return [];
  return Object.keys(now).filter((f) => recorded[f] !== now[f]);
}

/** The Event message of a policy change: what changed, at which generation, and who says they did it. */
export function policyChangeMessage(obj: PromotionFlow | Environment, fields: readonly string[]): string {
  const by = obj.metadata.annotations?.[CHANGED_BY_ANNOTATION];
  const who = by
    ? `by ${by}`
    : `by a writer who did not set ${CHANGED_BY_ANNOTATION} (the apiserver audit log names them: audit annotation policy-change of the kpromo governance policy)`;
  return `release policy of ${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name} changed (${fields.join(', ')}; generation ${obj.metadata.generation ?? '?'}) ${who}`;
}
