import ipaddr from 'ipaddr.js';

/**
 * Egress (SSRF) policy for requests whose URL comes from a custom resource (Notification webhooks,
 * Application http health checks, OCI registry traffic: registry host, token realm, redirects).
 * Pure: no DNS, no sockets. The I/O side (guardedFetch.ts) resolves once, asks {@link checkAddress}
 * about every address and connects only to checked addresses.
 *
 * Default: every special-purpose address is blocked (loopback, link-local, unspecified, cloud
 * metadata, private/ULA, CGNAT, multicast, broadcast, reserved, and IPv4 addresses embedded in IPv6
 * forms). `egress.allowedCidrs` lets some of them through, except the controller's own listeners
 * and the cloud metadata addresses (in any IPv6 form), which no setting opens: they hand out the
 * node's cloud credentials, and a range opened for something else (link-local DNS, 0.0.0.0/0 behind
 * an egress proxy) must not open them quietly.
 */

type Addr = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Addr, number];

export interface Cidr {
  /** As configured. */
  text: string;
  range: Range;
}

/** One listening socket of this process (API, MCP): never a valid egress destination. */
export interface OwnListener {
  /** Shown in the reason, e.g. "API". */
  name: string;
  /** Bound address; an unspecified one (0.0.0.0, ::) means every local address. */
  address: string;
  port: number;
}

export interface EgressPolicy {
  allowed: Cidr[];
  ownListeners: OwnListener[];
  /** This host's interface addresses (for listeners bound to 0.0.0.0 / ::). */
  localAddresses: string[];
}

export type EgressVerdict = { allowed: true } | { allowed: false; category: string; reason: string };

const ALLOW_HINT = 'allow it with egress.allowedCidrs';

/** Blocked by default, first match wins (so metadata addresses are named before their wider range). */
const BLOCKED: Array<[string, string]> = [
  ['169.254.169.254/32', 'a cloud metadata address'],
  ['100.100.100.200/32', 'a cloud metadata address'],
  ['fd00:ec2::254/128', 'a cloud metadata address'],
  ['0.0.0.0/8', 'unspecified'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['10.0.0.0/8', 'private'],
  ['172.16.0.0/12', 'private'],
  ['192.168.0.0/16', 'private'],
  ['100.64.0.0/10', 'shared address space (CGNAT)'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'reserved (documentation)'],
  ['198.51.100.0/24', 'reserved (documentation)'],
  ['203.0.113.0/24', 'reserved (documentation)'],
  ['198.18.0.0/15', 'reserved (benchmarking)'],
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local (deprecated)'],
  ['fc00::/7', 'unique local (private)'],
  ['ff00::/8', 'multicast'],
  ['100::/64', 'reserved (discard)'],
  ['2001:db8::/32', 'reserved (documentation)'],
];

const METADATA = 'a cloud metadata address';
const METADATA_RANGES: Range[] = BLOCKED.filter(([, c]) => c === METADATA).map(([cidr]) => ipaddr.parseCIDR(cidr));

const BLOCKED_RANGES: Array<{ range: Range; category: string }> = BLOCKED.map(([cidr, category]) => ({
  range: ipaddr.parseCIDR(cidr),
  category,
}));

function matches(a: Addr, r: Range): boolean {
  return a.kind() === r[0].kind() && a.match(r);
}

function parseAddress(text: string): Addr | undefined {
  const t = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (!ipaddr.isValid(t)) return undefined;
  return ipaddr.parse(t);
}

/** Is `host` an IP literal (as URL.hostname gives it, IPv6 in brackets)? */
export function isIpLiteral(host: string): boolean {
  return parseAddress(host) !== undefined;
}

/** The IPv4 address a connection to this IPv6 address really reaches, for the forms that carry one. */
function embeddedIpv4(a: ipaddr.IPv6): { v4: ipaddr.IPv4; form: string } | undefined {
  const p = a.parts;
  const v4 = () => new ipaddr.IPv4([p[6] >> 8, p[6] & 0xff, p[7] >> 8, p[7] & 0xff]);
  const zero = (from: number, to: number) => p.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && p[5] === 0xffff) return { v4: v4(), form: 'IPv4-mapped' };
  if (zero(0, 4) && p[4] === 0xffff && p[5] === 0) return { v4: v4(), form: 'IPv4-translated' };
  if (p[0] === 0x64 && p[1] === 0xff9b && zero(2, 6)) return { v4: v4(), form: 'NAT64' };
  if (p[0] === 0x64 && p[1] === 0xff9b && p[2] === 1) return { v4: v4(), form: 'NAT64' };
  if (p[0] === 0x2002) return { v4: new ipaddr.IPv4([p[1] >> 8, p[1] & 0xff, p[2] >> 8, p[2] & 0xff]), form: '6to4' };
  // IPv4-compatible (deprecated) ::a.b.c.d; :: and ::1 are themselves
  if (zero(0, 6) && (p[6] !== 0 || p[7] > 1)) return { v4: v4(), form: 'IPv4-compatible' };
  return undefined;
}

/** Why this address is blocked by default, or undefined when it is a public unicast address. */
export function blockedCategory(address: string): string | undefined {
  const a = parseAddress(address);
  if (!a) return 'not an IP address';
  const own = BLOCKED_RANGES.find((b) => matches(a, b.range))?.category;
  if (own) return own;
  if (a.kind() === 'ipv6') {
    const e = embeddedIpv4(a as ipaddr.IPv6);
    if (e) {
      const inner = BLOCKED_RANGES.find((b) => matches(e.v4, b.range))?.category;
      if (inner) return `${inner} (${e.form} ${e.v4.toString()})`;
    }
  }
  return undefined;
}

/**
 * The metadata category (with the form it hides in) when a connection to `address` reaches a cloud
 * metadata address, whatever form it is written in; else undefined.
 */
function metadataCategory(a: Addr): string | undefined {
  if (METADATA_RANGES.some((r) => matches(a, r))) return METADATA;
  if (a.kind() !== 'ipv6') return undefined;
  const e = embeddedIpv4(a as ipaddr.IPv6);
  if (e && METADATA_RANGES.some((r) => matches(e.v4, r))) return `${METADATA} (${e.form} ${e.v4.toString()})`;
  return undefined;
}

/**
 * Parses one allow-list entry: a CIDR (10.0.0.0/8, fd00::/8) or a single address (taken as /32,
 * /128). IPv4 must be four-part decimal: "10/8" is rejected rather than guessed.
 */
export function parseCidr(text: string): Cidr {
  const t = text.trim();
  const [addrPart, bits, ...rest] = t.split('/');
  if (rest.length || !addrPart) throw new Error(`"${text}" is not a CIDR (expected e.g. 10.0.0.0/8 or fd00::/8)`);
  const isV4 = ipaddr.IPv4.isValidFourPartDecimal(addrPart);
  if (!isV4 && !ipaddr.IPv6.isValid(addrPart))
    throw new Error(`"${text}" is not a CIDR: ${addrPart} is not an IPv4 (four-part decimal) or IPv6 address`);
  let addr: Addr = ipaddr.parse(addrPart);
  const max = addr.kind() === 'ipv4' ? 32 : 128;
  let prefix = max;
  if (bits !== undefined) {
    if (!/^\d{1,3}$/.test(bits) || Number(bits) > max)
      throw new Error(`"${text}" is not a CIDR: prefix length must be 0..${max}`);
    prefix = Number(bits);
  }
  // ::ffff:a.b.c.d/n with n >= 96 means the IPv4 range a.b.c.d/(n-96): what such a connection reaches.
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96) {
    addr = (addr as ipaddr.IPv6).toIPv4Address();
    prefix -= 96;
  }
  // An entry that names nothing but a metadata address is a mistake (or an attempt): say so at load.
  if (prefix === (addr.kind() === 'ipv4' ? 32 : 128) && metadataCategory(addr))
    throw new Error(
      `"${text}" names only a cloud metadata address, which is never reachable (the instance's credentials live there); remove it`,
    );
  return { text: t, range: [addr, prefix] };
}

/** undefined when valid, else a message naming the entry. */
export function cidrProblem(text: string): string | undefined {
  try {
    parseCidr(text);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

export function egressPolicy(input: {
  allowedCidrs?: string[];
  ownListeners?: OwnListener[];
  localAddresses?: string[];
}): EgressPolicy {
  return {
    allowed: (input.allowedCidrs ?? []).map(parseCidr),
    ownListeners: input.ownListeners ?? [],
    localAddresses: input.localAddresses ?? [],
  };
}

/** Mapped/translated IPv6 forms connect to their IPv4 address: judge that one. */
function effective(a: Addr): Addr {
  if (a.kind() === 'ipv6') {
    const e = embeddedIpv4(a as ipaddr.IPv6);
    if (e && (e.form === 'IPv4-mapped' || e.form === 'IPv4-translated')) return e.v4;
  }
  return a;
}

const same = (a: Addr, b: Addr) => a.kind() === b.kind() && a.toNormalizedString() === b.toNormalizedString();
const LOOPBACK: Range[] = [ipaddr.parseCIDR('127.0.0.0/8'), ipaddr.parseCIDR('::1/128')];
const UNSPECIFIED: Range[] = [ipaddr.parseCIDR('0.0.0.0/8'), ipaddr.parseCIDR('::/128')];
const isLoopback = (a: Addr) => LOOPBACK.some((r) => matches(a, r));
const isUnspecified = (a: Addr) => UNSPECIFIED.some((r) => matches(a, r));

function ownListener(policy: EgressPolicy, a: Addr, port: number): OwnListener | undefined {
  return policy.ownListeners.find((l) => {
    if (l.port !== port) return false;
    const bound = parseAddress(l.address);
    if (!bound) return isLoopback(a); // a hostname bind (e.g. "localhost")
    const b = effective(bound);
    if (isUnspecified(b)) {
      if (isLoopback(a) || isUnspecified(a)) return true;
      return policy.localAddresses.some((x) => {
        const local = parseAddress(x);
        return !!local && same(effective(local), a);
      });
    }
    // 127.0.0.1 and 127.0.0.2 both reach a loopback listener on Linux; 0.0.0.0 reaches every listener.
    return same(b, a) || (isLoopback(b) && isLoopback(a)) || isUnspecified(a);
  });
}

/**
 * May a connection go to `address`:`port`? `host` is the URL's host (for the message). Own listeners
 * and cloud metadata addresses are refused even when an allowed range covers them; otherwise an
 * allowed range wins.
 */
export function checkAddress(policy: EgressPolicy, address: string, port: number, host?: string): EgressVerdict {
  const parsed = parseAddress(address);
  const of = host && host !== address && `[${address}]` !== host ? ` of host ${host}` : '';
  if (!parsed) return { allowed: false, category: 'invalid', reason: `address ${address}${of} is not an IP address` };
  const a = effective(parsed);
  const own = ownListener(policy, a, port);
  if (own)
    return {
      allowed: false,
      category: 'own listener',
      reason: `address ${address} port ${port}${of} is the controller's own ${own.name} listener; it cannot be allowed`,
    };
  const metadata = metadataCategory(parsed) ?? metadataCategory(a);
  if (metadata)
    return {
      allowed: false,
      category: metadata,
      reason: `address ${address}${of} is ${metadata}; it is never reachable, whatever egress.allowedCidrs lists`,
    };
  if (policy.allowed.some((c) => matches(a, c.range) || matches(parsed, c.range))) return { allowed: true };
  const category = blockedCategory(address);
  if (!category) return { allowed: true };
  return { allowed: false, category, reason: `address ${address}${of} is ${category}; ${ALLOW_HINT}` };
}

export interface EgressTarget {
  url: URL;
  protocol: 'http:' | 'https:';
  /** Without IPv6 brackets. */
  hostname: string;
  /** Effective port (80/443 when the URL names none). */
  port: number;
  /** The host is an IP address: checked as is, no DNS. */
  literal: boolean;
}

/** Parses and pre-checks a URL: http/https only, no credentials. Throws an Error with a safe message. */
export function egressTarget(input: string | URL): EgressTarget {
  let url: URL;
  try {
    url = new URL(String(input));
  } catch {
    throw new Error('not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`scheme ${url.protocol} is not allowed (only http and https)`);
  if (url.username || url.password) throw new Error('URLs with credentials (user:password@) are not supported');
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return { url, protocol: url.protocol, hostname, port, literal: isIpLiteral(hostname) };
}
