import { NamespaceQuery } from '@kpromo/contract';
import { type ClusterAccessRule, ConfigError, parseInput } from '@kpromo/controller/api';
import { type LocalApi, type LocalApiOptions, loadConfig, withLocalApi } from '@kpromo/controller/session';
import { UsageError } from './exitCodes.js';
import type { OutputFormat } from './output.js';

/** The options every command takes, as kubectl spells them. */
export interface GlobalOptions {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  allNamespaces?: boolean;
  output: OutputFormat;
  config?: string;
  /** --sync-timeout in ms: how long to wait for the Environments' workloads to be read. */
  syncTimeout?: number;
}

/**
 * Without --config, Environments may make the CLI read any context of the user's own kubeconfig,
 * and nothing else (no kubeconfig Secrets, no in-cluster account): the CLI reads with the user's own
 * credentials, so it sees no more than kubectl would. --config narrows this to a controller config's
 * clusterAccess.
 */
export const OWN_CONTEXTS: readonly ClusterAccessRule[] = [
  // Any target namespace: the CLI reads with the user's own credentials, so Kubernetes RBAC already
  // limits what it sees there.
  { namespaces: ['*'], contexts: ['*'], kubeconfigSecrets: [], inCluster: false, targetNamespaces: ['*'] },
];

/** How long answers that show running versions wait for the Environments' workloads to be read. */
const VERSIONS_WAIT_MS = 20_000;
/** How long release candidates (diff, plan create) wait for their two Environments before refusing. */
const CANDIDATES_WAIT_MS = 90_000;

export const candidatesWaitMs = (g: GlobalOptions) => g.syncTimeout ?? CANDIDATES_WAIT_MS;

export interface SessionNeeds {
  /** The answer shows running versions (apps, envs): wait a while for them, then show what is known. */
  versions?: boolean;
  /** The command lists, so --all-namespaces applies. */
  lists?: boolean;
}

/** The session a command opens, from the global options; refuses contradicting flags up front. */
export function sessionOptions(g: GlobalOptions, needs: SessionNeeds = {}): LocalApiOptions {
  if (g.allNamespaces && g.namespace) throw new UsageError('pass either --namespace or --all-namespaces, not both');
  if (g.allNamespaces && !needs.lists)
    throw new UsageError('--all-namespaces applies to apps, envs and plan list only; pass --namespace');
  const namespace = g.namespace
    ? parseInput(NamespaceQuery, { namespace: g.namespace }, 'arguments').namespace
    : undefined;
  return {
    kubeconfig: g.kubeconfig,
    context: g.context,
    ...(g.allNamespaces ? { namespaces: [] } : {}),
    defaultNamespace: namespace,
    clusterAccess: g.config ? clusterAccessOf(g.config) : OWN_CONTEXTS,
    environmentsWaitMs: needs.versions ? (g.syncTimeout ?? VERSIONS_WAIT_MS) : 0,
  };
}

function clusterAccessOf(file: string): ClusterAccessRule[] {
  try {
    return loadConfig({ file, env: {} }).clusterAccess;
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(`--config ${file}: ${e.problems.join('; ')}`);
    throw e;
  }
}

export function withSession<T>(g: GlobalOptions, needs: SessionNeeds, fn: (s: LocalApi) => Promise<T>): Promise<T> {
  return withLocalApi(sessionOptions(g, needs), (_api, _caller, s) => fn(s));
}
