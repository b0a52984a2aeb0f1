/** The names of the evaluation world (./world.ts), apart so the task list and its test load without the controller. */
export const NAMESPACE = 'shop';
export const ENVIRONMENTS = ['dev', 'stable', 'prod'] as const;

/** The plans of the world, by name, with their uids (the tasks' expected promote/rollback arguments). */
export const PLANS = {
  /** Finished: stable → prod, checkout v2.1.0 → v2.2.0 and cart v1.2.4 → v1.2.5. */
  lastProd: { name: 'shop-stable-prod-41', uid: '7c1d0a52-41aa-4e0b-9b1e-3f2a5d6c7e41' },
  /** Finished: dev → stable, payments v3.0.1 → v3.0.2. */
  lastStable: { name: 'shop-dev-stable-42', uid: '2b9e4f10-42bb-4c1d-8a2f-6e5d4c3b2a42' },
  /** Created, not approved: stable → prod, cart v1.3.0. */
  waiting: { name: 'shop-stable-prod-43', uid: '9f8e7d6c-43cc-4b5a-9c8d-1a2b3c4d5e43' },
} as const;
export const LINE_STOP = 'db-migration';
