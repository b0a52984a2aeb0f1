import type { DeliveryMethod } from '@kpromo/controller/plugin';

/** Environment annotation naming the ConfigMap to write; `{app}` is replaced. Default: `{app}-release`. */
export const CONFIGMAP_ANNOTATION = 'delivery.example.com/configmap';
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

const configMapName = (template: string, app: string) => template.replaceAll('{app}', app);

/**
 * delivery.method `configMap`: writes the promoted image into a ConfigMap in the Environment's
 * namespace (keys image, tag, digest, plan), for a deploy job or operator that reads it from there.
 * Server-side apply makes the write idempotent, as the step runner requires.
 */
export const configMapDelivery: DeliveryMethod = {
  name: 'configMap',
  // Pure, before any side effect: a bad name fails the plan with InvalidEnvironment.
  validate(env) {
    const template = env.metadata.annotations?.[CONFIGMAP_ANNOTATION] ?? '{app}-release';
    if (!NAME.test(configMapName(template, 'app')))
      return `annotation ${CONFIGMAP_ANNOTATION} "${template}" does not render a valid ConfigMap name`;
    return undefined;
  },
  async deliver(ctx) {
    const template = ctx.env.metadata.annotations?.[CONFIGMAP_ANNOTATION] ?? '{app}-release';
    const name = configMapName(template, ctx.app.metadata.name);
    const namespace = ctx.env.spec.namespace;
    const rest = await ctx.client();
    ctx.fence(); // the client lookup may have taken a while: check leadership right before the write
    await rest.apply(
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${encodeURIComponent(name)}`,
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
};
