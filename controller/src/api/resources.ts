import type { ResourceActionBody, ResourceActionResult } from '@kpromo/contract';
import type { Caller } from '../auth/identity.js';
import { resourcePath } from '../kube/paths.js';
import { KubeError } from '../kube/rest.js';
import { who } from './access.js';
import { refuseAgent } from './agents.js';
import { kubeWriteError } from './apiError.js';
import { type ApiContext, ApiError } from './context.js';
import { neverWritten } from './resourceKinds.js';

/** The RBAC verb each operation needs (an update is a JSON merge patch of `spec`). */
export const RESOURCE_VERBS = { create: 'create', update: 'patch', delete: 'delete' } as const;

/**
 * Why `<plural>.<group>` may not be written through this route, or undefined when it may: it must be
 * listed in the controller's `resourceKinds` (exactly; no wildcards) and not be in a group that is
 * never written ({@link neverWritten}).
 */
export function resourceKindRefusal(open: readonly string[], group: string, plural: string): string | undefined {
  const id = `${plural}.${group}`;
  const never = neverWritten(group);
  if (never) return `${id} cannot be written through resource actions: ${never}`;
  if (!open.includes(id))
    return `${id} is not open to resource actions (controller resourceKinds: ${open.join(', ') || 'none'})`;
  return undefined;
}

/**
 * The kind of a namespaced resource as the apiserver serves it (discovery, as the controller), or
 * a 404 naming what is missing: a resource that is not served, a subresource, or a cluster-scoped one.
 */
async function servedKind(ctx: ApiContext, group: string, version: string, plural: string): Promise<string> {
  const gv = `${group}/${version}`;
  const list = await ctx.control
    .get<{ resources?: Array<{ name: string; kind: string; namespaced: boolean }> }>(`/apis/${gv}`)
    .catch((e: unknown) => {
      if (e instanceof KubeError && e.status === 404) return { resources: [] };
      throw e;
    });
  const r = list.resources?.find((x) => x.name === plural);
  if (!r) throw new ApiError(404, `${plural} is not served in ${gv} on the control cluster`);
  if (!r.namespaced) throw new ApiError(400, `${plural}.${group} is cluster-scoped: resource actions are namespaced`);
  return r.kind;
}

/** apiserver answers to the caller's write, with the object named and the apiserver's reason kept. */
/**
 * Creates, merges `spec` into, or deletes one custom resource for the caller. The kind must be open
 * (`resourceKinds`), the caller must hold the verb on that resource in that namespace and name
 * (SubjectAccessReview as the caller); the write is then the controller's own (the chart grants it
 * exactly the opened kinds), never an impersonation. Only `spec` comes from the request; apiVersion
 * and kind come from discovery and metadata is just name and namespace.
 */
export async function applyResource(
  ctx: ApiContext,
  caller: Caller,
  req: ResourceActionBody,
): Promise<ResourceActionResult> {
  const { operation, group, version, plural, namespace, name } = req;
  const refusal = resourceKindRefusal(ctx.resourceKinds ?? [], group, plural);
  if (refusal) throw new ApiError(403, `forbidden: ${refusal}`);
  refuseAgent(caller, `${operation} ${plural}.${group}`, 'no AgentPolicy operation writes other resources');
  const verb = RESOURCE_VERBS[operation];
  await ctx.access.require(caller, {
    group,
    resource: plural,
    verb,
    namespace,
    // RBAC resourceNames never apply to create: the apiserver authorises it without a name.
    ...(operation === 'create' ? {} : { name }),
  });
  const kind = await servedKind(ctx, group, version, plural);
  const apiVersion = `${group}/${version}`;
  const type = { group, version, plural, kind };
  const ref = `${kind} ${namespace}/${name}`;
  const client = ctx.control;
  type Written = { metadata?: { uid?: string; resourceVersion?: string } } | undefined;
  let out: Written;
  try {
    if (operation === 'create')
      out = await client.create<Written>(resourcePath(type, namespace), {
        apiVersion,
        kind,
        metadata: { name, namespace },
        ...(req.spec ? { spec: req.spec } : {}),
      });
    else if (operation === 'update')
      out = await client.mergePatch<Written>(resourcePath(type, namespace, name), { spec: req.spec ?? {} });
    else await client.delete(resourcePath(type, namespace, name));
  } catch (e) {
    kubeWriteError(e, `${who(caller)} cannot ${operation} ${ref}`);
  }
  return {
    operation,
    apiVersion,
    kind,
    namespace,
    name,
    ...(out?.metadata?.uid ? { uid: out.metadata.uid } : {}),
    ...(out?.metadata?.resourceVersion ? { resourceVersion: out.metadata.resourceVersion } : {}),
  };
}
