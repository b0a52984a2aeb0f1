import type { Environment } from '@kpromo/api';
import type { AdoptBody, AdoptionProposal } from '@kpromo/contract';
import { discoverEnvironment } from '../adopt/discover.js';
import { proposeIntoFlow, withConfiguredRegistry } from '../adopt/intoFlow.js';
import { type FoundEnvironment, proposedResources } from '../adopt/propose.js';
import { adoptYaml, resourceFileName, resourceYaml, toComplete } from '../adopt/render.js';
import type { Caller } from '../auth/identity.js';
import { clusterKey } from '../kube/clusters.js';
import { KubeError } from '../kube/rest.js';
import { type ApiContext, ApiError } from './context.js';

/** How long one Environment's discovery may take before it is reported as unread. */
const DISCOVERY_TIMEOUT_MS = 30_000;

/**
 * Discovery lists every workload kind in every Environment of a flow, live: a few dozen requests to
 * the Environment apiservers per proposal. So scans run one per caller and at most `max` at once in
 * the controller; another is refused (503, retry) instead of queueing load on the clusters that
 * promotions need.
 */
export class ScanGate {
  private readonly callers = new Set<string>();
  constructor(private readonly max = 2) {}

  enter(caller: string): () => void {
    if (this.callers.has(caller))
      throw new ApiError(
        503,
        `an adoption scan for ${caller} is still running (one at a time per caller); retry when it ends`,
      );
    if (this.callers.size >= this.max)
      throw new ApiError(
        503,
        `${this.max} adoption scans are running (at most ${this.max} at once); retry in a few seconds`,
      );
    this.callers.add(caller);
    return () => this.callers.delete(caller);
  }
}
const gates = new WeakMap<ApiContext, ScanGate>();

/**
 * The portal's onboarding (POST /adopt): reads what runs in each Environment of a flow (with the
 * controller's access to that cluster, which clusterAccess already grants for the Environment),
 * in the Environment's namespace only: Flux objects that workload labels or references name in
 * other namespaces, and ImagePolicies elsewhere in the cluster, are never read with the
 * controller's identity (a caller would learn of namespaces they cannot read). It proposes
 * Applications for what it found, narrowed to the workloads the caller chose. Nothing is written:
 * the controller holds no right to create Applications, Environments or flows, and creating them
 * is the caller's own act (a pull request, kubectl), judged by RBAC and admission as the caller.
 * The caller must hold RBAC create on applications in the namespace (adopting is creating
 * Applications), which is also what makes it fair to show them the namespace's workloads.
 */
export async function proposeAdoptionFor(ctx: ApiContext, caller: Caller, b: AdoptBody): Promise<AdoptionProposal> {
  const namespace = b.namespace ?? ctx.namespace;
  await ctx.access.require(caller, { verb: 'create', resource: 'applications', namespace });
  const flows = ctx.cache.flows(namespace);
  const flow = b.flow ? flows.find((f) => f.metadata.name === b.flow) : flows.length === 1 ? flows[0] : undefined;
  if (!flow)
    throw new ApiError(
      b.flow ? 404 : 400,
      b.flow
        ? `PromotionFlow "${b.flow}" not found in namespace ${namespace}`
        : flows.length
          ? `namespace ${namespace} has ${flows.length} PromotionFlows (${flows.map((f) => f.metadata.name).join(', ')}): name the flow to adopt into`
          : `namespace ${namespace} has no PromotionFlow to adopt into: its governors create the Environments and the flow first (kpromo adopt --env … proposes them)`,
    );
  const environments = flow.spec.stages.map((s) => {
    const e = ctx.cache.getEnvironment(namespace, s.environment);
    if (!e)
      throw new ApiError(
        404,
        `Environment "${s.environment}" of flow ${flow.metadata.name} not found in namespace ${namespace}`,
      );
    return e;
  });
  const adoption = ctx.adoption;
  if (!adoption)
    throw new ApiError(400, 'this kpromo session cannot read Environment clusters for adoption: use kpromo adopt');
  const scanned: AdoptionProposal['scanned'] = [];
  const found: FoundEnvironment[] = [];
  const gate = gates.get(ctx) ?? new ScanGate();
  gates.set(ctx, gate);
  const release = gate.enter(caller.username);
  try {
    for (const env of environments) {
      const row = { environment: env.metadata.name, namespace: env.spec.namespace };
      try {
        const f = await discover(adoption, env);
        found.push(f);
        scanned.push({ ...row, workloads: f.workloads.length });
      } catch (e) {
        scanned.push({ ...row, workloads: 0, error: unreadable(e, env) });
      }
    }
  } finally {
    release();
  }
  const into = proposeIntoFlow({
    namespace,
    flow,
    environments,
    found,
    applications: ctx.cache.applications(namespace),
    owner: b.owner ?? 'unowned',
    ownerLabel: b.ownerLabel,
    chosen: b.applications,
    deliveryMethods: adoption.deliveryMethods,
  });
  for (const s of scanned.filter((x) => x.error))
    into.proposal.findings.unshift({
      level: 'undecided',
      subject: `Environment ${s.environment}`,
      message: `could not be read, so nothing was proposed from it: ${s.error}`,
    });
  const p = into.proposal;
  const updates = new Set(p.updates);
  return {
    namespace,
    flow: flow.metadata.name,
    scanned,
    candidates: into.candidates,
    resources: proposedResources(p).map((r) => {
      const id = `${r.kind}/${r.metadata.name}`;
      const todo = toComplete(p, r);
      return {
        kind: r.kind,
        name: r.metadata.name,
        change: updates.has(id) ? 'update' : 'create',
        governed: into.governed.includes(id),
        ...(todo !== undefined ? { toComplete: todo } : {}),
        fileName: resourceFileName(r),
        yaml: resourceYaml(p, r),
      };
    }),
    yaml: adoptYaml(p),
    findings: p.findings,
    unchanged: p.unchanged,
  };
}

/**
 * Why an Environment could not be read, for the caller: the apiserver's refusal as the controller
 * (what to grant it), or that the cluster did not answer. Addresses and transport detail stay out.
 */
function unreadable(e: unknown, env: Environment): string {
  if (e instanceof KubeError)
    return e.status === 403
      ? `the controller may not ${e.method === 'GET' ? 'read' : e.method} ${e.path} in the cluster of Environment ${env.metadata.name} (grant it list on that kind, or leave the kind out)`
      : `the cluster of Environment ${env.metadata.name} answered ${e.status} ${e.reason}`;
  if ((e as Error).name === 'ClusterNotAllowedError') return (e as Error).message;
  return `the cluster of Environment ${env.metadata.name} did not answer (${(e as Error).message.startsWith('no answer') ? (e as Error).message : 'unreachable'})`;
}

/** Discovery in one Environment's namespace, with its registry as configured. */
async function discover(adoption: NonNullable<ApiContext['adoption']>, env: Environment): Promise<FoundEnvironment> {
  const rest = await adoption.environmentClient(env);
  let timer: NodeJS.Timeout | undefined;
  try {
    const f = await Promise.race([
      // The controller's identity reads more than the caller may: the Environment's namespace only.
      discoverEnvironment(
        rest,
        { name: env.metadata.name, context: clusterKey(env), namespace: env.spec.namespace },
        'namespace',
      ),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${DISCOVERY_TIMEOUT_MS / 1000}s`)),
          DISCOVERY_TIMEOUT_MS,
        );
      }),
    ]);
    return withConfiguredRegistry(f, env);
  } finally {
    clearTimeout(timer);
  }
}
