import { createHash } from 'node:crypto';
import type { EntityMapping, ResourceConfig } from './config.js';
import { runJq } from './jq.js';

/** An entity in Port's shape (the generated bulk-upsert item type is structurally the same). */
export interface PortEntity {
  identifier: string;
  title?: string;
  icon?: string;
  team?: string | string[];
  properties: Record<string, unknown>;
  relations: Record<string, string | string[] | null>;
}

export interface MappedEntity {
  blueprint: string;
  entity: PortEntity;
  /** Stable hash of blueprint + entity, to skip unchanged upserts. */
  hash: string;
}

export type MapResult = { ok: true; entities: MappedEntity[] } | { ok: false; error: string };

/** Property that marks entities owned by one exporter instance. */
export const STATE_KEY_PROPERTY = 'kpromoExporterStateKey';
const ID_PATTERN = /^(?!\.{1,2}$)[\p{L}0-9@_.+:\\/=-]+$/u;

/** First output of `expr`, or null when it yields nothing (Port's mapping semantics). */
const one = (expr: string) => `([(${expr}\n)] | .[0])`;

function objectOf(fields: Record<string, string> | undefined): string {
  const parts = Object.entries(fields ?? {}).map(([k, v]) => `${JSON.stringify(k)}: ${one(v)}`);
  return `{${parts.join(', ')}}`;
}

function mappingProgram(m: EntityMapping): string {
  const fields = [
    `identifier: ${one(m.identifier)}`,
    `blueprint: ${one(m.blueprint)}`,
    m.title ? `title: ${one(m.title)}` : undefined,
    m.team ? `team: ${one(m.team)}` : undefined,
    m.icon ? `icon: ${one(m.icon)}` : undefined,
    `properties: ${objectOf(m.properties)}`,
    `relations: ${objectOf(m.relations)}`,
  ].filter(Boolean);
  return `{${fields.join(', ')}}`;
}

/**
 * One jq program mapping an array of objects at once (a jq call costs ~1 ms, so per-field calls
 * would make 10k objects take minutes). A failure in one object is caught per object.
 */
export function compileResource(res: ResourceConfig): (cluster: string) => string {
  const selector = res.selector?.query ?? 'true';
  const maps = res.port.entity.mappings.map(mappingProgram).join(', ');
  const entities = res.port.itemsToParse
    ? `[(${res.port.itemsToParse}\n)[]? as $item | (. + {item: $item}) | ${maps}]`
    : `[${maps}]`;
  const body =
    `[.[] | try (if ${one(selector)} == true then {ok: true, entities: ${entities}} else {ok: true, entities: []} end)` +
    ' catch {ok: false, error: (. | tostring)}]';
  return (cluster) => `${JSON.stringify(cluster)} as $cluster | ${body}`;
}

export function hashEntity(blueprint: string, entity: PortEntity): string {
  return createHash('sha1').update(stableJson({ blueprint, entity })).digest('base64url');
}

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

interface RawEntity {
  identifier: unknown;
  blueprint: unknown;
  title?: unknown;
  team?: unknown;
  icon?: unknown;
  properties: Record<string, unknown>;
  relations: Record<string, unknown>;
}

const isIdList = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((x) => typeof x === 'string' && ID_PATTERN.test(x));

/** Checks jq's output against what Port accepts; pure, so it is unit-tested directly. */
export function finishEntity(raw: RawEntity, stateKey: string): MappedEntity {
  if (typeof raw.identifier !== 'string' || !ID_PATTERN.test(raw.identifier) || raw.identifier.length > 1000) {
    throw new Error(`identifier ${JSON.stringify(raw.identifier)} is not a valid Port identifier`);
  }
  if (typeof raw.blueprint !== 'string' || !raw.blueprint)
    throw new Error(`blueprint ${JSON.stringify(raw.blueprint)} is not a string`);
  const entity: PortEntity = {
    identifier: raw.identifier,
    properties: { ...raw.properties, [STATE_KEY_PROPERTY]: stateKey },
    relations: {},
  };
  if (raw.title != null) entity.title = String(raw.title);
  if (raw.icon != null) entity.icon = String(raw.icon);
  if (typeof raw.team === 'string' || isIdList(raw.team)) entity.team = raw.team;
  for (const [k, v] of Object.entries(raw.relations)) {
    if (v === null || (typeof v === 'string' && ID_PATTERN.test(v)) || isIdList(v)) entity.relations[k] = v;
    else throw new Error(`relation ${k} = ${JSON.stringify(v)} is not an identifier, a list of identifiers or null`);
  }
  for (const [k, v] of Object.entries(entity.properties)) if (v === null) delete entity.properties[k];
  return { blueprint: raw.blueprint, entity, hash: hashEntity(raw.blueprint, entity) };
}

const MAP_CHUNK = 200;

/** Maps many objects of one resource; results align with `objects`. */
export async function mapObjects(program: string, objects: unknown[], stateKey: string): Promise<MapResult[]> {
  const out: Array<{ ok: boolean; entities?: RawEntity[]; error?: string }> = [];
  // Chunks keep jq's WASM heap small: it grows to the largest input and never shrinks.
  for (let i = 0; i < objects.length; i += MAP_CHUNK) {
    out.push(...((await runJq(objects.slice(i, i + MAP_CHUNK), program)) as typeof out));
  }
  return out.map((r) => {
    if (!r.ok) return { ok: false, error: r.error ?? 'mapping failed' };
    try {
      return { ok: true, entities: (r.entities ?? []).map((e) => finishEntity(e, stateKey)) };
    } catch (e) {
      return { ok: false, error: (e as Error).message };
    }
  });
}
