import type { DeliveryMethod } from '../deliveryMethod.js';
import { patchHelmReleaseValues } from '../helmRelease.js';

/** delivery.method=helmRelease: set the tag (and digest) values of the app's Flux HelmRelease. */
export const helmReleaseDelivery: DeliveryMethod = {
  name: 'helmRelease',
  validate: (env) =>
    env.spec.delivery.helmRelease ? undefined : 'delivery.helmRelease is required when method is helmRelease',
  async deliver(c) {
    await patchHelmReleaseValues(await c.client(), c.env, c.app, c.tag, c.digest);
  },
};
