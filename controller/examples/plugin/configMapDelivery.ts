import type { Environment } from '@kpromo/api';
import type { DeliveryMethod } from '@kpromo/controller/plugin';

/** Environment annotation naming the ConfigMap to write; `{app}` is replaced. Default: `{app}-release`. */
export const CONFIGMAP_ANNOTATION = 'delivery.example.com/configmap';
/** Label the deploy job sets on the workloads it rolls out: the name of the ConfigMap they follow. */
export const FROM_CONFIGMAP_LABEL = 'delivery.example.com/from-configmap';
const DEFAULT_TEMPLATE = '{app}-release';
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

const templateOf = (env: Environment) => env.metadata.annotations?.[CONFIGMAP_ANNOTATION] ?? DEFAULT_TEMPLATE;
const configMapName = (template: string, app: string) => template.replaceAll('{app}', app);
const configMapPath = (namespace: string, name: string) =>
  `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${encodeURIComponent(name)}`;
const problemOf = (env: Environment) =>
  NAME.test(configMapName(templateOf(env), 'app'))
    ? undefined
    : `annotation ${CONFIGMAP_ANNOTATION} "${templateOf(env)}" does not render a valid ConfigMap name`;

/**
 * delivery.method `configMap`: writes the promoted image into a ConfigMap in the Environment's
 * namespace (keys image, tag, digest, plan), for a deploy job or operator that reads it from there.
 * Server-side apply makes the write idempotent, as the step runner requires. The optional hooks give
 * it what the built-in methods have: the DeliveryPermitted check, a `kpromo doctor` check and adoption.
 */
export const configMapDelivery: DeliveryMethod = {
  name: 'configMap',
  // Pure, before any side effect: a bad name fails the plan with InvalidEnvironment.
  validate: problemOf,
  async deliver(ctx) {
    const name = configMapName(templateOf(ctx.env), ctx.app.metadata.name);
    const namespace = ctx.env.spec.namespace;
    const rest = await ctx.client();
    ctx.fence(); // the client lookup may have taken a while: check leadership right before the write
    await rest.apply(
      configMapPath(namespace, name),
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace },
        data: {
          image: ctx.ref,
          tag: ctx.tag,
          digest: ctx.digest,
          plan: `${ctx.plan.metadata.namespace}/${ctx.plan.metadata.name}`,
        },
      },
      'kpromo-configmap-delivery',
    );
  },
  // Server-side apply patches the ConfigMap, and creates it the first time.
  accessNeeds: ({ env }) =>
    ['create', 'patch'].map((verb) => ({ verb, group: '', resource: 'configmaps', namespace: env.spec.namespace })),
  // kpromo doctor, as the caller: the template renders names, and which ConfigMaps are written yet.
  async diagnose({ env, apps, client }) {
    const subject = `Environment ${env.metadata.name} ConfigMaps`;
    const problem = problemOf(env);
    if (problem) return [{ status: 'fail', subject, message: problem, fix: 'fix the annotation' }];
    const rest = client();
    if (!rest) return [{ status: 'warn', subject, message: 'its cluster is not in your kubeconfig' }];
    if (!apps.length) return [{ status: 'pass', subject, message: 'no Applications deliver here yet' }];
    const missing: string[] = [];
    for (const a of apps) {
      const name = configMapName(templateOf(env), a.metadata.name);
      if (!(await rest.getOrUndefined(configMapPath(env.spec.namespace, name)))) missing.push(name);
    }
    return missing.length
      ? [{ status: 'warn', subject, message: `not written yet: ${missing.join(', ')}`, fix: 'promote to write them' }]
      : [{ status: 'pass', subject, message: `${apps.length} written` }];
  },
  // Adoption: workloads the deploy job rolls out carry its label, naming the ConfigMap they follow.
  infer: {
    evidence: 'manages',
    by: 'ConfigMaps (deploy job)',
    recognises: (c) => !!c.workload.labels[FROM_CONFIGMAP_LABEL],
    propose({ containers }) {
      const other = containers.filter(
        (u) => u.workload.labels[FROM_CONFIGMAP_LABEL] !== configMapName(DEFAULT_TEMPLATE, u.application),
      );
      return {
        // The Environment CRD's method enum lists the built-ins only (see PLUGINS.md).
        delivery: { method: 'configMap' as 'patch' },
        undecided: other.map(
          (u) =>
            `${u.workload.name} follows ConfigMap ${u.workload.labels[FROM_CONFIGMAP_LABEL]}, not ${configMapName(DEFAULT_TEMPLATE, u.application)}: set annotation ${CONFIGMAP_ANNOTATION}`,
        ),
        incomplete: other.length > 0,
      };
    },
  },
};
