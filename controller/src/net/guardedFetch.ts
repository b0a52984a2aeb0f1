import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import { Agent, buildConnector, type Dispatcher, request } from 'undici';
import {
  checkAddress,
  type EgressPolicy,
  egressPolicy,
  egressTarget,
  isIpLiteral,
  type OwnListener,
} from './egressPolicy.js';

/**
 * HTTP(S) client for URLs taken from custom resources: the egress policy (egressPolicy.ts) is
 * checked against the address actually connected to (the resolver's answer is checked, then handed
 * to the socket; IP-literal hosts are checked before connecting), redirects are never followed,
 * responses are read up to a bound and every error is typed with a message safe for status and logs.
 */

export type EgressFailure = 'blocked' | 'redirect' | 'timeout' | 'connection' | 'invalid-url' | 'aborted';

/** Base of every error guardedFetch throws; `message` never carries response bodies or stacks of others. */
export class EgressError extends Error {
  constructor(
    readonly failure: EgressFailure,
    message: string,
  ) {
    super(message);
    this.name = 'EgressError';
  }
}

/** The destination is not allowed; `reason` names the address, host and why. */
export class EgressBlocked extends EgressError {
  constructor(readonly reason: string) {
    super('blocked', `blocked by egress policy: ${reason}`);
    this.name = 'EgressBlocked';
  }
}

/** A 3xx answer (never followed); names the Location host only. */
export class EgressRedirect extends EgressError {
  constructor(
    readonly status: number,
    readonly locationHost: string | undefined,
  ) {
    super(
      'redirect',
      `answered ${status} redirecting to ${locationHost ? `host ${locationHost}` : 'no valid location'}; redirects are not followed`,
    );
    this.name = 'EgressRedirect';
  }
}

export class EgressTimeout extends EgressError {
  constructor(readonly timeoutMs: number) {
    super('timeout', `timed out after ${formatDuration(timeoutMs)}`);
    this.name = 'EgressTimeout';
  }
}

export class EgressConnectionFailed extends EgressError {
  constructor(readonly code?: string) {
    super('connection', code ? `connection failed (${code})` : 'connection failed');
    this.name = 'EgressConnectionFailed';
  }
}

export class EgressInvalidUrl extends EgressError {
  constructor(detail: string) {
    super('invalid-url', `invalid URL: ${detail}`);
    this.name = 'EgressInvalidUrl';
  }
}

export class EgressAborted extends EgressError {
  constructor() {
    super('aborted', 'aborted');
    this.name = 'EgressAborted';
  }
}

const formatDuration = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`);

export interface GuardedRequest {
  method?: 'GET' | 'POST' | 'HEAD' | 'PUT' | 'PATCH';
  headers?: Record<string, string>;
  body?: string;
  /** Whole exchange: connect, headers and the (bounded) body. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Response bytes kept; the rest is discarded. Default 64 KiB. */
  maxBodyBytes?: number;
  /** 'error' (default): a 3xx throws EgressRedirect. 'return': the 3xx is returned, still not followed. */
  redirects?: 'error' | 'return';
  /** PEM CA bundle trusted for this request's TLS instead of the system roots (e.g. an OIDC issuer's CA). */
  ca?: string;
}

export interface GuardedResponse {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string | string[] | undefined>;
  header(name: string): string | undefined;
  /** At most maxBodyBytes; callers must not echo it into statuses or logs. */
  body: Buffer;
  truncated: boolean;
}

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export interface EgressOptions {
  /** From config egress.allowedCidrs (validated there; invalid entries throw here). */
  allowedCidrs?: string[];
  /** Listeners to refuse besides the process-wide ones from {@link registerOwnListener}. */
  ownListeners?: OwnListener[];
  /** DNS (tests); default node:dns lookup of every address. */
  resolve?: Resolver;
}

const ownListeners = new Map<symbol, OwnListener>();

/**
 * Registers a listening socket of this process (API, MCP) as a forbidden destination for every
 * Egress in the process, whatever the allow list says. Returns the unregister function.
 */
export function registerOwnListener(
  name: string,
  server: { address(): string | { address: string; port: number } | null } | undefined,
): () => void {
  const addr = server?.address();
  if (!addr || typeof addr !== 'object') return () => undefined;
  const key = Symbol(name);
  ownListeners.set(key, { name, address: addr.address, port: addr.port });
  return () => ownListeners.delete(key);
}

function localAddresses(): string[] {
  try {
    return Object.values(networkInterfaces())
      .flatMap((l) => l ?? [])
      .map((i) => i.address);
  } catch {
    return [];
  }
}

const defaultResolve: Resolver = (hostname) => dnsLookup(hostname, { all: true, order: 'verbatim' });

/** A configured egress guard: one per controller (config), shared by the notifier and health checks. */
export class Egress {
  private readonly allowed: string[];

  constructor(private readonly opts: EgressOptions = {}) {
    this.allowed = opts.allowedCidrs ?? [];
    egressPolicy({ allowedCidrs: this.allowed }); // fail fast on a bad entry
  }

  /** The policy as of now (own listeners come and go). */
  policy(): EgressPolicy {
    return egressPolicy({
      allowedCidrs: this.allowed,
      ownListeners: [...(this.opts.ownListeners ?? []), ...ownListeners.values()],
      localAddresses: localAddresses(),
    });
  }

  /**
   * A socket lookup that resolves once, checks every answer against the policy for `port` and hands
   * exactly the checked answers to the socket. Any blocked answer refuses the host: a name that mixes
   * public and internal addresses is not something to connect to "sometimes".
   */
  private guardedLookup(
    port: number,
    policy: () => EgressPolicy,
    onBlocked: (b: EgressBlocked) => void = () => undefined,
  ): LookupFunction {
    const resolve = this.opts.resolve ?? defaultResolve;
    return (hostname, options, callback) => {
      const cb = callback as (err: Error | null, address: string | LookupAddress[], family?: number) => void;
      resolve(hostname)
        .then((all) => {
          if (!all.length) throw Object.assign(new Error('no address'), { code: 'ENOTFOUND' });
          const p = policy();
          for (const a of all) {
            const v = checkAddress(p, a.address, port, hostname);
            if (!v.allowed) {
              const blocked = new EgressBlocked(v.reason);
              onBlocked(blocked);
              throw blocked;
            }
          }
          const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
          const usable = family === 4 || family === 6 ? all.filter((a) => a.family === family) : all;
          if (!usable.length)
            throw Object.assign(new Error('no address of the requested family'), { code: 'ENOTFOUND' });
          return usable;
        })
        .then(
          (usable) => (options.all ? cb(null, usable) : cb(null, usable[0].address, usable[0].family)),
          (err: Error) => cb(err, ''),
        );
    };
  }

  private pool?: Agent;
  private readonly connectors = new Map<number, buildConnector.connector>();

  /**
   * A shared connection pool for clients that stream or follow redirects themselves (the OCI
   * registry client). Every connection it opens, to the first URL or to a redirect's Location,
   * goes only to an address the policy allows at that moment: IP literals are checked as they are,
   * names after DNS with the checked answers handed to the socket. A refused connection fails with
   * an {@link EgressBlocked} in its error's cause chain ({@link egressBlockedIn} finds it).
   */
  dispatcher(): Dispatcher {
    this.pool ??= new Agent({
      allowH2: false,
      connect: (o: buildConnector.Options, cb: buildConnector.Callback) => this.connect(o, cb),
    });
    return this.pool;
  }

  private connect(o: buildConnector.Options, cb: buildConnector.Callback): void {
    const hostname = o.hostname.startsWith('[') ? o.hostname.slice(1, -1) : o.hostname;
    const port = Number(o.port) || (o.protocol === 'https:' ? 443 : 80);
    if (isIpLiteral(hostname)) {
      const v = checkAddress(this.policy(), hostname, port, hostname);
      if (!v.allowed) {
        cb(new EgressBlocked(v.reason), null);
        return;
      }
    }
    let connector = this.connectors.get(port);
    if (!connector) {
      connector = buildConnector({ lookup: this.guardedLookup(port, () => this.policy()) });
      this.connectors.set(port, connector);
    }
    connector(o, cb);
  }

  /** Closes the pool of {@link dispatcher} (tests; the controller keeps it for its lifetime). */
  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.close().catch(() => undefined);
  }

  /**
   * One request, no redirects followed, body bounded. Throws only EgressError subclasses; an HTTP
   * error status is a normal response.
   */
  async fetch(input: string | URL, req: GuardedRequest): Promise<GuardedResponse> {
    let target: ReturnType<typeof egressTarget>;
    try {
      target = egressTarget(input);
    } catch (e) {
      throw new EgressInvalidUrl((e as Error).message);
    }
    const policy = this.policy();
    if (target.literal) {
      const v = checkAddress(policy, target.hostname, target.port, target.hostname);
      if (!v.allowed) throw new EgressBlocked(v.reason);
    }
    let blocked: EgressBlocked | undefined;
    const lookup = this.guardedLookup(
      target.port,
      () => policy,
      (b) => (blocked = b),
    );
    const agent = new Agent({
      connect: { lookup, timeout: req.timeoutMs, ...(req.ca ? { ca: req.ca } : {}) },
      headersTimeout: req.timeoutMs,
      bodyTimeout: req.timeoutMs,
      connections: 1,
      pipelining: 0,
    });
    const timeout = AbortSignal.timeout(req.timeoutMs);
    const signal = req.signal ? AbortSignal.any([timeout, req.signal]) : timeout;
    try {
      const res = await request(target.url, {
        method: req.method ?? 'GET',
        headers: req.headers,
        body: req.body,
        dispatcher: agent,
        signal,
      });
      const { body, truncated } = await readBounded(res.body, req.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
      const headers = res.headers as Record<string, string | string[] | undefined>;
      if (res.statusCode >= 300 && res.statusCode < 400 && (req.redirects ?? 'error') === 'error')
        throw new EgressRedirect(res.statusCode, locationHost(headers.location, target.url));
      return {
        status: res.statusCode,
        headers,
        header: (name) => {
          const v = headers[name.toLowerCase()];
          return Array.isArray(v) ? v[0] : v;
        },
        body,
        truncated,
      };
    } catch (err) {
      if (err instanceof EgressError) throw err;
      if (blocked) throw blocked;
      const found = findInChain(err, (e) => e instanceof EgressBlocked);
      if (found) throw found as EgressBlocked;
      if (req.signal?.aborted) throw new EgressAborted();
      if (timeout.aborted || findInChain(err, (e) => TIMEOUT_CODES.has(codeOf(e) ?? ''))) {
        throw new EgressTimeout(req.timeoutMs);
      }
      const code = findInChain(err, (e) => SAFE_CODE.test(codeOf(e) ?? ''));
      throw new EgressConnectionFailed(code ? codeOf(code) : undefined);
    } finally {
      agent.destroy().catch(() => undefined);
    }
  }
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);
/** errno-style codes are fixed vocabulary, safe to show (never free text from the peer). */
const SAFE_CODE = /^(E[A-Z0-9_]{2,30}|UND_ERR_[A-Z_]{2,40})$/;

const codeOf = (e: unknown): string | undefined =>
  e && typeof e === 'object' && typeof (e as { code?: unknown }).code === 'string'
    ? (e as { code: string }).code
    : undefined;

/** The {@link EgressBlocked} somewhere in an error's cause chain (a fetch through {@link Egress.dispatcher}). */
export function egressBlockedIn(err: unknown): EgressBlocked | undefined {
  return findInChain(err, (e) => e instanceof EgressBlocked) as EgressBlocked | undefined;
}

function findInChain(err: unknown, pred: (e: unknown) => boolean): unknown {
  const seen = new Set<unknown>();
  const queue = [err];
  while (queue.length) {
    const e = queue.shift();
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    if (pred(e)) return e;
    queue.push((e as { cause?: unknown }).cause);
    if (e instanceof AggregateError) queue.push(...e.errors);
  }
  return undefined;
}

function locationHost(location: string | string[] | undefined, base: URL): string | undefined {
  const l = Array.isArray(location) ? location[0] : location;
  if (!l) return undefined;
  try {
    return new URL(l, base).host || undefined;
  } catch {
    return undefined;
  }
}

async function readBounded(
  body: AsyncIterable<Buffer> & { destroy(): unknown },
  max: number,
): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const left = max - size;
    if (chunk.length > left) {
      if (left > 0) chunks.push(chunk.subarray(0, left));
      size = max;
      body.destroy(); // discard the rest; the connection is not reused anyway
      return { body: Buffer.concat(chunks), truncated: true };
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { body: Buffer.concat(chunks), truncated: false };
}

let processDefault: Egress | undefined;

/**
 * The Egress used where none is passed (Application health checks run deep in the reconcile). The
 * controller runtime installs its configured one; until then the strict default applies.
 * Returns a function restoring the previous one.
 */
export function setDefaultEgress(e: Egress): () => void {
  const previous = processDefault;
  processDefault = e;
  return () => {
    if (processDefault === e) processDefault = previous;
  };
}

export function defaultEgress(): Egress {
  processDefault ??= new Egress();
  return processDefault;
}

/** {@link Egress.fetch} with the process default policy. */
export function guardedFetch(input: string | URL, req: GuardedRequest, egress = defaultEgress()) {
  return egress.fetch(input, req);
}
