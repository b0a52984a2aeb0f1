import { gitDeliveryAuth } from '../../extension/credentials.js';
import { type DeliveryMethod, planRef } from '../../extension/deliveryMethod.js';
import { KUSTOMIZATION, resourcePath } from '../../kube/paths.js';
import { isNotFound } from '../../kube/rest.js';
import { type Kustomization, kustomizationVerdict } from '../fluxKustomization.js';
import { checkRepoFilePath } from '../yamlEdit.js';

/** delivery.method=git: commit the image reference to a GitOps repository (its agent applies it). */
export const gitDelivery: DeliveryMethod = {
  name: 'git',
  validate: (env) => (env.spec.delivery.git ? undefined : 'delivery.git is required when method is git'),
  async deliver(c) {
    const g = c.env.spec.delivery.git!;
    const auth = await gitDeliveryAuth(c.control, c.env);
    c.fence();
    const res = await c.commitImageChange({
      repository: g.repository,
      branch: g.branch ?? 'main',
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
};
