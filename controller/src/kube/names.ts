/** Kubernetes object-name rules, for names rendered from attacker-written fields before they reach a URL. */

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** RFC 1123 label (namespaces): lower-case letters, digits and `-`, at most 63 characters. */
export const isDnsLabel = (s: string): boolean => s.length <= 63 && DNS_LABEL.test(s);

/** RFC 1123 subdomain (most object names): dot-separated labels, at most 253 characters. */
export const isDnsSubdomain = (s: string): boolean =>
  s.length <= 253 && DNS_SUBDOMAIN.test(s) && s.split('.').every((l) => l.length <= 63);
