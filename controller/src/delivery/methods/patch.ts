import type { DeliveryMethod } from '../../extension/deliveryMethod.js';
import { planRef } from '../../extension/deliveryMethod.js';
import { patchWorkloadImage } from '../patchWorkload.js';

/** delivery.method=patch: set the container image of the app's workloads in the Environment namespace. */
export const patchDelivery: DeliveryMethod = {
  name: 'patch',
  async deliver(c) {
    await patchWorkloadImage(await c.client(), c.env, c.app, c.ref, planRef(c.plan));
  },
};
