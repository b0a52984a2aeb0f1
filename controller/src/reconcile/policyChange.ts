import { createHash } from 'node:crypto';
import { type Application, type Environment, GOVERNED_FIELDS, type PromotionFlow } from '@kpromo/api';

/** The objects whose governed fields (GOVERNED_FIELDS of @kpromo/api, read by admission too) are recorded. */
export type Governed = PromotionFlow | Environment | Application;

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

/** A governed field's value: `metadata.labels` from the metadata, every other name from the spec. */
function fieldValue(obj: Governed, field: string): unknown {
  if (field === 'metadata.labels') return obj.metadata.labels;
  return (obj.spec as unknown as Record<string, unknown>)[field];
}

/** Pure: a short digest per governed field of a flow, Environment or Application (kept in its status). */
export function policyDigests(obj: Governed): Record<string, string> {
  const kind: 'PromotionFlow' | 'Environment' | 'Application' =
    obj.kind === 'Environment' || obj.kind === 'Application' ? obj.kind : 'PromotionFlow';
  return Object.fromEntries(
    GOVERNED_FIELDS[kind].map((f) => [
      f,
      createHash('sha256')
        .update(canonical(fieldValue(obj, f)))
        .digest('hex')
        .slice(0, 16),
    ]),
  );
}

/**
 * Pure: the governed fields whose digest differs from the one last recorded in status, in their
 * declared order; empty when nothing was recorded yet (a new object). A field with no recorded
 * digest became governed after the status was written (an upgrade): its first digest is recorded
 * without an Event, since nobody changed it.
 */
export function changedPolicyFields(
  recorded: Readonly<Record<string, string>> | undefined,
  now: Readonly<Record<string, string>>,
): string[] {
  if (!recorded) return [];
  return Object.keys(now).filter((f) => f in recorded && recorded[f] !== now[f]);
}

/** The Event message of a policy change: what changed, at which generation, and who says they did it. */
export function policyChangeMessage(obj: Governed, fields: readonly string[]): string {
  const by = obj.metadata.annotations?.[CHANGED_BY_ANNOTATION];
  const who = by
    ? `by ${by}`
    : `by a writer who did not set ${CHANGED_BY_ANNOTATION} (the apiserver audit log names them: audit annotation policy-change of the kpromo governance policy)`;
  return `release policy of ${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name} changed (${fields.join(', ')}; generation ${obj.metadata.generation ?? '?'}) ${who}`;
}
