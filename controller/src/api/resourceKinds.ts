/**
 * Which kinds resource actions (POST /api/v1/resources, config `resourceKinds`) may never write.
 * Pure, shared by the config check at load and the route's own refusal (defence in depth).
 */

/**
 * Why a group is never written, or undefined when it may be opened. The route writes with the
 * controller's own identity once RBAC allowed the caller, so admission sees the controller, not the
 * caller: kpromo's own kinds (approvals, governed policy) are judged by admission as their writer
 * and go through the plan routes or kubectl; Kubernetes' own kinds (core, apps, batch, policy,
 * *.k8s.io: workloads, RBAC, admission, Secrets) must never be written with the controller's
 * identity. A group without a dot is built in: a CRD's group must contain one.
 */
export function neverWritten(group: string): string | undefined {
  if (group === 'promotions.kpromo.dev')
    return 'kpromo kinds are judged by admission as their writer: use the plan routes, or kubectl as yourself';
  if (!group.includes('.') || group === 'k8s.io' || group.endsWith('.k8s.io'))
    return 'Kubernetes built-in kinds are never written with the controller identity';
  return undefined;
}

/** `<plural>.<group>` split at the first dot. */
export function splitResourceKind(entry: string): { plural: string; group: string } {
  const dot = entry.indexOf('.');
  return dot < 0 ? { plural: entry, group: '' } : { plural: entry.slice(0, dot), group: entry.slice(dot + 1) };
}

/** Why a `resourceKinds` entry cannot be opened (naming it), or undefined. */
export function resourceKindEntryProblem(entry: string): string | undefined {
  const never = neverWritten(splitResourceKind(entry).group);
  return never
    ? `${entry} cannot be opened to resource actions: ${never}; list only custom resources (<plural>.<group> of a CRD)`
    : undefined;
}
