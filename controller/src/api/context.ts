import type { CacheView } from '../kube/cacheView.js';
import type { KubeRest } from '../kube/rest.js';

/** What the API functions need; shared by the HTTP server, the CLI and the MCP server. */
export interface ApiContext {
  cache: CacheView;
  /** Control-cluster client (where the kpromo CRs live). */
  control: KubeRest;
  /** Default namespace for CRs when a call does not name one. */
  namespace: string;
  /** Resolves a tag to a digest in an Environment registry when a workload does not pin one. */
  resolveDigest?(
    env: { host: string; insecure?: boolean },
    repository: string,
    tag: string,
  ): Promise<string | undefined>;
}

/** An API error with an HTTP-ish status, so every front end can map it the same way. */
export class ApiError extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 500,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}
