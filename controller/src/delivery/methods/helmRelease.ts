import type { DeliveryMethod } from '../../extension/deliveryMethod.js';
import { HELMRELEASE, resourcePath } from '../../kube/paths.js';
import { helmReleaseName, helmValueEntries, patchHelmReleaseValues } from '../helmRelease.js';
import { type HelmReleaseObject, helmReleaseVerdict } from '../helmReleaseVerdict.js';
import { parseValuesPath } from '../yamlEdit.js';

/** delivery.method=helmRelease: set the tag (and digest) values of the app's Flux HelmRelease. */
export const helmReleaseDelivery: DeliveryMethod = {
  name: 'helmRelease',
  validate: (env) =>
    env.spec.delivery.helmRelease ? undefined : 'delivery.helmRelease is required when method is helmRelease',
  async deliver(c) {
    await patchHelmReleaseValues(await c.client(), c.env, c.app, c.tag, c.digest);
  },
  /** Whether helm-controller has released the values (read from the Environment's cluster). */
  async rollout(c) {
    if (!c.env.spec.delivery.helmRelease) return undefined;
    const ns = c.env.spec.namespace;
    const name = helmReleaseName(c.env, c.app);
    // A KubeError names the method, path and cluster.
    const hr = await (await c.client()).getOrUndefined<HelmReleaseObject>(resourcePath(HELMRELEASE, ns, name));
    // deliver checked these paths before writing; the values it wrote are compared as written.
    const written =
      c.tag === undefined
        ? []
        : helmValueEntries(c.env, c.tag, c.digest ?? '')
            .filter(([, value]) => value !== '')
            .map(([path, value, field]) => ({ path: parseValuesPath(path, field), value, field }));
    return helmReleaseVerdict(hr, `${ns}/${name}`, written);
  },
};
