import type { Application, Environment } from '@kpromo/api';
import { fleetTargets } from '@kpromo/api';
import { workloadsFor } from '../candidates/runningVersion.js';
import { remoteBranchCommit } from '../delivery/gitCommit.js';
import { helmReleaseName } from '../delivery/helmRelease.js';
import { imagePolicyTarget } from '../delivery/imagePolicyVerdict.js';
import { gitDeliveryAuth } from '../extension/credentials.js';
import {
  HELMRELEASE,
  IMAGEPOLICY,
  KPROMO_TYPES,
  KUSTOMIZATION,
  type ResourceType,
  resourcePath,
} from '../kube/paths.js';
import { KubeError, type KubeRest } from '../kube/rest.js';
import { type CheckResult, type DoctorCheck, type DoctorContext, why } from './check.js';

const CHECK = 'delivery';

interface FluxObject {
  status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

/** Names of the Flux objects of one kind an Environment's delivery needs, and which are missing or not Ready. */
async function fluxObjects(
  rest: KubeRest,
  type: ResourceType,
  wanted: Array<{ namespace: string; name: string; app: string }>,
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

/** The cluster where an Environment's Flux objects live, as the caller; undefined when out of reach. */
function fluxCluster(ctx: DoctorContext, env: Environment, where: 'environment' | 'control'): KubeRest | undefined {
  if (where === 'control') return ctx.control;
  return env.spec.cluster?.context ? ctx.clientFor(env.spec.cluster.context) : undefined;
}

async function judgeFlux(
  ctx: DoctorContext,
  env: Environment,
  type: ResourceType,
  cluster: 'environment' | 'control',
  wanted: Array<{ namespace: string; name: string; app: string }>,
): Promise<CheckResult> {
  const subject = `Environment ${env.metadata.name} ${type.kind}s`;
  const rest = fluxCluster(ctx, env, cluster);
  if (!rest)
    return {
      check: CHECK,
      status: 'warn',
      subject,
      message: `context ${env.spec.cluster?.context ?? '(none)'} is not in your kubeconfig: the ${type.kind}s can only be checked where the controller runs`,
    };
  if (!wanted.length) return { check: CHECK, status: 'pass', subject, message: 'no Applications deliver here yet' };
  let found: Awaited<ReturnType<typeof fluxObjects>>;
  try {
    found = await fluxObjects(rest, type, wanted);
  } catch (e) {
    if (e instanceof KubeError && e.status === 404)
      return {
        check: CHECK,
        status: 'fail',
        subject,
        message: `${type.plural}.${type.group} is not served in that cluster: Flux is not installed there`,
        fix: 'install Flux in that cluster (flux install), or change delivery.method',
      };
    throw e;
  }
  if (found.missing.length)
    return {
      check: CHECK,
      status: 'fail',
      subject,
      message: `missing: ${found.missing.join(', ')}`,
      fix: `create them, or fix delivery.${type.kind === 'HelmRelease' ? 'helmRelease' : 'imagePolicy'}.name (templates {app} and {environment}) of Environment ${env.metadata.name}`,
    };
  if (found.notReady.length)
    return {
      check: CHECK,
      status: 'warn',
      subject,
      message: `not Ready: ${found.notReady.join('; ')}`,
      fix: 'flux get all -A shows why; a promotion waits for Flux to apply it',
    };
  return {
    check: CHECK,
    status: 'pass',
    subject,
    message: `${wanted.length} found: ${wanted.map((w) => w.name).join(', ')}`,
  };
}

/** The GitOps repository and branch answer with the delivery's credentials, and its Kustomization is there. */
async function judgeGit(ctx: DoctorContext, env: Environment): Promise<CheckResult[]> {
  const g = env.spec.delivery.git!;
  const subject = `Environment ${env.metadata.name} git ${g.repository}`;
  const branch = g.branch ?? 'main';
  const out: CheckResult[] = [];
  let auth: Awaited<ReturnType<typeof gitDeliveryAuth>>;
  let note = '';
  try {
    auth = await gitDeliveryAuth(ctx.control, env);
  } catch (e) {
    note = ` (its credentials Secret could not be used here: ${why(e)}; tried without)`;
  }
  try {
    const commit = await remoteBranchCommit({ repository: g.repository, branch, ...(auth ? { auth } : {}) });
    out.push(
      commit
        ? {
            check: CHECK,
            status: note ? 'warn' : 'pass',
            subject,
            message: `branch ${branch} at ${commit.slice(0, 12)}${auth ? ', with its credentials' : ''}${note}`,
          }
        : {
            check: CHECK,
            status: 'fail',
            subject,
            message: `the repository has no branch ${branch}`,
            fix: `fix delivery.git.branch of Environment ${env.metadata.name}, or push the branch`,
          },
    );
  } catch (e) {
    out.push({
      check: CHECK,
      status: 'fail',
      subject,
      message: `${why(e)}${note}`,
      fix: `check delivery.git.repository and the Secret named by delivery.git.credentialsSecretRef (kubernetes.io/basic-auth, labelled promotions.kpromo.dev/credential=true, annotation promotions.kpromo.dev/destinations naming the repository)`,
    });
  }
  if (g.kustomization) {
    const k = g.kustomization;
    const wanted = [
      {
        namespace: k.namespace ?? 'flux-system',
        name: k.name.replaceAll('{environment}', env.metadata.name),
        app: 'the Environment',
      },
    ];
    // A name per app ({app}) is judged by the promotion itself: here only the Environment-wide one.
    if (!k.name.includes('{app}'))
      out.push(await judgeFlux(ctx, env, KUSTOMIZATION, k.cluster ?? 'environment', wanted));
  }
  return out;
}

/**
 * Each Environment's delivery can work: the Flux HelmRelease or ImagePolicy of every Application
 * exists (and is Ready) where the Environment says, and a GitOps repository answers for its branch
 * with the credentials its Secret holds (read as you, never printed) and has its Kustomization.
 * Environments that patch workloads need nothing more than the controller check.
 */
export const deliveryCheck: DoctorCheck = {
  id: CHECK,
  title: 'Delivery: Flux objects and GitOps repositories',
  async run(ctx) {
    const [envs, apps] = await Promise.all([
      ctx.control.get<{ items: Environment[] }>(resourcePath(KPROMO_TYPES.Environment, ctx.namespace)),
      ctx.control.get<{ items: Application[] }>(resourcePath(KPROMO_TYPES.Application, ctx.namespace)),
    ]);
    const out: CheckResult[] = [];
    // A fleet is checked cluster by cluster (each may deliver its own way).
    for (const env of envs.items.flatMap((e) => fleetTargets(e).map((t) => t.env))) {
      const mine = apps.items.filter((a) => workloadsFor(a, env.metadata.name).length > 0);
      const ns = env.spec.namespace;
      switch (env.spec.delivery.method) {
        case 'helmRelease':
          out.push(
            await judgeFlux(
              ctx,
              env,
              HELMRELEASE,
              'environment',
              mine.map((a) => ({ namespace: ns, name: helmReleaseName(env, a), app: a.metadata.name })),
            ),
          );
          break;
        case 'imagePolicy': {
          const targets = mine.map((a) => ({ app: a.metadata.name, t: imagePolicyTarget(env, a.metadata.name) }));
          const bad = targets.find((x) => 'problem' in x.t);
          if (bad && 'problem' in bad.t) {
            out.push({
              check: CHECK,
              status: 'fail',
              subject: `Environment ${env.metadata.name} ImagePolicies`,
              message: bad.t.problem,
              fix: `fix delivery.imagePolicy of Environment ${env.metadata.name}`,
            });
            break;
          }
          const ok = targets.flatMap((x) => ('problem' in x.t ? [] : [{ ...x.t, app: x.app }]));
          out.push(await judgeFlux(ctx, env, IMAGEPOLICY, env.spec.delivery.imagePolicy?.cluster ?? 'environment', ok));
          break;
        }
        case 'git':
          out.push(...(await judgeGit(ctx, env)));
          break;
        default:
          break;
      }
    }
    return out;
  },
};
