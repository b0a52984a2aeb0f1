import type { OutgoingHttpHeaders } from 'node:http';
import * as https from 'node:https';
import * as k8s from '@kubernetes/client-node';
import { type Dispatcher, fetch } from 'undici';
import type { ClientRateLimiter, RequestPriority } from './rateLimit.js';

/** How long one connection pool serves a client before a fresh one (rotated client certificates). */
const POOL_RENEW_MS = 5 * 60_000;

/** An apiserver error with enough context to act on: which call, which cluster, what status. */
export class KubeError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    readonly method: string,
    readonly path: string,
    readonly cluster: string,
    message: string,
  ) {
    super(`${method} ${path} on cluster "${cluster}" failed (${status} ${reason}): ${message}`);
    this.name = 'KubeError';
  }
}

export const isNotFound = (e: unknown) => e instanceof KubeError && e.status === 404;
export const isConflict = (e: unknown) => e instanceof KubeError && e.status === 409;
export const isGone = (e: unknown) => e instanceof KubeError && e.status === 410;

export interface RequestOptions {
  body?: unknown;
  contentType?: string;
  query?: Record<string, string | number | boolean | undefined>;
  signal?: AbortSignal;
  /** `low` for writes that summarise state (derived statuses): they wait behind promotion steps. */
  priority?: RequestPriority;
  /** The body as text, not JSON (pod logs); sent with `Accept: *\/*`. */
  text?: boolean;
}

/**
 * A thin JSON client over the apiserver REST paths. The generated typed clients convert dates and
 * drop unknown fields of CRs; working on plain JSON keeps CRs, workloads and HelmReleases uniform.
 */
export class KubeRest {
  constructor(
    readonly kc: k8s.KubeConfig,
    /** Human name for errors and logs (the context or Environment cluster key). */
    readonly clusterName: string,
    /** Act as this user (Impersonate-User/Impersonate-Group), so RBAC and admission see the caller. */
    readonly impersonating?: { username: string; groups: readonly string[] },
    /** The cluster's client-side rate limit, shared by every client of that cluster; none when absent. */
    readonly limiter?: ClientRateLimiter,
  ) {}

  /**
   * The same client acting as `user` (`kubectl --as`): the apiserver authorises and admits each
   * request as that user. For tools and tests holding an admin kubeconfig; the controller never
   * impersonates (its ServiceAccount holds no `impersonate` right).
   */
  as(user: { username: string; groups: readonly string[] }): KubeRest {
    return new KubeRest(this.kc, this.clusterName, { username: user.username, groups: [...user.groups] }, this.limiter);
  }

  async request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error(`kubeconfig for "${this.clusterName}" has no current cluster`);
    const url = new URL(cluster.server + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    await this.limiter?.take(opts.priority);
    const { status, statusText, text } = this.impersonating
      ? await this.sendImpersonating(method, url, opts)
      : await this.send(method, url, opts);
    if (status < 200 || status >= 300) {
      let reason = statusText;
      let message = text.slice(0, 2000);
      try {
        const st = JSON.parse(text) as { reason?: string; message?: string };
        reason = st.reason ?? reason;
        message = st.message ?? message;
      } catch {
        // not a Status object
      }
      throw new KubeError(status, reason, method, path, this.clusterName, message);
    }
    if (opts.text) return text as T;
    return (text ? JSON.parse(text) : undefined) as T;
  }

  private async send(method: string, url: URL, opts: RequestOptions) {
    const ctx = new k8s.RequestContext(url.toString(), method as k8s.HttpMethod);
    await this.kc.applySecurityAuthentication(ctx);
    const headers: Record<string, string> = {
      ...ctx.getHeaders(),
      accept: opts.text ? '*/*' : 'application/json',
    };
    if (opts.body !== undefined) headers['content-type'] = opts.contentType ?? 'application/json';
    const res = await fetch(url, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      dispatcher: this.dispatcher(ctx),
      signal: opts.signal ?? AbortSignal.timeout(30_000),
    });
    return { status: res.status, statusText: res.statusText, text: await res.text(), date: res.headers.get('date') };
  }

  /**
   * The apiserver's clock: the Date header of `GET /version` (one-second resolution), with the local
   * time before and after the request; undefined when the apiserver sends none.
   */
  async serverClock(): Promise<{ server: Date; sentAt: Date; receivedAt: Date } | undefined> {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error(`kubeconfig for "${this.clusterName}" has no current cluster`);
    const sentAt = new Date();
    const res = await this.send('GET', new URL(`${cluster.server}/version`), {});
    const receivedAt = new Date();
    if (res.status !== 200 || !res.date) return undefined;
    return { server: new Date(res.date), sentAt, receivedAt };
  }

  private pool?: { dispatcher: Dispatcher; until: number };
  /**
   * One connection pool per client, reused: client-node builds a new agent (and so a new TLS
   * connection) for every request, which at 5,000 Applications cost ~5 ms CPU per status write
   * (the scale bench's start: 43 s CPU for 5,500 writes). Renewed every few minutes so rotated
   * client certificates in the kubeconfig files are picked up; auth headers are applied per request.
   */
  private dispatcher(ctx: k8s.RequestContext): Dispatcher {
    const now = Date.now();
    if (this.pool && now < this.pool.until) return this.pool.dispatcher;
    const old = this.pool?.dispatcher;
    this.pool = { dispatcher: ctx.getDispatcher() as Dispatcher, until: now + POOL_RENEW_MS };
    // Requests in flight on the old pool finish; it then closes its connections.
    void old?.close().catch(() => undefined);
    return this.pool.dispatcher;
  }

  /**
   * Requests as another user go through node:https: the apiserver reads one group per
   * Impersonate-Group header line, and fetch folds repeated headers into one comma-joined line
   * (which it would read as a single, made-up group).
   */
  private async sendImpersonating(method: string, url: URL, opts: RequestOptions) {
    const imp = this.impersonating!;
    const o: https.RequestOptions = { method, headers: {} };
    await this.kc.applyToHTTPSOptions(o);
    const headers: OutgoingHttpHeaders = {
      ...(o.headers as OutgoingHttpHeaders),
      accept: opts.text ? '*/*' : 'application/json',
      'Impersonate-User': imp.username,
      // The apiserver adds system:authenticated to every authenticated user itself.
      ...(imp.groups.length ? { 'Impersonate-Group': imp.groups.filter((g) => g !== 'system:authenticated') } : {}),
    };
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    if (body !== undefined) headers['content-type'] = opts.contentType ?? 'application/json';
    const signal = opts.signal ?? AbortSignal.timeout(30_000);
    return new Promise<{ status: number; statusText: string; text: string }>((resolve, reject) => {
      const req = https.request(url, { ...o, headers, signal }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            statusText: res.statusMessage ?? '',
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  get<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.request<T>('GET', path, { signal });
  }
  /** A text resource such as a pod's log (`query`: tailLines, limitBytes, container). */
  getText(path: string, query?: RequestOptions['query'], signal?: AbortSignal): Promise<string> {
    return this.request<string>('GET', path, {
      text: true,
      ...(query ? { query } : {}),
      ...(signal ? { signal } : {}),
    });
  }
  async getOrUndefined<T>(path: string): Promise<T | undefined> {
    try {
      return await this.get<T>(path);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }
  create<T>(collectionPath: string, body: unknown): Promise<T> {
    return this.request<T>('POST', collectionPath, { body });
  }
  put<T>(path: string, body: unknown, opts: { priority?: RequestPriority } = {}): Promise<T> {
    return this.request<T>('PUT', path, { body, priority: opts.priority });
  }
  mergePatch<T>(path: string, patch: unknown): Promise<T> {
    return this.request<T>('PATCH', path, { body: patch, contentType: 'application/merge-patch+json' });
  }
  jsonPatch<T>(path: string, ops: unknown[]): Promise<T> {
    return this.request<T>('PATCH', path, { body: ops, contentType: 'application/json-patch+json' });
  }
  /** Server-side apply; `dryRun` has the apiserver admit and validate it without storing it. */
  apply<T>(path: string, body: unknown, fieldManager: string, opts: { dryRun?: boolean } = {}): Promise<T> {
    return this.request<T>('PATCH', path, {
      body,
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager, force: true, ...(opts.dryRun ? { dryRun: 'All' } : {}) },
    });
  }
  delete(path: string): Promise<unknown> {
    return this.request('DELETE', path);
  }
}
