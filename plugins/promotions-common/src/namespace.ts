/**
 * The one namespace check of every door of the Backstage plugins (REST routes, actions, scaffolder
 * actions, MCP proxy, Port webhook): a namespace must be a Kubernetes namespace name, an RFC 1123
 * label. The wire contract accepts object names (dots allowed, up to 253 characters) in namespace
 * fields, which is too wide for a value that may pick where the backend sends its controller token
 * (a per-namespace controller locator): `a.evil.example` is an object name, not a namespace.
 * Isomorphic: no Node or browser API.
 */
export const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const MAX_NAMESPACE_LENGTH = 63;

const WHAT =
  'a Kubernetes namespace name (RFC 1123 label: lowercase letters, digits and "-", starting and ending with a letter or digit, at most 63 characters)';

/** A value from a request, safe in a message: quoted, escaped, bounded. */
const quote = (v: string) => JSON.stringify(v.length > 100 ? `${v.slice(0, 100)}…` : v);

/** Why `namespace` is not a namespace name (a message naming the value), or undefined when it is one. */
export function namespaceProblem(namespace: unknown, field = 'namespace'): string | undefined {
  if (typeof namespace !== 'string') return `${field}: must be ${WHAT}`;
  if (namespace.length <= MAX_NAMESPACE_LENGTH && NAMESPACE_NAME.test(namespace)) return undefined;
  return `${field}: ${quote(namespace)} is not ${WHAT}`;
}

/** Whether `namespace` is a Kubernetes namespace name (RFC 1123 label, at most 63 characters). */
export function isNamespaceName(namespace: unknown): namespace is string {
  return namespaceProblem(namespace) === undefined;
}
