import type { Environment } from '@kpromo/api';
import type { ResolveDigest } from '../candidates/tagDigest.js';
import type { DeliveryMethods } from '../extension/plugin.js';
import type { CacheView } from '../kube/cacheView.js';
import type { KubeRest } from '../kube/rest.js';
import type { PersonMapping } from '../policy/persons.js';
import type { Access } from './access.js';

/** What the API functions need; shared by the HTTP server, the CLI and the MCP server. */
export interface ApiContext {
  cache: CacheView;
  /**
   * Control-cluster client (where the kpromo CRs live), as the controller itself: writes for a
   * remote caller are made with it once `access` has authorised them as that caller (the controller
   * holds no impersonation right); the admission policy accepts the actor it records only from the
   * controller. For the local CLI it is the user's own kubeconfig identity.
   */
  control: KubeRest;
  /**
   * Whether `control` is the controller's own identity (the HTTP API and MCP server): only it may
   * write what admission reserves to the controller, such as a rollback's
   * promotions.kpromo.dev/rollback-of-uid label. Absent for the local CLI.
   */
  asController?: boolean;
  /** Authorisation of every read and write as the caller. */
  access: Access;
  /** Default namespace for CRs when a call does not name one. */
  namespace: string;
  /** Custom resources (`<plural>.<group>`) POST /resources may write as the caller; none when absent. */
  resourceKinds?: readonly string[];
  /**
   * The platform's identity -> person mapping (config persons), as the controller judges approvals
   * with it; absent (the CLI): each identity is its own person, and the controller judges.
   */
  persons?: PersonMapping;
  /**
   * The namespace whose AgentPolicy with killSwitch stops every agent in every namespace (the
   * controller's line-stop namespace); unset: a kill switch stops its own namespace only.
   */
  agentKillSwitchNamespace?: string;
  /**
   * What POST /adopt scans with: a client of an Environment's cluster as the controller
   * (clusterAccess decides, as for promotions), and the delivery methods it recognises on the
   * workloads. Absent in sessions that cannot (the CLI).
   */
  adoption?: {
    environmentClient(env: Environment): Promise<KubeRest>;
    deliveryMethods: DeliveryMethods;
  };
  /**
   * Resolves a tag to a digest in an Environment's registry (with its credentials) when a workload
   * does not pin one; without it, such a workload's version is no candidate (NoDigest).
   */
  resolveDigest?: ResolveDigest;
}

export { ApiError } from './apiError.js';
