import type { Environment, PromotionPlan } from '@kpromo/api';
import type { ApiContext } from '../api/context.js';
import { ApiError } from '../api/context.js';
import type { Caller } from '../auth/identity.js';
import type { ClusterAccessRule } from '../kube/clusterAccess.js';
import { type LiveCache, targetKey } from '../kube/liveCache.js';
import { openLocalSession } from './local.js';

// The session of the `kpromo` CLI: the API functions the HTTP API and MCP call, run as the
// kubeconfig user.

export interface LocalApiOptions {
  /** Kubeconfig path; the default loading rules (KUBECONFIG, ~/.kube/config) when unset. */
  kubeconfig?: string;
  /** Context of the control cluster; the kubeconfig's current context when unset. */
  context?: string;
  /** Control-cluster namespaces to read; empty: all (needs cluster-wide list); unset: the default one. */
  namespaces?: readonly string[];
  /** Namespace of calls that name none; the context's namespace, then "default", when unset. */
  defaultNamespace?: string;
  /** Which clusters Environments may make this session read (as the controller config key). */
  clusterAccess: readonly ClusterAccessRule[];
  /**
   * Wait up to this long for every Environment's workloads to be read, for answers that show
   * running versions; Environments still unsynced after it read as unknown. 0: do not wait.
   */
  environmentsWaitMs?: number;
}

export interface LocalApi {
  api: ApiContext;
  /** The kubeconfig user as the apiserver sees it. */
  caller: Caller;
  /**
   * Waits up to `waitMs` until the workloads of these Environments (in the session's namespace) are
   * read, then refuses (503) while one is not: candidates computed from a half-read cache would be
   * wrong. Names that are no Environment are left to the API call to report.
   */
  requireEnvironments(names: readonly string[], waitMs: number): Promise<void>;
  /** Informer updates of one plan (a cue to re-read it through the API, which authorises). */
  onPlanUpdate(namespace: string, name: string, fn: (plan: PromotionPlan) => void): void;
  close(): void;
}

/**
 * Kinds a session can do without (LiveCache optionalKinds): LineStops and OrgPolicies, which a viewer
 * may not list and an older install does not serve; the commands that need them say so themselves
 * (the plan's gate, written by the controller, carries the org rules that apply).
 */
const OPTIONAL_KINDS = new Set(['LineStop', 'OrgPolicy'] as const);

/**
 * Opens the CLI's session ({@link openLocalSession}): a short-lived informer cache of the kpromo CRs
 * read as the kubeconfig user, so RBAC and admission apply as for kubectl. A user who may not list
 * and watch the kpromo kinds gets a 403 at once, not a timeout.
 */
export async function openLocalApi(o: LocalApiOptions): Promise<LocalApi> {
  const s = await openLocalSession({
    kubeconfig: o.kubeconfig,
    context: o.context,
    namespaces: o.namespaces,
    defaultNamespace: o.defaultNamespace,
    clusterAccess: o.clusterAccess,
    startTimeoutMs: 30_000,
    optionalKinds: OPTIONAL_KINDS,
    requireCacheAccess: true,
  });
  const { cache } = s;
  const { namespace } = s.api;
  try {
    if (o.environmentsWaitMs) await settleEnvironments(cache, cache.environments(), o.environmentsWaitMs);
  } catch (e) {
    s.close();
    throw e;
  }
  return {
    api: s.api,
    caller: s.caller,
    async requireEnvironments(names, waitMs) {
      const envs = cache.environments(namespace).filter((e) => names.includes(e.metadata.name));
      await settleEnvironments(cache, envs, waitMs);
      const behind = envs.find((e) => !cache.environmentSynced(e));
      if (behind)
        throw new ApiError(
          503,
          `Environment ${namespace}/${behind.metadata.name}: its workloads could not be read within ${Math.round(waitMs / 1000)}s (${cache.environmentState(behind).error ?? 'still listing'}); check that you may list them in its cluster, then try again`,
        );
    },
    onPlanUpdate(ns, name, fn) {
      cache.onEvent((e) => {
        if (e.kind === 'PromotionPlan' && e.obj.metadata.namespace === ns && e.obj.metadata.name === name)
          fn(e.obj as unknown as PromotionPlan);
      });
    },
    close: s.close,
  };
}

/** How long an Environment's watches must be quiet (no informer added or synced) to count as settled. */
const QUIET_MS = 1_000;

/**
 * Waits (at most `waitMs`) until each Environment is synced as a whole and has been quiet for a
 * moment. waitForEnvironment alone is not enough: a kind served by a CRD (Argo Rollouts) joins an
 * Environment once the cache has listed that CRD, which can be after the built-in kinds synced, and
 * the Environment is then unsynced again until the new informer lists: versions read in between
 * would be Unknown. Gives up early on an Environment whose cluster is refused or unreachable.
 */
async function settleEnvironments(cache: LiveCache, envs: readonly Environment[], waitMs: number): Promise<void> {
  const signal = AbortSignal.timeout(waitMs);
  const lastChange = new Map<string, number>();
  cache.onEvent((e) => {
    if (e.kind === 'Target') lastChange.set(e.workloadKey, Date.now());
  });
  const sleep = (ms: number) =>
    new Promise<void>((r) => {
      const t = setTimeout(r, ms);
      signal.addEventListener('abort', () => {
        clearTimeout(t);
        r();
      });
    });
  const settle = async (env: Environment) => {
    while (!signal.aborted) {
      try {
        await cache.waitForEnvironment(env, signal);
      } catch (e) {
        if (signal.aborted) return;
        // Refused by clusterAccess or its cluster unreachable: environmentState says why.
        if (!cache.environmentState(env).synced && cache.environmentState(env).error) return;
        throw e;
      }
      const quietFor = Date.now() - (lastChange.get(targetKey(env)) ?? 0);
      if (quietFor < QUIET_MS) await sleep(QUIET_MS - quietFor);
      else if (cache.environmentSynced(env)) return;
    }
  };
  await Promise.all(envs.map(settle));
}

/** Runs `fn` in a session opened with {@link openLocalApi} and closes it afterwards. */
export async function withLocalApi<T>(
  o: LocalApiOptions,
  fn: (api: ApiContext, caller: Caller, session: LocalApi) => Promise<T>,
): Promise<T> {
  const s = await openLocalApi(o);
  try {
    return await fn(s.api, s.caller, s);
  } finally {
    s.close();
  }
}
