import type { DeliveryDiagnosis, DiagnoseContext } from '../extension/deliveryMethod.js';
import { type ResourceType, resourcePath } from '../kube/paths.js';
import { KubeError, type KubeRest } from '../kube/rest.js';

// `kpromo doctor`'s checks of the Flux objects the Flux-based delivery methods (helmRelease,
// imagePolicy, git with a Kustomization) rely on: one module they share.

interface FluxObject {
  status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

/** One Flux object an Environment's delivery needs, and the Application it is for. */
export interface WantedFluxObject {
  namespace: string;
  name: string;
  app: string;
}

/** Names of the Flux objects of one kind an Environment's delivery needs, and which are missing or not Ready. */
async function fluxObjects(
  rest: KubeRest,
  type: ResourceType,
  wanted: readonly WantedFluxObject[],
): Promise<{ missing: string[]; notReady: string[] }> {
  const missing: string[] = [];
  const notReady: string[] = [];
  for (const w of wanted) {
    const o = await rest.getOrUndefined<FluxObject>(resourcePath(type, w.namespace, w.name));
    if (!o) missing.push(`${w.namespace}/${w.name} (${w.app})`);
    else if (o.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'False')
      notReady.push(
        `${w.namespace}/${w.name}: ${o.status.conditions.find((c) => c.type === 'Ready')?.message ?? 'not Ready'}`,
      );
  }
  return { missing, notReady };
}

/**
 * The Flux objects of one kind an Environment's delivery needs exist where it says (its own cluster
 * or the control cluster) and are Ready, read as the caller.
 */
export async function judgeFlux(
  c: DiagnoseContext,
  type: ResourceType,
  cluster: 'environment' | 'control',
  wanted: readonly WantedFluxObject[],
): Promise<DeliveryDiagnosis> {
  const { env } = c;
  const subject = `Environment ${env.metadata.name} ${type.kind}s`;
  const rest = cluster === 'control' ? c.control : c.client();
  if (!rest)
    return {
      status: 'warn',
      subject,
      message: `context ${env.spec.cluster?.context ?? '(none)'} is not in your kubeconfig: the ${type.kind}s can only be checked where the controller runs`,
    };
  if (!wanted.length) return { status: 'pass', subject, message: 'no Applications deliver here yet' };
  let found: Awaited<ReturnType<typeof fluxObjects>>;
  try {
    found = await fluxObjects(rest, type, wanted);
  } catch (e) {
    if (e instanceof KubeError && e.status === 404)
      return {
        status: 'fail',
        subject,
        message: `${type.plural}.${type.group} is not served in that cluster: Flux is not installed there`,
        fix: 'install Flux in that cluster (flux install), or change delivery.method',
      };
    throw e;
  }
  if (found.missing.length)
    return {
      status: 'fail',
      subject,
      message: `missing: ${found.missing.join(', ')}`,
      fix: `create them, or fix delivery.${type.kind === 'HelmRelease' ? 'helmRelease' : 'imagePolicy'}.name (templates {app} and {environment}) of Environment ${env.metadata.name}`,
    };
  if (found.notReady.length)
    return {
      status: 'warn',
      subject,
      message: `not Ready: ${found.notReady.join('; ')}`,
      fix: 'flux get all -A shows why; a promotion waits for Flux to apply it',
    };
  return { status: 'pass', subject, message: `${wanted.length} found: ${wanted.map((w) => w.name).join(', ')}` };
}
