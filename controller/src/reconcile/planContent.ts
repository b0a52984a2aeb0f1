import { createHash } from 'node:crypto';
import type { PromotionPlanSpec } from '@kpromo/api';

/**
 * Pure: sha256 of what a plan promotes (flow, from, to, action, rollbackOf, applications, candidates, requestedBy,
 * requestedByAgent),
 * approvals excluded. Fields are laid out in a fixed order so the digest depends only on the content,
 * not on how a writer ordered its JSON. The controller stores it when a plan starts and refuses to go
 * on with content that differs: the CRD fixes the content at creation, and this holds even where an
 * older CRD without that rule is installed.
 */
export function planContentDigest(spec: PromotionPlanSpec): string {
  const content: unknown[] = [
    spec.flow,
    spec.from,
    spec.to,
    spec.action ?? 'promote',
    spec.rollbackOf ?? null,
    spec.requestedBy ?? null,
    spec.candidates.map((c) => [
      c.application,
      c.from.tag,
      c.from.digest,
      c.to ? [c.to.tag ?? null, c.to.digest ?? null] : null,
    ]),
  ];
  // Appended only when set, so plans created before the field existed keep their digest.
  if (spec.applications) content.push(['applications', ...spec.applications]);
  if (spec.requestedByAgent) content.push(['requestedByAgent', spec.requestedByAgent]);
  return `sha256:${createHash('sha256').update(JSON.stringify(content)).digest('hex')}`;
}
