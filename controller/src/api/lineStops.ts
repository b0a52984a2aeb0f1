import { API_VERSION, type LineStop, type LineStopSpec } from '@kpromo/api';
import type { LineStopView } from '@kpromo/contract';
import type { Caller } from '../auth/identity.js';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import { KubeError } from '../kube/rest.js';
import { who } from './access.js';
import { refuseAgent, requireAgentAllows } from './agents.js';
import { ApiError, kubeWriteError } from './apiError.js';
import type { ApiContext } from './context.js';

const RESOURCE = 'linestops';
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** What a door asks for when it stops the line. */
export interface StopLineRequest {
  namespace?: string;
  /** Defaults to `stop-<UTC time>`. */
  name?: string;
  reason: string;
  scope?: LineStopSpec['scope'];
  environments?: string[];
  /** Set by the Alertmanager receiver: the alert that stopped the line. */
  source?: LineStopSpec['source'];
}

/** A LineStop as every door shows it. */
export function lineStopView(s: LineStop): LineStopView {
  return {
    namespace: s.metadata.namespace ?? '',
    name: s.metadata.name,
    reason: s.spec.reason,
    scope: s.spec.scope ?? 'Namespace',
    ...(s.spec.environments?.length ? { environments: s.spec.environments } : {}),
    ...(s.spec.stoppedBy ? { stoppedBy: s.spec.stoppedBy } : {}),
    ...(s.spec.source ? { source: s.spec.source } : {}),
    ...(s.metadata.creationTimestamp ? { since: s.metadata.creationTimestamp } : {}),
  };
}

/** The LineStops in the namespaces where the caller may list them (all served namespaces, or one). */
export async function listLineStops(ctx: ApiContext, caller: Caller, namespace?: string): Promise<LineStop[]> {
  const stops = ctx.cache.lineStops(namespace);
  return ctx.access.listable(caller, RESOURCE, stops, (s) => s.metadata.namespace ?? '');
}

const stopName = (now: Date) =>
  `stop-${now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'z')
    .toLowerCase()}`;

/**
 * Everything {@link stopLine} checks before it writes: the name and reason, and RBAC `create` on
 * linestops in the namespace, as the caller. A door that asks a person to confirm (MCP) asks this
 * first. Returns the namespace, name and reason to write.
 */
export async function checkStopLine(
  ctx: ApiContext,
  caller: Caller,
  req: StopLineRequest,
  now = new Date(),
): Promise<{ namespace: string; name: string; reason: string }> {
  const namespace = req.namespace ?? ctx.namespace;
  const name = req.name ?? stopName(now);
  if (!NAME.test(name) || name.length > 63)
    throw new ApiError(400, `LineStop name "${name}" must be a DNS label (lower-case letters, digits, '-')`);
  const reason = req.reason?.trim();
  if (!reason) throw new ApiError(400, 'reason is required: say why the line stops (it is shown on every held plan)');
  if (reason.length > 1024) throw new ApiError(400, 'reason must be at most 1024 characters');
  await ctx.access.require(caller, { verb: 'create', resource: RESOURCE, namespace });
  // An agent may stop the line where its policy lets it: each environment named, or all of them.
  for (const environment of req.environments?.length ? req.environments : [undefined])
    await requireAgentAllows(ctx, caller, { operation: 'stopLine', namespace, environment });
  return { namespace, name, reason };
}

/**
 * Stops the line as the caller: needs `create` on linestops in the namespace (as kubectl would).
 * The LineStop records the authenticated caller as stoppedBy, never a name from the request.
 */
export async function stopLine(
  ctx: ApiContext,
  caller: Caller,
  req: StopLineRequest,
  now = new Date(),
): Promise<LineStop> {
  const { namespace, name, reason } = await checkStopLine(ctx, caller, req, now);
  const body: LineStop = {
    apiVersion: API_VERSION,
    kind: 'LineStop',
    metadata: { name, namespace },
    spec: {
      reason,
      ...(req.scope ? { scope: req.scope } : {}),
      ...(req.environments?.length ? { environments: req.environments } : {}),
      stoppedBy: who(caller),
      source: req.source ?? { kind: 'Person' },
    },
  };
  try {
    return await ctx.control.create<LineStop>(resourcePath(KPROMO_TYPES.LineStop, namespace), body);
  } catch (e) {
    if (e instanceof KubeError && e.status === 409)
      throw new ApiError(
        409,
        `LineStop ${namespace}/${name} already exists: the line is already stopped under that name`,
      );
    kubeWriteError(e, `cannot stop the line in namespace ${namespace}`);
  }
}

/**
 * Everything {@link liftLineStop} checks before it deletes, as the caller: `get` on the LineStop (a
 * denied read answers like a missing one) and `delete`. A door that asks a person to confirm asks this first.
 */
export async function checkLiftLineStop(ctx: ApiContext, caller: Caller, namespace: string, name: string) {
  await ctx.access.requireGet(caller, RESOURCE, namespace, name, `LineStop ${namespace}/${name} not found`);
  await ctx.access.require(caller, { verb: 'delete', resource: RESOURCE, namespace, name });
  refuseAgent(caller, `lift LineStop ${namespace}/${name}`, 'restarting the line is a person’s decision');
}

/** Lifts a LineStop as the caller: needs `delete` on linestops in its namespace. */
export async function liftLineStop(ctx: ApiContext, caller: Caller, namespace: string, name: string): Promise<void> {
  const ref = `LineStop ${namespace}/${name}`;
  await checkLiftLineStop(ctx, caller, namespace, name);
  try {
    await ctx.control.delete(resourcePath(KPROMO_TYPES.LineStop, namespace, name));
  } catch (e) {
    kubeWriteError(e, `cannot lift ${ref}`);
  }
}
