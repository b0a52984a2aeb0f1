/** The one API group and version every kpromo resource lives in. */
export const GROUP = 'promotions.kpromo.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}` as const;

/**
 * Label on Namespaces that assigns them (and every kpromo object in them) to a controller shard:
 * `promotions.kpromo.dev/shard=<shard name>`. Namespaces without it belong to the default shard.
 */
export const SHARD_LABEL = `${GROUP}/shard`;
