import type { DeliveryMethod } from '../../extension/deliveryMethod.js';
import { HELMRELEASE, resourcePath } from '../../kube/paths.js';
import { majority } from '../../util/collections.js';
import { judgeFlux } from '../fluxDiagnosis.js';
import { helmReleaseName, helmValueEntries, patchHelmReleaseValues } from '../helmRelease.js';
import { type HelmReleaseObject, helmReleaseVerdict } from '../helmReleaseVerdict.js';
import { parseValuesPath } from '../yamlEdit.js';

/** The label helm-controller sets on the objects a HelmRelease renders. */
const HELM_NAME = 'helm.toolkit.fluxcd.io/name';

/** The dot path in a HelmRelease's values whose value is `want`, breadth first (shallowest wins). */
export function findValuePath(values: unknown, want: string): string | undefined {
  const queue: Array<[unknown, string[]]> = [[values, []]];
  while (queue.length) {
    const [v, path] = queue.shift()!;
    if (v === want && path.length) return path.join('.');
    if (v && typeof v === 'object' && !Array.isArray(v) && path.length < 8)
      for (const [k, child] of Object.entries(v)) if (/^[A-Za-z0-9_-]+$/.test(k)) queue.push([child, [...path, k]]);
  }
  return undefined;
}

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
  /** Patch on the HelmReleases in the Environment's namespace. */
  accessNeeds: ({ env }) => [
    { verb: 'patch', group: HELMRELEASE.group, resource: HELMRELEASE.plural, namespace: env.spec.namespace },
  ],
  /** Each Application's HelmRelease exists in the Environment's namespace and is Ready. */
  async diagnose(c) {
    const ns = c.env.spec.namespace;
    const wanted = c.apps.map((a) => ({ namespace: ns, name: helmReleaseName(c.env, a), app: a.metadata.name }));
    return [await judgeFlux(c, HELMRELEASE, 'environment', wanted)];
  },
  /**
   * Workloads helm-controller renders (its label), whatever applied their HelmRelease: the values
   * path that holds the running tag (and digest) in most HelmReleases; a HelmRelease named unlike
   * its Application, or no such path, is left to review.
   */
  infer: {
    evidence: 'manages',
    by: 'Flux HelmReleases',
    recognises: (c) => !!c.workload.labels[HELM_NAME],
    propose({ found, containers }) {
      const nameIsApp = containers.every((u) => u.workload.labels[HELM_NAME] === u.application);
      const release = (u: (typeof containers)[number]) =>
        found.helmReleases.find((h) => h.name === u.workload.labels[HELM_NAME]);
      const paths = containers.map((u) => {
        const hr = release(u);
        return u.tag && hr ? findValuePath(hr.values, u.tag) : undefined;
      });
      const digestPaths = containers.map((u) => {
        const hr = release(u);
        return u.digest && hr ? findValuePath(hr.values, u.digest) : undefined;
      });
      const valuesPath = majority(paths.filter((p): p is string => !!p));
      const digestPath = majority(digestPaths.filter((p): p is string => !!p));
      const undecided: string[] = [];
      if (!nameIsApp)
        undecided.push(
          'HelmRelease names differ from the Application names: set delivery.helmRelease.name (a {app} template)',
        );
      if (!valuesPath)
        undecided.push(
          "no values path holds the running tag in the HelmReleases' spec.values: set delivery.helmRelease.valuesPath",
        );
      return {
        delivery: {
          method: 'helmRelease',
          helmRelease: { name: '{app}', valuesPath: valuesPath ?? 'image.tag', ...(digestPath ? { digestPath } : {}) },
        },
        undecided,
        incomplete: undecided.length > 0,
      };
    },
  },
};
