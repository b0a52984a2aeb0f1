import type { TSchema } from '@sinclair/typebox';
import { GROUP, VERSION } from './group.js';
import { AgentPolicySpec, AgentPolicyStatus } from './resources/agentPolicy.js';
import { ApplicationSpec, ApplicationStatus } from './resources/application.js';
import { EnvironmentSpec, EnvironmentStatus } from './resources/environment.js';
import { LineStopSpec, LineStopStatus } from './resources/lineStop.js';
import { NotificationSpec, NotificationStatus } from './resources/notification.js';
import { OrgPolicySpec, OrgPolicyStatus } from './resources/orgPolicy.js';
import { PromotionFlowSpec, PromotionFlowStatus } from './resources/promotionFlow.js';
import { PromotionPlanSpec, PromotionPlanStatus } from './resources/promotionPlan.js';
import type { KpromoKind } from './types.js';

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface ResourceDefinition {
  kind: KpromoKind;
  plural: string;
  singular: string;
  shortNames: string[];
  spec: TSchema;
  status: TSchema;
  printerColumns: PrinterColumn[];
  description: string;
}

const readyColumn: PrinterColumn = {
  name: 'Ready',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
};
const ageColumn: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

export const RESOURCES: Record<KpromoKind, ResourceDefinition> = {
  Application: {
    kind: 'Application',
    plural: 'applications',
    singular: 'application',
    shortNames: ['papp'],
    spec: ApplicationSpec,
    status: ApplicationStatus,
    description: 'A deployable service: its image repository, workloads, health checks and owner.',
    printerColumns: [
      { name: 'Owner', type: 'string', jsonPath: '.spec.owner' },
      { name: 'Repository', type: 'string', jsonPath: '.spec.image.repository' },
      readyColumn,
      ageColumn,
    ],
  },
  Environment: {
    kind: 'Environment',
    plural: 'environments',
    singular: 'environment',
    shortNames: ['penv'],
    spec: EnvironmentSpec,
    status: EnvironmentStatus,
    description: 'A cluster + namespace + registry + delivery method that applications are promoted into.',
    printerColumns: [
      { name: 'Tier', type: 'string', jsonPath: '.spec.tier' },
      { name: 'Namespace', type: 'string', jsonPath: '.spec.namespace' },
      { name: 'Delivery', type: 'string', jsonPath: '.spec.delivery.method' },
      { name: 'Registry', type: 'string', jsonPath: '.spec.registry.host', priority: 1 },
      readyColumn,
      ageColumn,
    ],
  },
  PromotionFlow: {
    kind: 'PromotionFlow',
    plural: 'promotionflows',
    singular: 'promotionflow',
    shortNames: ['pflow'],
    spec: PromotionFlowSpec,
    status: PromotionFlowStatus,
    description: 'The ordered environments a set of applications is promoted through, and the rules for it.',
    printerColumns: [
      { name: 'Approval', type: 'string', jsonPath: '.spec.approval' },
      { name: 'Pending', type: 'integer', jsonPath: '.status.pendingCandidates' },
      readyColumn,
      ageColumn,
    ],
  },
  PromotionPlan: {
    kind: 'PromotionPlan',
    plural: 'promotionplans',
    singular: 'promotionplan',
    shortNames: ['pplan'],
    spec: PromotionPlanSpec,
    status: PromotionPlanStatus,
    description: 'Release candidates from one environment to the next; approving it promotes them.',
    printerColumns: [
      { name: 'Flow', type: 'string', jsonPath: '.spec.flow' },
      { name: 'From', type: 'string', jsonPath: '.spec.from' },
      { name: 'To', type: 'string', jsonPath: '.spec.to' },
      { name: 'Approved', type: 'boolean', jsonPath: '.status.gate.approved' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Succeeded', type: 'integer', jsonPath: '.status.succeeded', priority: 1 },
      { name: 'Failed', type: 'integer', jsonPath: '.status.failed', priority: 1 },
      ageColumn,
    ],
  },
  Notification: {
    kind: 'Notification',
    plural: 'notifications',
    singular: 'notification',
    shortNames: ['pnotif'],
    spec: NotificationSpec,
    status: NotificationStatus,
    description: 'A webhook that receives release events.',
    printerColumns: [
      { name: 'Delivered', type: 'integer', jsonPath: '.status.delivered' },
      { name: 'Failed', type: 'integer', jsonPath: '.status.failed' },
      readyColumn,
      ageColumn,
    ],
  },
  LineStop: {
    kind: 'LineStop',
    plural: 'linestops',
    singular: 'linestop',
    shortNames: ['pstop'],
    spec: LineStopSpec,
    status: LineStopStatus,
    description:
      'Stops the line: while it exists no plan starts and running plans start no further app (in its namespace, or everywhere for scope AllNamespaces in the line-stop namespace). Delete it to lift the stop.',
    printerColumns: [
      { name: 'Scope', type: 'string', jsonPath: '.spec.scope' },
      { name: 'Stopped-By', type: 'string', jsonPath: '.spec.stoppedBy' },
      { name: 'Reason', type: 'string', jsonPath: '.spec.reason' },
      ageColumn,
    ],
  },
  OrgPolicy: {
    kind: 'OrgPolicy',
    plural: 'orgpolicies',
    singular: 'orgpolicy',
    shortNames: ['porg'],
    spec: OrgPolicySpec,
    status: OrgPolicyStatus,
    description:
      "Org-level gates: platform-wide minimums (approvals, four eyes, verification, soak, signatures, freeze windows) every flow's stage into a selected Environment inherits. Honoured only in the controller's orgPolicyNamespace.",
    printerColumns: [{ name: 'Rules', type: 'string', jsonPath: '.spec.rules[*].name' }, ageColumn],
  },
  AgentPolicy: {
    kind: 'AgentPolicy',
    plural: 'agentpolicies',
    singular: 'agentpolicy',
    shortNames: ['pagent'],
    spec: AgentPolicySpec,
    status: AgentPolicyStatus,
    description:
      'What agents (identities the controller config marks as agents) may do alone in this namespace: operations per environment, limits, time windows, and a kill switch. Without one, an agent may only read.',
    printerColumns: [
      { name: 'Agents', type: 'string', jsonPath: '.spec.agents' },
      { name: 'Kill-Switch', type: 'boolean', jsonPath: '.spec.killSwitch' },
      ageColumn,
    ],
  },
};

export const KINDS = Object.keys(RESOURCES) as KpromoKind[];

/** TypeBox attaches symbol keys; JSON round-trip leaves the plain OpenAPI schema the apiserver wants. */
export function plainSchema(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/** The full openAPIV3Schema for one kind: spec required, status as a subresource. */
export function openApiSchema(def: ResourceDefinition): Record<string, unknown> {
  return {
    type: 'object',
    description: def.description,
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec: plainSchema(def.spec),
      status: plainSchema(def.status),
    },
  };
}

export function crdManifest(def: ResourceDefinition): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: ['kpromo'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.printerColumns,
          schema: { openAPIV3Schema: openApiSchema(def) },
        },
      ],
    },
  };
}

export function allCrdManifests(): Record<string, unknown>[] {
  return KINDS.map((k) => crdManifest(RESOURCES[k]));
}
