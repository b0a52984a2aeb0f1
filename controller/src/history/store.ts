import type { HistoryEntry } from '@kpromo/contract';
import { type ResourceType, resourcePath } from '../kube/paths.js';
import { isConflict, isNotFound, type KubeRest } from '../kube/rest.js';
import {
  DEFAULT_RETENTION,
  DROPPED_ANNOTATION,
  decodeSegment,
  ENVIRONMENT_ANNOTATION,
  HISTORY_LABEL,
  MONTH_ANNOTATION,
  monthExpired,
  monthOf,
  type Retention,
  type SegmentConfigMap,
  segmentName,
  upsertSegment,
} from './segments.js';

const CONFIGMAP: ResourceType = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' };
/** Reads within this long reuse the last listing (a scrape and a page of the portal in the same second). */
const READ_TTL_MS = 5_000;
/** Optimistic-concurrency retries of one segment write (another replica or writer raced us). */
const WRITE_ATTEMPTS = 5;
/** Segments whose last write this store remembers, to write the next without reading first. */
const MAX_WRITTEN_SEGMENTS = 32;

export interface RecordResult {
  /** Keys recorded for the first time. */
  added: string[];
  /** Segments written. */
  written: number;
}

/**
 * The history log in ConfigMaps (segments.ts), read and written as the controller. Writes are
 * read-modify-write with the ConfigMap's resourceVersion (a conflict re-reads and retries), and
 * idempotent: recording an entry again changes nothing.
 */
export class HistoryStore {
  private readonly cache = new Map<string, { at: number; entries: Promise<HistoryEntry[]> }>();
  /**
   * The segments as this store last wrote them (the apiserver's answer, with its resourceVersion):
   * a plan's apps finish one after another and each write would otherwise read the segment first.
   * Someone else's write makes ours conflict, and we read it again.
   */
  private readonly written = new Map<string, SegmentConfigMap>();

  constructor(
    private readonly control: KubeRest,
    readonly retention: Retention = DEFAULT_RETENTION,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private async list(namespace: string): Promise<SegmentConfigMap[]> {
    const l = await this.control.request<{ items: SegmentConfigMap[] }>('GET', resourcePath(CONFIGMAP, namespace), {
      query: { labelSelector: `${HISTORY_LABEL}=true` },
    });
    return l.items;
  }

  /** Every entry logged in `namespace` (all environments and months). */
  read(namespace: string): Promise<HistoryEntry[]> {
    const hit = this.cache.get(namespace);
    if (hit && Date.now() - hit.at < READ_TTL_MS) return hit.entries;
    const entries = this.list(namespace).then((cms) => cms.flatMap(decodeSegment));
    this.cache.set(namespace, { at: Date.now(), entries });
    entries.catch(() => this.cache.delete(namespace));
    return entries;
  }

  /** Upserts entries of one namespace into their segments (environment, month of finishedAt). */
  async record(namespace: string, entries: readonly HistoryEntry[]): Promise<RecordResult> {
    const groups = new Map<string, { environment: string; month: string; entries: HistoryEntry[] }>();
    for (const e of entries) {
      const month = monthOf(e.finishedAt);
      const name = segmentName(e.environment, month);
      const g = groups.get(name) ?? { environment: e.environment, month, entries: [] };
      g.entries.push(e);
      groups.set(name, g);
    }
    const out: RecordResult = { added: [], written: 0 };
    try {
      for (const [name, g] of groups) {
        const r = await this.writeSegment(namespace, name, g.environment, g.month, g.entries);
        out.added.push(...r.added);
        if (r.written) out.written++;
      }
    } finally {
      this.cache.delete(namespace);
    }
    return out;
  }

  private async writeSegment(
    namespace: string,
    name: string,
    environment: string,
    month: string,
    entries: HistoryEntry[],
  ): Promise<{ added: string[]; written: boolean }> {
    const path = resourcePath(CONFIGMAP, namespace, name);
    for (let attempt = 1; ; attempt++) {
      const cm = this.written.get(path) ?? (await this.control.getOrUndefined<SegmentConfigMap>(path));
      const existing = cm ? decodeSegment(cm) : [];
      const u = upsertSegment(existing, entries, this.retention, this.now());
      if (!u.changed) return { added: [], written: false };
      const dropped = Number(cm?.metadata.annotations?.[DROPPED_ANNOTATION] ?? 0) + u.dropped;
      const body: SegmentConfigMap & { apiVersion: string; kind: string } = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name,
          namespace,
          ...(cm?.metadata.resourceVersion ? { resourceVersion: cm.metadata.resourceVersion } : {}),
          labels: { ...(cm?.metadata.labels ?? {}), [HISTORY_LABEL]: 'true', 'app.kubernetes.io/managed-by': 'kpromo' },
          annotations: {
            ...(cm?.metadata.annotations ?? {}),
            [ENVIRONMENT_ANNOTATION]: environment,
            [MONTH_ANNOTATION]: month,
            ...(dropped ? { [DROPPED_ANNOTATION]: String(dropped) } : {}),
          },
        },
        data: u.data,
      };
      try {
        const saved = cm
          ? await this.control.put<SegmentConfigMap>(path, body)
          : await this.control.create<SegmentConfigMap>(resourcePath(CONFIGMAP, namespace), body);
        this.remember(path, saved);
        return { added: u.added, written: true };
      } catch (e) {
        this.written.delete(path);
        // 409: changed since we read it (update) or created meanwhile (create); 404: deleted since
        // we wrote it. Read again.
        if ((isConflict(e) || (cm && isNotFound(e))) && attempt < WRITE_ATTEMPTS) continue;
        throw new Error(`history ConfigMap ${namespace}/${name} (environment ${environment}): ${(e as Error).message}`);
      }
    }
  }

  private remember(path: string, cm: SegmentConfigMap) {
    this.written.delete(path);
    this.written.set(path, cm);
    while (this.written.size > MAX_WRITTEN_SEGMENTS) this.written.delete(this.written.keys().next().value as string);
  }

  /** Deletes the segments of months that ended before the retention cutoff; returns their names. */
  async prune(namespace: string): Promise<string[]> {
    const gone: string[] = [];
    for (const cm of await this.list(namespace)) {
      const month = cm.metadata.annotations?.[MONTH_ANNOTATION];
      if (!month || !monthExpired(month, this.retention, this.now())) continue;
      const path = resourcePath(CONFIGMAP, namespace, cm.metadata.name);
      this.written.delete(path);
      await this.control.delete(path).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
      gone.push(cm.metadata.name);
    }
    if (gone.length) this.cache.delete(namespace);
    return gone;
  }
}

const stores = new WeakMap<KubeRest, HistoryStore>();

/**
 * The store over a control-cluster client: one per client, so the recorder's writes and the API's
 * reads share the read cache. `retention` applies when the store is first made (the recorder's wiring).
 */
export function historyStore(control: KubeRest, retention?: Retention): HistoryStore {
  let s = stores.get(control);
  if (!s) {
    s = new HistoryStore(control, retention);
    stores.set(control, s);
  }
  return s;
}
