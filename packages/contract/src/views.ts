import {
  API_VERSION,
  Candidate,
  ClusterRef,
  EnvironmentVersion,
  type PromotionPlan,
  PromotionPlanSpec,
  PromotionPlanStatus,
  StringMap,
} from '@kpromo/api';
import { type Static, type TSchema, Type } from '@sinclair/typebox';

/**
 * Responses of the kpromo HTTP API, defined once (TypeBox: the TypeScript types and the JSON
 * Schemas of the OpenAPI document come from the same definitions). The CRD parts (plans,
 * candidates, versions) are the CRD schemas of @kpromo/api themselves.
 */

const ObjectMeta = Type.Object(
  {
    name: Type.String(),
    namespace: Type.Optional(Type.String()),
    uid: Type.Optional(Type.String()),
    resourceVersion: Type.Optional(Type.String()),
    generation: Type.Optional(Type.Integer()),
    creationTimestamp: Type.Optional(Type.String()),
    labels: Type.Optional(StringMap()),
    annotations: Type.Optional(StringMap()),
  },
  { description: 'Kubernetes ObjectMeta (the fields clients read).' },
);

export const PromotionPlanObject = Type.Object(
  {
    apiVersion: Type.Literal(API_VERSION),
    kind: Type.Literal('PromotionPlan'),
    metadata: ObjectMeta,
    spec: PromotionPlanSpec,
    status: Type.Optional(PromotionPlanStatus),
  },
  { $id: 'PromotionPlan', description: 'A PromotionPlan custom resource as the apiserver stores it.' },
);

export const ApplicationView = Type.Object(
  {
    namespace: Type.String(),
    name: Type.String(),
    owner: Type.String({ description: 'Owning team (spec.owner).' }),
    repository: Type.String({ description: 'Image repository (spec.image.repository).' }),
    labels: StringMap('metadata.labels and spec.labels together.'),
    versions: Type.Array(EnvironmentVersion, { description: 'What runs in every Environment of the namespace.' }),
  },
  { $id: 'ApplicationView' },
);

/** A Backstage backend answer adds the catalog entity its permissions are checked against. */
export const ApplicationInfo = Type.Composite(
  [ApplicationView, Type.Object({ entityRef: Type.String({ description: 'promotions.entityRef template result.' }) })],
  { $id: 'ApplicationInfo' },
);

export const EnvironmentView = Type.Object(
  {
    namespace: Type.String(),
    name: Type.String(),
    tier: Type.Optional(Type.String()),
    cluster: ClusterRef,
    targetNamespace: Type.String({ description: 'Namespace the applications run in (spec.namespace).' }),
    registry: Type.String({ description: 'Registry host (spec.registry.host).' }),
    delivery: Type.String({ description: 'Delivery method (spec.delivery.method).' }),
    synced: Type.Boolean({ description: "The controller's informers over the environment's cluster have synced." }),
  },
  { $id: 'EnvironmentView' },
);

export const SkippedApplication = Type.Object(
  {
    application: Type.String(),
    reason: Type.String({
      description: 'NotSelected, NoSourceVersion, SourceNotHealthy, TagPatternMismatch, UpToDate, NoDigest, …',
    }),
    message: Type.String(),
  },
  { $id: 'SkippedApplication' },
);

export const DiffResult = Type.Object(
  {
    flow: Type.String(),
    from: Type.String(),
    to: Type.String(),
    candidates: Type.Array(Candidate),
    skipped: Type.Array(SkippedApplication),
  },
  { $id: 'DiffResult' },
);

export const CreatePlanResponse = Type.Object(
  { plan: PromotionPlanObject, skipped: Type.Array(SkippedApplication) },
  { $id: 'CreatePlanResponse' },
);

/** A list answer; `continue` is set when there are more (pass it back as the `continue` query). */
export const ListOf = <T extends TSchema>(item: T, id: string) =>
  Type.Object(
    {
      items: Type.Array(item),
      continue: Type.Optional(Type.String({ description: 'Token for the next page; absent on the last page.' })),
      total: Type.Optional(Type.Integer({ minimum: 0, description: 'Items matching the filters, over all pages.' })),
    },
    { $id: id },
  );

export const ApplicationList = ListOf(ApplicationView, 'ApplicationList');
export const ApplicationInfoList = ListOf(ApplicationInfo, 'ApplicationInfoList');
export const EnvironmentList = ListOf(EnvironmentView, 'EnvironmentList');
export const PlanList = ListOf(PromotionPlanObject, 'PlanList');

/** The controller's error body. */
export const ErrorBody = Type.Object({ error: Type.String() }, { $id: 'Error' });

/** The Backstage backend's error body (Backstage's serialised error). */
export const BackstageErrorBody = Type.Object(
  {
    error: Type.Object({ name: Type.String(), message: Type.String() }),
    response: Type.Optional(Type.Object({ statusCode: Type.Integer() })),
  },
  { $id: 'BackstageError' },
);

export type ApplicationView = Static<typeof ApplicationView>;
export type ApplicationInfo = Static<typeof ApplicationInfo>;
export type EnvironmentView = Static<typeof EnvironmentView>;
export type SkippedApplication = Static<typeof SkippedApplication>;
export type DiffResult = Static<typeof DiffResult>;
export interface CreatePlanResponse {
  plan: PromotionPlan;
  skipped: SkippedApplication[];
}
export interface ListResponse<T> {
  items: T[];
  continue?: string;
  total?: number;
}
