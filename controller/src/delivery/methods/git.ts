import { gitDeliveryAuth } from '../../extension/credentials.js';
import {
  type DeliveryDiagnosis,
  type DeliveryMethod,
  type DiagnoseContext,
  planRef,
} from '../../extension/deliveryMethod.js';
import { KUSTOMIZATION, resourcePath } from '../../kube/paths.js';
import { isNotFound } from '../../kube/rest.js';
import { majority } from '../../util/collections.js';
import { why } from '../../util/errors.js';
import { judgeFlux } from '../fluxDiagnosis.js';
import { type Kustomization, kustomizationVerdict } from '../fluxKustomization.js';
import { remoteBranchCommit } from '../gitCommit.js';
import { diagnosePullRequest } from '../pullRequestDiagnosis.js';
import { checkRepoFilePath } from '../yamlEdit.js';

/** The labels kustomize-controller sets on the objects a Kustomization applies. */
const KS_NAME = 'kustomize.toolkit.fluxcd.io/name';
const KS_NAMESPACE = 'kustomize.toolkit.fluxcd.io/namespace';

/**
 * The GitOps repository and branch answer with the delivery's credentials, and its Kustomization is
 * there; through pull requests, the forge answers as its token and the branch's protection requires
 * kpromo's approval status (pullRequestDiagnosis.ts).
 */
async function diagnoseGit(c: DiagnoseContext): Promise<DeliveryDiagnosis[]> {
  const { env } = c;
  const g = env.spec.delivery.git!;
  const subject = `Environment ${env.metadata.name} git ${g.repository}`;
  const branch = g.branch ?? 'main';
  const out: DeliveryDiagnosis[] = [];
  let auth: Awaited<ReturnType<typeof gitDeliveryAuth>>;
  let note = '';
  try {
    auth = await gitDeliveryAuth(c.control, env);
  } catch (e) {
    note = ` (its credentials Secret could not be used here: ${why(e)}; tried without)`;
  }
  try {
    const commit = await remoteBranchCommit({ repository: g.repository, branch, ...(auth ? { auth } : {}) });
    out.push(
      commit
        ? {
            status: note ? 'warn' : 'pass',
            subject,
            message: `branch ${branch} at ${commit.slice(0, 12)}${auth ? ', with its credentials' : ''}${note}`,
          }
        : {
            status: 'fail',
            subject,
            message: `the repository has no branch ${branch}`,
            fix: `fix delivery.git.branch of Environment ${env.metadata.name}, or push the branch`,
          },
    );
  } catch (e) {
    out.push({
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
    if (!k.name.includes('{app}')) out.push(await judgeFlux(c, KUSTOMIZATION, k.cluster ?? 'environment', wanted));
  }
  out.push(...(await diagnosePullRequest(c, branch)));
  return out;
}

/** delivery.method=git: commit the image reference to a GitOps repository (its agent applies it). */
export const gitDelivery: DeliveryMethod = {
  name: 'git',
  validate: (env) =>
    !env.spec.delivery.git
      ? 'delivery.git is required when method is git'
      : env.spec.delivery.git.pullRequest && env.spec.clusters?.length
        ? 'delivery.git.pullRequest is for an Environment of one cluster: a fleet moves in waves, which one merge cannot; remove pullRequest or clusters'
        : undefined,
  async deliver(c) {
    const g = c.env.spec.delivery.git!;
    const auth = await gitDeliveryAuth(c.control, c.env);
    c.fence();
    const res = await c.commitImageChange({
      repository: g.repository,
      branch: c.branch?.name ?? g.branch ?? 'main',
      ...(c.branch ? { createFrom: c.branch.from, ...(c.branch.head ? { expectHead: c.branch.head } : {}) } : {}),
      // The rendered path must name a file inside the checkout (no "..", absolute or .git paths).
      path: checkRepoFilePath(
        g.path.replaceAll('{app}', c.app.metadata.name).replaceAll('{environment}', c.env.metadata.name),
      ),
      valuesPath: g.valuesPath ?? 'image',
      image: c.image,
      tag: c.tag,
      digest: c.digest,
      message: `${c.action === 'rollback' ? 'Roll back' : 'Promote'} ${c.app.metadata.name} to ${c.tag} in ${c.env.metadata.name}\n\nPromotionPlan: ${planRef(c.plan)}\nFlow: ${c.plan.spec.flow} (${c.plan.spec.from} -> ${c.plan.spec.to})\nDigest: ${c.digest}`,
      author: g.author,
      auth,
    });
    return { commit: res.commit };
  },
  /** With delivery.git.kustomization: whether Flux has applied the commit (read from the Environment cluster). */
  async rollout(c) {
    const k = c.env.spec.delivery.git?.kustomization;
    if (!k || !c.commit) return undefined;
    const name = k.name.replaceAll('{app}', c.app.metadata.name).replaceAll('{environment}', c.env.metadata.name);
    const ns = k.namespace ?? 'flux-system';
    const client = k.cluster === 'control' ? c.control : await c.client();
    const obj = await client.get<Kustomization>(resourcePath(KUSTOMIZATION, ns, name)).catch((e: unknown) => {
      if (isNotFound(e)) return undefined;
      throw e;
    });
    return kustomizationVerdict(obj, `${ns}/${name}`, c.commit);
  },
  /**
   * Nothing is written in the cluster (Flux applies the commit), but with delivery.git.kustomization
   * in the Environment's cluster the verdict reads it there: get on Kustomizations in its namespace.
   * One in the control cluster is read with the controller's control-cluster rights, not judged here.
   */
  accessNeeds({ env }) {
    const k = env.spec.delivery.git?.kustomization;
    return k && (k.cluster ?? 'environment') === 'environment'
      ? [
          {
            verb: 'get',
            group: KUSTOMIZATION.group,
            resource: KUSTOMIZATION.plural,
            namespace: k.namespace ?? 'flux-system',
          },
        ]
      : [];
  },
  diagnose: diagnoseGit,
  /**
   * Workloads a Flux Kustomization applies (its labels), from the GitRepository it reads: the file
   * holding each app's image is a guess, so the Environment is always left to review.
   */
  infer: {
    evidence: 'manages',
    by: 'Flux Kustomizations',
    recognises: (c) => !!c.workload.labels[KS_NAME],
    propose({ found, containers }) {
      const ksName = majority(
        containers.map((u) => `${u.workload.labels[KS_NAMESPACE] ?? 'flux-system'}/${u.workload.labels[KS_NAME]}`),
      )!;
      const ks = found.kustomizations.find((k) => `${k.namespace}/${k.name}` === ksName);
      const dir = (ks?.path ?? '.').replace(/^\.?\/*/, '').replace(/\/+$/, '');
      return {
        delivery: {
          method: 'git',
          git: {
            repository: ks?.git?.url ?? 'https://git.example.com/CHANGE-ME.git',
            ...(ks?.git?.branch ? { branch: ks.git.branch } : {}),
            path: `${dir ? `${dir}/` : ''}{app}.yaml`,
            kustomization: { name: ksName.split('/')[1], namespace: ksName.split('/')[0] },
          },
        },
        undecided: [
          `applied by Flux Kustomization ${ksName}${ks?.git ? ` from ${ks.git.url}` : ''}: check delivery.git.path, the file holding each app's image (proposed ${dir ? `${dir}/` : ''}{app}.yaml), and add credentialsSecretRef`,
        ],
        incomplete: true,
      };
    },
  },
};
