import type { API_VERSION } from './group.js';
import type { AgentPolicySpec, AgentPolicyStatus } from './resources/agentPolicy.js';
import type { ApplicationSpec, ApplicationStatus } from './resources/application.js';
import type { EnvironmentSpec, EnvironmentStatus } from './resources/environment.js';
import type { LineStopSpec, LineStopStatus } from './resources/lineStop.js';
import type { NotificationSpec, NotificationStatus } from './resources/notification.js';
import type { OrgPolicySpec, OrgPolicyStatus } from './resources/orgPolicy.js';
import type { PromotionFlowSpec, PromotionFlowStatus } from './resources/promotionFlow.js';
import type { PromotionPlanSpec, PromotionPlanStatus } from './resources/promotionPlan.js';

/** The subset of ObjectMeta the project reads and writes. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }>;
  finalizers?: string[];
}

export interface KpromoObject<K extends string, Spec, Status> {
  apiVersion: typeof API_VERSION;
  kind: K;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
}

export type Application = KpromoObject<'Application', ApplicationSpec, ApplicationStatus>;
export type Environment = KpromoObject<'Environment', EnvironmentSpec, EnvironmentStatus>;
export type PromotionFlow = KpromoObject<'PromotionFlow', PromotionFlowSpec, PromotionFlowStatus>;
export type PromotionPlan = KpromoObject<'PromotionPlan', PromotionPlanSpec, PromotionPlanStatus>;
export type Notification = KpromoObject<'Notification', NotificationSpec, NotificationStatus>;
export type LineStop = KpromoObject<'LineStop', LineStopSpec, LineStopStatus>;
export type OrgPolicy = KpromoObject<'OrgPolicy', OrgPolicySpec, OrgPolicyStatus>;
export type AgentPolicy = KpromoObject<'AgentPolicy', AgentPolicySpec, AgentPolicyStatus>;
export type AnyKpromoObject =
  | Application
  | Environment
  | PromotionFlow
  | PromotionPlan
  | Notification
  | LineStop
  | OrgPolicy
  | AgentPolicy;
export type KpromoKind = AnyKpromoObject['kind'];
