/** The one API group and version every kpromo resource lives in. */
export const GROUP = 'promotions.kpromo.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}` as const;
