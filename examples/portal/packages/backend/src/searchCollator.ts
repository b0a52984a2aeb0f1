// Search collator for kpromo: applications (versions and health per environment), environments and
// promotion plans become documents of type `kpromo` (one per object: the catalog collator leaves the
// catalog entities of these objects to it, see dropIndexedByKpromo), read through the promotions backend
// (/api/promotions) with the search plugin's own service token. The backend checks Backstage
// permissions, then calls the controller as `service:plugin:search`, which Kubernetes RBAC lets read
// (and nothing else; scripts/start.ts grants it). Results are shown only to users who hold
// promotion.plan.read (visibilityPermission).
import { Readable, Transform } from 'node:stream';
import {
  type AuthService,
  coreServices,
  createBackendModule,
  type DiscoveryService,
  readSchedulerServiceTaskScheduleDefinitionFromConfig,
} from '@backstage/backend-plugin-api';
import { type Entity, parseEntityRef } from '@backstage/catalog-model';
import {
  type CatalogCollatorEntityTransformer,
  catalogCollatorExtensionPoint,
  defaultCatalogCollatorEntityTransformer,
} from '@backstage/plugin-search-backend-module-catalog';
import { searchIndexRegistryExtensionPoint } from '@backstage/plugin-search-backend-node/alpha';
import type {
  DocumentCollatorFactory,
  DocumentDecoratorFactory,
  IndexableDocument,
} from '@backstage/plugin-search-common';
import { ANNOTATION } from '@kpromo/plugin-catalog-backend-module-promotions';
import {
  type ApplicationInfo,
  type EnvironmentInfo,
  type ListResponse,
  type PromotionPlan,
  promotionPlanReadPermission,
} from '@kpromo/plugin-promotions-common';

export interface KpromoDocument extends IndexableDocument {
  kind: 'Application' | 'Environment' | 'PromotionPlan';
  namespace: string;
  owner?: string;
  phase?: string;
}

/** Where the catalog shows an entity, as the catalog collator links it. */
const entityPath = (ref: string) => {
  const e = parseEntityRef(ref);
  return `/catalog/${e.namespace}/${e.kind.toLowerCase()}/${e.name}`;
};

const version = (v: { tag?: string; digest?: string }) => v.tag ?? (v.digest ? v.digest.slice(7, 19) : 'unknown');

export function applicationDocument(a: ApplicationInfo): KpromoDocument {
  return {
    kind: 'Application',
    title: a.name,
    text: [
      `Application ${a.name} owned by ${a.owner}, image ${a.repository}.`,
      ...a.versions.map((v) => `${v.environment}: ${version(v)} (${v.health})`),
    ].join(' '),
    location: entityPath(a.entityRef),
    namespace: a.namespace,
    owner: a.owner,
  };
}

export function environmentDocument(e: EnvironmentInfo): KpromoDocument {
  return {
    kind: 'Environment',
    title: e.name,
    text: `Environment ${e.name}${e.tier ? ` (${e.tier})` : ''}: namespace ${e.targetNamespace}, registry ${e.registry}, delivery ${e.delivery}.`,
    location: `/catalog/default/resource/${e.name}`,
    namespace: e.namespace,
  };
}

export function planDocument(p: PromotionPlan): KpromoDocument {
  const ns = p.metadata.namespace ?? 'default';
  const rollback = p.spec.action === 'rollback';
  const apps = rollback
    ? (p.status?.apps ?? []).map((a) => `${a.application} ${a.previous?.tag ?? '?'} → ${a.targetTag ?? '?'}`)
    : p.spec.candidates.map((c) => `${c.application} ${c.to?.tag ?? 'not deployed'} → ${c.from.tag}`);
  const approvers = (p.spec.approvals ?? []).map((a) => a.user);
  return {
    kind: 'PromotionPlan',
    title: p.metadata.name,
    text: [
      rollback ? `Rollback of ${p.spec.rollbackOf} in ${p.spec.to}.` : `Promotion ${p.spec.from} → ${p.spec.to}.`,
      `Flow ${p.spec.flow}, phase ${p.status?.phase ?? 'Pending'}.`,
      apps.length ? `${apps.join(', ')}.` : '',
      p.spec.requestedBy ? `Requested by ${p.spec.requestedBy}.` : '',
      approvers.length ? `Approved by ${approvers.join(', ')}.` : '',
    ]
      .filter(Boolean)
      .join(' '),
    location: `/promotions/plans/${encodeURIComponent(ns)}/${encodeURIComponent(p.metadata.name)}`,
    namespace: ns,
    phase: p.status?.phase ?? 'Pending',
  };
}

export class KpromoCollatorFactory implements DocumentCollatorFactory {
  readonly type = 'kpromo';
  readonly visibilityPermission = promotionPlanReadPermission;

  constructor(private readonly deps: { discovery: DiscoveryService; auth: AuthService }) {}

  async getCollator(): Promise<Readable> {
    return Readable.from(this.documents());
  }

  private async get<T>(path: string): Promise<T> {
    const base = await this.deps.discovery.getBaseUrl('promotions');
    const { token } = await this.deps.auth.getPluginRequestToken({
      onBehalfOf: await this.deps.auth.getOwnServiceCredentials(),
      targetPluginId: 'promotions',
    });
    const res = await fetch(`${base}${path}`, { headers: { Authorization: `Bearer ${token}` } });
    if (!res.ok) throw new Error(`GET /api/promotions${path} answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as T;
  }

  async *documents(): AsyncGenerator<KpromoDocument> {
    let next: string | undefined;
    do {
      const page = await this.get<ListResponse<ApplicationInfo>>(
        `/applications?limit=200${next ? `&continue=${encodeURIComponent(next)}` : ''}`,
      );
      for (const a of page.items) yield applicationDocument(a);
      next = page.continue;
    } while (next);
    for (const e of (await this.get<ListResponse<EnvironmentInfo>>('/environments')).items)
      yield environmentDocument(e);
    for (const p of (await this.get<ListResponse<PromotionPlan>>('/plans')).items) yield planDocument(p);
  }
}

// One hit per object. The catalog collator indexes every catalog entity, and kpromo's catalog module
// makes an entity of every Application, Environment and PromotionPlan, which this collator indexes
// too (with versions, health and phase): without the two pieces below, search showed each of them
// twice. The catalog collator's transformer marks the entities of the kinds this collator indexes
// (by the kpromo.dev/kind annotation the catalog module writes), and a decorator of the catalog's
// documents leaves the marked ones out. Other entities, PromotionFlows included, stay as they were.

/** The kpromo kinds this collator indexes itself. */
export const KPROMO_INDEXED_KINDS: ReadonlySet<string> = new Set<KpromoDocument['kind']>([
  'Application',
  'Environment',
  'PromotionPlan',
]);
const MARK = 'kpromoIndexedAs';

/** The catalog's document of an entity, marked when this collator indexes the object it stands for. */
export const markIndexedByKpromo: CatalogCollatorEntityTransformer = (entity: Entity) => {
  const kind = entity.metadata.annotations?.[ANNOTATION.kind];
  const doc = defaultCatalogCollatorEntityTransformer(entity);
  return kind && KPROMO_INDEXED_KINDS.has(kind) ? { ...doc, [MARK]: kind } : doc;
};

/** Whether a catalog document stands for an object this collator indexes (and is to be left out). */
export const indexedByKpromo = (doc: object) => MARK in doc;

/** Leaves the catalog's documents of kpromo objects out of the software-catalog index. */
export class DropIndexedByKpromo implements DocumentDecoratorFactory {
  readonly types = ['software-catalog'];
  async getDecorator(): Promise<Transform> {
    return new Transform({
      objectMode: true,
      transform(doc: IndexableDocument, _enc, done) {
        if (!indexedByKpromo(doc)) this.push(doc);
        done();
      },
    });
  }
}

/** Registers the kpromo collator with the search plugin; schedule from `kpromo.search.schedule`. */
export default createBackendModule({
  pluginId: 'search',
  moduleId: 'kpromo-collator',
  register(reg) {
    reg.registerInit({
      deps: {
        config: coreServices.rootConfig,
        discovery: coreServices.discovery,
        auth: coreServices.auth,
        scheduler: coreServices.scheduler,
        indexRegistry: searchIndexRegistryExtensionPoint,
        catalogCollator: catalogCollatorExtensionPoint,
      },
      async init({ config, discovery, auth, scheduler, indexRegistry, catalogCollator }) {
        catalogCollator.setEntityTransformer(markIndexedByKpromo);
        indexRegistry.addDecorator({ factory: new DropIndexedByKpromo() });
        const schedule = config.has('kpromo.search.schedule')
          ? readSchedulerServiceTaskScheduleDefinitionFromConfig(config.getConfig('kpromo.search.schedule'))
          : { frequency: { minutes: 10 }, timeout: { minutes: 5 }, initialDelay: { seconds: 30 } };
        indexRegistry.addCollator({
          schedule: scheduler.createScheduledTaskRunner(schedule),
          factory: new KpromoCollatorFactory({ discovery, auth }),
        });
      },
    });
  },
});
