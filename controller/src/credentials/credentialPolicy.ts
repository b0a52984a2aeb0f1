/**
 * Where a Secret's values may leave the controller: the one rule every path that sends a Secret
 * value (Notification headers, HMAC keys, tokens, webhook URLs; Environment registry and git
 * credentials) checks right before it sends.
 *
 * Whoever writes a Notification or an Environment chooses the URL; only whoever owns the Secret
 * chooses where its values may go. A Secret is sent nowhere unless its owner
 *
 * - labels it `promotions.kpromo.dev/credential: "true"` (an application's database password, a
 *   TLS key, another team's token cannot be named by a CR and mailed out), and
 * - lists in annotation `promotions.kpromo.dev/destinations` where it may go, comma-separated:
 *   `hooks.example.com` (https, port 443), `hooks.example.com:8443` (https on that port),
 *   `*.example.com` (https, one more label: a.example.com, not a.b.example.com nor example.com), or
 *   a URL prefix `https://git.example.com/org/` / `http://10.0.0.5:8080/hooks/` (that scheme, host
 *   and port, paths under it by whole segments). A bare host never allows plain http.
 *
 * Pure: callers pass the Secret's metadata and the URL about to be requested.
 */

/** Label a Secret's owner sets to let kpromo send it anywhere at all. */
export const CREDENTIAL_LABEL = 'promotions.kpromo.dev/credential';
/** Annotation listing where a credential Secret may be sent. */
export const DESTINATIONS_ANNOTATION = 'promotions.kpromo.dev/destinations';

/** The metadata the rule reads (never the data). */
export interface CredentialSecretMeta {
  namespace: string;
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Who uses a Secret through which field, and where the URL it is sent to comes from; for messages. */
export interface CredentialUse {
  /** The field naming the Secret: "spec.webhook.headersSecretRef". */
  field: string;
  /** The resource that names it: "Notification team-a/releases" (absent when the caller's message names it). */
  owner?: string;
  /** The field the destination URL comes from: "spec.webhook.url". */
  destinationField: string;
}

/** One allowed destination: scheme, host (maybe `*.` + suffix), port, and leading path segments. */
export interface Destination {
  scheme: 'http' | 'https';
  host: string;
  port: number;
  segments: string[];
  /** As written in the annotation. */
  raw: string;
}

const DEFAULT_PORT = { http: 80, https: 443 } as const;
const HOST = '(\\*\\.)?([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\\[[0-9a-f:.]+\\])';
const BARE = new RegExp(`^${HOST}(?::(\\d{1,5}))?$`, 'i');
const PREFIX = new RegExp(`^(https?)://${HOST}(?::(\\d{1,5}))?(/[^\\s?#\\\\]*)?$`, 'i');

/** Pure: one annotation entry, or why it is not one. */
export function parseDestination(raw: string): Destination | { problem: string } {
  const entry = raw.trim();
  const bad = (why: string) => ({ problem: `entry "${entry}" ${why}` });
  const bare = BARE.exec(entry);
  const m = bare ? undefined : PREFIX.exec(entry);
  if (!bare && !m) {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(entry) && !/^https?:\/\//i.test(entry))
      return bad('is not http(s): credentials are sent over http(s) only');
    if (/^https?:\/\/[^/]*@/i.test(entry)) return bad('must not contain user info');
    return bad('is not a host, host:port, *.domain or http(s) URL prefix without query or fragment');
  }
  const scheme = (m ? m[1].toLowerCase() : 'https') as 'http' | 'https';
  const [wild, host, port, path] = m ? [m[2], m[3], m[4], m[5]] : [bare![1], bare![2], bare![3], undefined];
  const portNumber = port ? Number(port) : DEFAULT_PORT[scheme];
  if (portNumber < 1 || portNumber > 65535) return bad('has an invalid port');
  if (wild && host.startsWith('[')) return bad('puts a wildcard on an IP address');
  if (wild && !host.includes('.')) return bad('must have at least two labels after "*." (*.example.com)');
  const p = path ?? '/';
  if (/%(2e|2f|5c)/i.test(p)) return bad('must not contain encoded ".", "/" or "\\" in its path');
  const segments = p.split('/').filter((s) => s !== '');
  if (segments.some((s) => s === '.' || s === '..')) return bad('must not contain "." or ".." path segments');
  return { scheme, host: `${wild ? '*.' : ''}${host.toLowerCase()}`, port: portNumber, segments, raw: entry };
}

/** Pure: every entry of the annotation value, or the first problem. */
export function parseDestinations(value: string): { destinations: Destination[] } | { problem: string } {
  const destinations: Destination[] = [];
  for (const raw of value.split(',')) {
    if (!raw.trim()) continue;
    const d = parseDestination(raw);
    if ('problem' in d) return d;
    destinations.push(d);
  }
  return { destinations };
}

/** A URL about to be requested, reduced to what the rule compares. */
interface Target {
  scheme: 'http' | 'https';
  host: string;
  port: number;
  segments: string[];
  /** Whether the path holds encoded ".", "/" or "\" (never under a path prefix). */
  encoded: boolean;
}

function parseTarget(url: string): Target | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const scheme = u.protocol === 'https:' ? 'https' : u.protocol === 'http:' ? 'http' : undefined;
  if (!scheme) return undefined;
  return {
    scheme,
    host: u.hostname.toLowerCase(),
    port: u.port ? Number(u.port) : DEFAULT_PORT[scheme],
    segments: u.pathname.split('/').filter((s) => s !== ''),
    encoded: /%(2e|2f|5c)/i.test(u.pathname),
  };
}

function hostMatches(pattern: string, host: string): boolean {
  if (!pattern.startsWith('*.')) return pattern === host;
  const suffix = pattern.slice(1); // ".example.com"
  if (!host.endsWith(suffix)) return false;
  const label = host.slice(0, -suffix.length);
  return label.length > 0 && !label.includes('.') && !host.startsWith('[');
}

/** Pure: `d` allows requests to `t`. */
function allows(d: Destination, t: Target): boolean {
  if (d.scheme !== t.scheme || d.port !== t.port || !hostMatches(d.host, t.host)) return false;
  if (!d.segments.length) return true;
  return !t.encoded && d.segments.length <= t.segments.length && d.segments.every((s, i) => t.segments[i] === s);
}

/** The URL as messages show it: scheme, host and port only (a webhook URL's path can be its secret). */
function origin(t: Target): string {
  return `${t.scheme}://${t.host}${t.port === DEFAULT_PORT[t.scheme] ? '' : `:${t.port}`}`;
}

/** What the owner would add to allow `t`: the bare host for https on 443, the origin as a URL prefix otherwise. */
function suggestion(t: Target): string {
  return t.scheme === 'https' && t.port === 443 ? t.host : `${origin(t)}/`;
}

export const isCredentialSecret = (s: CredentialSecretMeta) => s.labels?.[CREDENTIAL_LABEL] === 'true';

export interface RefusalOptions {
  /**
   * The destinations annotation may be absent: the Secret names its hosts in its own format (a
   * dockerconfigjson's auths keys) and the caller matches them. The label is still required, and
   * the annotation, when present, still restricts.
   */
  destinationsOptional?: boolean;
}

/**
 * Pure: why `secret` may not be sent to `url` for `use`, or undefined when it may. The message names
 * the Secret, the field that referenced it and what its owner would add; never a value. Without
 * `url` (it is read from the Secret itself, which must opt in before its data is looked at), only
 * the label and the annotation's presence and form are checked.
 */
export function credentialRefusal(
  secret: CredentialSecretMeta,
  use: CredentialUse,
  url: string | undefined,
  o: RefusalOptions = {},
): string | undefined {
  const where = `Secret ${secret.namespace}/${secret.name} (${use.field}${use.owner ? ` of ${use.owner}` : ''})`;
  const t = url === undefined ? undefined : parseTarget(url);
  if (url !== undefined && !t)
    return `${where} is only sent over http(s), and ${use.destinationField} is not an http(s) URL`;
  const eg = t ? ` (e.g. "${suggestion(t)}")` : '';
  if (!isCredentialSecret(secret))
    return o.destinationsOptional
      ? `${where} is not marked as a credential kpromo may send: its owner must label it ${CREDENTIAL_LABEL}=true (its entries go to the hosts they name; annotation ${DESTINATIONS_ANNOTATION} can narrow them)`
      : `${where} is not marked as a credential kpromo may send: its owner must label it ${CREDENTIAL_LABEL}=true and list where it may go in annotation ${DESTINATIONS_ANNOTATION}${eg}`;
  const value = secret.annotations?.[DESTINATIONS_ANNOTATION];
  if (value === undefined && o.destinationsOptional) return undefined;
  const parsed = parseDestinations(value ?? '');
  if ('problem' in parsed) return `${where}: annotation ${DESTINATIONS_ANNOTATION}: ${parsed.problem}`;
  if (!parsed.destinations.length)
    return `${where} names no destinations: its owner must list where it may go in annotation ${DESTINATIONS_ANNOTATION}${eg}`;
  if (!t || parsed.destinations.some((d) => allows(d, t))) return undefined;
  return `${where} may be sent only to ${parsed.destinations.map((d) => d.raw).join(', ')}, not to ${origin(t)} (${use.destinationField}); if it should go there, its owner adds "${suggestion(t)}" to annotation ${DESTINATIONS_ANNOTATION}`;
}

/** Thrown (status- and log-safe message) when a credential may not go where it was about to. */
export class CredentialRefused extends Error {
  override name = 'CredentialRefused';
}

/** {@link credentialRefusal} as an assertion. */
export function assertCredentialAllowed(
  secret: CredentialSecretMeta,
  use: CredentialUse,
  url: string | undefined,
  o?: RefusalOptions,
): void {
  const refusal = credentialRefusal(secret, use, url, o);
  if (refusal) throw new CredentialRefused(refusal);
}
