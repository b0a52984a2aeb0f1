import type { KpromoKind } from '@kpromo/api';
import { Access, who } from '../api/access.js';
import { type ApiContext, ApiError } from '../api/context.js';
import { Authorizer } from '../auth/authorizer.js';
import type { Caller } from '../auth/identity.js';
import { localCaller } from '../auth/localIdentity.js';
import type { ClusterAccessRule } from '../kube/clusterAccess.js';
import { ClusterClients } from '../kube/clusters.js';
import { LiveCache, WATCHED_KINDS } from '../kube/liveCache.js';
import { KPROMO_TYPES } from '../kube/paths.js';
import type { RateLimitOptions } from '../kube/rateLimit.js';
import type { Logger } from '../observability/logger.js';
import { resolveDigest } from '../oci/copyImage.js';
import { BUILTIN_WORKLOAD_KINDS } from '../rollout/registry.js';
import { ConfigError } from '../util/configError.js';
import { openKubeconfig } from './kubeconfig.js';

export interface LocalSessionOptions {
  /** Kubeconfig path; the default loading rules (KUBECONFIG, ~/.kube/config) when unset. */
  kubeconfig?: string;
  /** Context of the control cluster; the kubeconfig's current context when unset (or empty). */
  context?: string;
  /** Control-cluster namespaces to read; empty: all (needs cluster-wide list); unset: the default one. */
  namespaces?: readonly string[];
  /** Namespace of calls that name none; the context's namespace, then "default", when unset. */
  defaultNamespace?: string;
  /** Which clusters Environments may make this session read (as the controller config key). */
  clusterAccess: readonly ClusterAccessRule[];
  /** Client-side rate limit per cluster (config kubeClient); the default one when unset. */
  kubeClient?: RateLimitOptions;
  /** The cache's informer log; none when unset. */
  log?: Logger;
  /** How long the cache may take to list the kpromo kinds before opening fails. */
  startTimeoutMs: number;
  /**
   * kpromo kinds the session can do without (LiveCache optionalKinds): a caller who may not list
   * them, or an install that does not serve them, still gets a session.
   */
  optionalKinds?: ReadonlySet<KpromoKind>;
  /**
   * Check before the cache starts that the caller may list and watch every kind it reads (all but
   * `optionalKinds`), so a caller who may not gets a 403 at once instead of a timeout.
   */
  requireCacheAccess?: boolean;
}

/** A session as the kubeconfig user: the API context its calls run in, and who they run as. */
export interface LocalSession {
  api: ApiContext;
  /** The kubeconfig user as the apiserver sees it. */
  caller: Caller;
  /** SubjectAccessReviews on the control cluster, as `api.access` makes them. */
  authorizer: Authorizer;
  cache: LiveCache;
  /** Stops the cache. */
  close(): void;
}

/**
 * Opens a read-through session as the kubeconfig user, the one way every local front end does (the
 * CLI, `kpromo-controller mcp --stdio`): the caller's kubeconfig and context, clients of the
 * clusters Environments name (as far as `clusterAccess` allows), the caller (SelfSubjectReview),
 * whose every read and write api/ checks with SubjectAccessReviews and sends with the user's own
 * credentials, and an informer cache of the kpromo kinds and the Environments' workloads, started.
 */
export async function openLocalSession(o: LocalSessionOptions): Promise<LocalSession> {
  const kube = openKubeconfig({ kubeconfig: o.kubeconfig, context: o.context || undefined }, (p) =>
    p.kind === 'noCurrentContext'
      ? new ConfigError(['context: the kubeconfig names no current context; pass one'])
      : new ConfigError([
          `context: the kubeconfig${o.kubeconfig ? ` ${o.kubeconfig}` : ''} has no context "${p.context}" ${p.contexts}`,
        ]),
  );
  const namespace = o.defaultNamespace ?? kube.namespace;
  const clients = new ClusterClients(kube.kubeconfig, { access: o.clusterAccess, rateLimit: o.kubeClient });
  const caller = await localCaller(clients.control);
  const authorizer = new Authorizer(clients.control);
  const access = new Access(authorizer);
  const namespaces = o.namespaces ?? [namespace];
  const optionalKinds = o.optionalKinds ?? new Set<KpromoKind>();
  if (o.requireCacheAccess) await requireCacheAccess(access, caller, namespaces, optionalKinds);
  const cache = new LiveCache(clients, [...namespaces], {
    workloadKinds: BUILTIN_WORKLOAD_KINDS,
    log: o.log,
    optionalKinds,
  });
  try {
    await cache.start(AbortSignal.timeout(o.startTimeoutMs));
  } catch (e) {
    cache.stop();
    throw e;
  }
  return {
    api: { cache, control: clients.control, access, namespace, resolveDigest },
    caller,
    authorizer,
    cache,
    close: () => cache.stop(),
  };
}

async function requireCacheAccess(
  access: Access,
  caller: Caller,
  namespaces: readonly string[],
  optionalKinds: ReadonlySet<KpromoKind>,
): Promise<void> {
  // Every kind the cache lists and watches but those it can do without.
  const resources = WATCHED_KINDS.filter((k) => !optionalKinds.has(k)).map((k) => KPROMO_TYPES[k].plural);
  const scopes = namespaces.length ? namespaces : [undefined];
  const checks = scopes.flatMap((namespace) =>
    resources.flatMap((resource) =>
      (['list', 'watch'] as const).map(async (verb) => ({
        verb,
        resource,
        namespace,
        allowed: await access.may(caller, { verb, resource, namespace }),
      })),
    ),
  );
  const denied = (await Promise.all(checks)).find((c) => !c.allowed);
  if (!denied) return;
  throw new ApiError(
    403,
    `forbidden: ${who(caller)} may not ${denied.verb} ${denied.resource} ${denied.namespace ? `in namespace ${denied.namespace}` : 'in all namespaces (pass a namespace)'} (Kubernetes RBAC: kpromo reads ${resources.join(', ')} with get, list and watch)`,
  );
}
