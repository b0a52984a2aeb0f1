import type { DeliveryMethod } from '../../extension/deliveryMethod.js';
import { PermanentAppError } from '../../extension/errors.js';
import { IMAGEPOLICY, IMAGEREPOSITORY, resourcePath } from '../../kube/paths.js';
import { majority } from '../../util/collections.js';
import { registryRepository } from '../../util/imageRef.js';
import { judgeFlux } from '../fluxDiagnosis.js';
import {
  type ImagePolicy,
  type ImageRepository,
  imagePolicyTarget,
  imagePolicyVerdict,
  imageRepositoryProblem,
} from '../imagePolicyVerdict.js';

/**
 * delivery.method=imagePolicy: Flux image automation's own path. The plan's copy step has already
 * pushed the unique, sortable tag into the Environment's registry, so there is nothing to write:
 * image-reflector-controller selects the tag (ImagePolicy), image-automation-controller commits it to
 * git through the setter markers, and Flux applies the commit. `deliver` checks that the ImagePolicy
 * exists and scans that repository; `rollout` waits until it selects kpromo's tag.
 */
export const imagePolicyDelivery: DeliveryMethod = {
  name: 'imagePolicy',
  // The Application is not known here: a sample name shows whether the template can render a name.
  validate: (env) => {
    const t = imagePolicyTarget(env, 'app');
    return 'problem' in t ? t.problem : undefined;
  },
  async deliver(c) {
    const t = imagePolicyTarget(c.env, c.app.metadata.name);
    if ('problem' in t) throw new PermanentAppError('InvalidEnvironment', t.problem);
    const client = t.cluster === 'control' ? c.control : await c.client();
    const ref = `${t.namespace}/${t.name}`;
    const where = `in cluster ${client.clusterName}`;
    const policy = await client.getOrUndefined<ImagePolicy>(resourcePath(IMAGEPOLICY, t.namespace, t.name));
    if (!policy)
      throw new PermanentAppError(
        'ImagePolicyNotFound',
        `ImagePolicy ${ref} not found ${where}: create it (delivery.imagePolicy of Environment ${c.env.metadata.name}) for ${c.image}`,
      );
    const rr = policy.spec?.imageRepositoryRef;
    const repo = rr?.name
      ? await client.getOrUndefined<ImageRepository>(
          resourcePath(IMAGEREPOSITORY, rr.namespace ?? t.namespace, rr.name),
        )
      : undefined;
    const problem = imageRepositoryProblem(ref, policy, repo, c.image);
    if (problem) throw new PermanentAppError('ImagePolicyMismatch', `${problem} (${where})`);
    // Nothing to write: the copy pushed the tag; Flux takes it from here.
  },
  async rollout(c) {
    const t = imagePolicyTarget(c.env, c.app.metadata.name);
    if ('problem' in t) return { state: 'Failed', reason: 'InvalidEnvironment', message: t.problem };
    // The step runner always passes the delivered tag; without it there is nothing to wait for.
    if (!c.tag)
      return { state: 'Progressing', message: `no delivered tag known yet for ImagePolicy ${t.namespace}/${t.name}` };
    const client = t.cluster === 'control' ? c.control : await c.client();
    const policy = await client.getOrUndefined<ImagePolicy>(resourcePath(IMAGEPOLICY, t.namespace, t.name));
    const image = `${c.env.spec.registry.host}/${registryRepository(c.env.spec.registry.prefix, c.app.spec.image.repository)}`;
    return imagePolicyVerdict(policy, `${t.namespace}/${t.name}`, { image, tag: c.tag, digest: c.digest });
  },
  /**
   * Nothing is written in the cluster (Flux commits the tag), but with the ImagePolicies in the
   * Environment's cluster the verdict reads them there: get on ImagePolicies in their namespace.
   * Those in the control cluster are read with the controller's control-cluster rights, not judged here.
   */
  accessNeeds({ env }) {
    const p = env.spec.delivery.imagePolicy;
    return (p?.cluster ?? 'environment') === 'environment'
      ? [
          {
            verb: 'get',
            group: IMAGEPOLICY.group,
            resource: IMAGEPOLICY.plural,
            namespace: p?.namespace ?? 'flux-system',
          },
        ]
      : [];
  },
  /** Each Application's ImagePolicy renders a valid name, exists where delivery.imagePolicy says, and is Ready. */
  async diagnose(c) {
    const targets = c.apps.map((a) => ({ app: a.metadata.name, t: imagePolicyTarget(c.env, a.metadata.name) }));
    const bad = targets.find((x) => 'problem' in x.t);
    if (bad && 'problem' in bad.t)
      return [
        {
          status: 'fail',
          subject: `Environment ${c.env.metadata.name} ImagePolicies`,
          message: bad.t.problem,
          fix: `fix delivery.imagePolicy of Environment ${c.env.metadata.name}`,
        },
      ];
    const ok = targets.flatMap((x) => ('problem' in x.t ? [] : [{ ...x.t, app: x.app }]));
    return [await judgeFlux(c, IMAGEPOLICY, c.env.spec.delivery.imagePolicy?.cluster ?? 'environment', ok)];
  },
  /**
   * Workloads whose images Flux ImagePolicies scan (through their ImageRepositories): weaker than
   * the labels of what applies a workload, so it counts only when none of those is found. A policy
   * named unlike its Application is left to review.
   */
  infer: {
    evidence: 'scans',
    by: 'Flux ImagePolicies',
    recognises: (c, found) => found.imagePolicies.some((p) => p.image && p.image === `${c.host}/${c.repository}`),
    propose({ found, containers }) {
      const policies = found.imagePolicies.filter((p) => p.image);
      const image = (u: (typeof containers)[number]) => `${u.host}/${u.repository}`;
      const named = containers.every((u) => policies.some((p) => p.image === image(u) && p.name === u.application));
      // Where the policies scanning these apps live (other teams' policies elsewhere do not count).
      const ns = majority(policies.filter((p) => containers.some((u) => p.image === image(u))).map((p) => p.namespace));
      return {
        delivery: { method: 'imagePolicy', imagePolicy: { name: '{app}', ...(ns ? { namespace: ns } : {}) } },
        undecided: named ? [] : ['ImagePolicy names differ from the Application names: set delivery.imagePolicy.name'],
        incomplete: !named,
      };
    },
  },
};
