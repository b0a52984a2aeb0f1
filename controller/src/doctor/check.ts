import type * as k8s from '@kubernetes/client-node';
import type { JwtAuthenticatorConfig } from '../auth/config.js';
import type { DeliveryMethods } from '../extension/plugin.js';
import type { ClusterAccessRule } from '../kube/clusterAccess.js';
import type { KubeRest } from '../kube/rest.js';
import type { McpConfig } from '../mcp/config.js';
import type { Egress } from '../net/guardedFetch.js';

/** A problem with the options (exit 2 in the CLI). */
export class DoctorUsageError extends Error {
  override name = 'DoctorUsageError';
}

/** One line of `kpromo doctor`: what was checked, how it went, and what to do about it. */
export interface CheckResult {
  check: string;
  status: 'pass' | 'warn' | 'fail';
  subject: string;
  message: string;
  /** The command or change that fixes it (fail and warn only). */
  fix?: string;
}

/** What every check may use: the caller's clients (their RBAC), the namespace, the controller's config. */
export interface DoctorContext {
  /** The control cluster as the caller. */
  control: KubeRest;
  namespace: string;
  /** The caller's kubeconfig (to reach Environment clusters by context). */
  kubeconfig: k8s.KubeConfig;
  clientFor(context: string): KubeRest | undefined;
  /** The delivery methods whose checks (`diagnose`) check `delivery` runs, by `spec.delivery.method`. */
  deliveryMethods: DeliveryMethods;
  /** From the controller config (`--config`), when given. */
  clusterAccess?: readonly ClusterAccessRule[];
  lease?: { namespace: string; name: string; durationSeconds: number };
  /** The controller config's MCP endpoint and trusted JWT issuers (`--config`), when given. */
  mcp?: { config: McpConfig; jwt: JwtAuthenticatorConfig[] };
  /**
   * What the controller config (`--config`) says it reconciles: its `namespaces` (empty: every
   * namespace) or its shard's namespace selector. Absent: the namespace given.
   */
  reconciled?: { namespaces: readonly string[]; shardSelector?: string };
  /**
   * The controller's own ServiceAccount (`--controller-service-account`): the identity the admission
   * policies' parameter must list; left out of the RBAC check.
   */
  controllerServiceAccount?: { namespace: string; name: string };
  egress: Egress;
  now(): Date;
}

/** A check: a small module with one job, registered in checks.ts. */
export interface DoctorCheck {
  id: string;
  title: string;
  run(ctx: DoctorContext): Promise<CheckResult[]>;
}

export { why } from '../util/errors.js';
