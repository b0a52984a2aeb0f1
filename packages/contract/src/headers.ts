/**
 * Header naming the identity a trusted proxy (the Backstage backend) acts for at the controller
 * (user entity ref, `service:<subject>` or `port:<email>`). The controller honours it only when
 * Kubernetes RBAC lets the proxy's own token user `impersonate` that user, like `kubectl --as`.
 */
export const KPROMO_USER_HEADER = 'x-kpromo-user';

/** Comma-separated groups of that identity, like `kubectl --as-group`. */
export const KPROMO_GROUPS_HEADER = 'x-kpromo-groups';
