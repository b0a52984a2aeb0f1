import { createHash } from 'node:crypto';
import type { ConfigDialect, EntityMapping, JqTree, ResourceConfig } from './config.js';
import { jqEnvironment, loadJq, prelude, runJqSync } from './jq.js';
import { withReadModel } from './readModel.js';

/**
 * An entity in Port's shape with string identifiers, teams and relations: what every sink gets
 * (the Backstage provider included). Parts given as search queries are left out of this view and
 * sent to Port from `MappedEntity.request`.
 */
export interface PortEntity {
  identifier: string;
  title?: string;
  icon?: string;
  team?: string | string[];
  properties: Record<string, unknown>;
  relations: Record<string, string | string[] | null>;
}

/** A search query as Port accepts it for an identifier, team or relation (`{combinator, rules}`). */
export type SearchQuery = Record<string, unknown>;

/** The entity as sent to Port: identifier, team and relations may be search queries. */
export interface PortEntityRequest {
  identifier: string | SearchQuery;
  title?: string;
  icon?: string;
  team?: string | string[] | SearchQuery;
  properties: Record<string, unknown>;
  relations: Record<string, unknown>;
}

export interface MappedEntity {
  blueprint: string;
  entity: PortEntity;
  /** What Port is sent when it differs from `entity` (search queries in identifier, team or relations). */
  request?: PortEntityRequest;
  /** Stable hash of blueprint + what is sent, to skip unchanged upserts. */
  hash: string;
}

export type MapResult = { ok: true; entities: MappedEntity[] } | { ok: false; error: string };

/** Property that marks entities owned by one exporter instance (kpromo dialect only). */
export const STATE_KEY_PROPERTY = 'kpromoExporterStateKey';
const ID_PATTERN = /^(?!\.{1,2}$)[\p{L}0-9@_.+:\\/=-]+$/u;

export interface MapOptions {
  stateKey: string;
  /** kpromo (default): drop null properties, add the state-key property. port-k8s-exporter: send as mapped. */
  dialect?: ConfigDialect;
}

/** One jq field result: a first output, no output, or an error. */
type Field = { v: unknown } | { n: 1 } | { e: string };

/** A resource's mappings compiled into one jq program over an array of objects. */
export interface CompiledResource {
  program: string;
  resource: ResourceConfig;
}

const blank = (s: string | undefined): s is undefined => s === undefined || s.trim() === '';

/** The jq leaves of one mapping, in the order `finishMapping` consumes them. */
function mappingLeaves(m: EntityMapping): string[] {
  const out: string[] = [];
  const tree = (t: JqTree) => {
    if (typeof t === 'string') out.push(t);
    else if (Array.isArray(t)) for (const x of t) tree(x);
    else for (const k of treeKeys(t)) tree(t[k]);
  };
  tree(m.identifier);
  if (!blank(m.title)) out.push(m.title);
  out.push(m.blueprint);
  if (m.team !== undefined && m.team !== '') tree(m.team);
  if (!blank(m.icon)) out.push(m.icon);
  const props = m.properties ?? {};
  for (const k of propertyKeys(props)) out.push(props[k]);
  tree(m.relations ?? {});
  return out;
}

/** `"*"` first, so explicitly mapped keys win over the merged ones. */
const propertyKeys = (p: Record<string, unknown>) =>
  Object.keys(p).sort((a, b) => (a === '*' ? -1 : b === '*' ? 1 : 0));
const treeKeys = (t: Record<string, unknown>) => propertyKeys(t);

/**
 * Compiles a resource into one jq program mapping an array of objects (one jq call per batch:
 * compiling is jq's main cost). Per object it yields, for the selector, `itemsToParse` and every
 * mapping expression, the expression's first output, `{n}` when it has none, or `{e}` when it
 * raised an error; `finishObject` then applies Port's rules to those results.
 */
export function compileResource(
  res: ResourceConfig,
  env: Record<string, string> = jqEnvironment(),
): (cluster: string) => CompiledResource {
  const f = (e: string) => `_f(${e}\n)`;
  const selector = res.selector?.query;
  const maps = res.port.entity.mappings.map((m) => `[${mappingLeaves(m).map(f).join(', ')}]`).join(', ');
  const body = blank(selector)
    ? `{m: [${maps}]}`
    : `(${f(selector)}) as $s | if $s.v == true then {s: $s, m: [${maps}]} else {s: $s} end`;
  const name = blank(res.port.itemsToParseName) ? 'item' : res.port.itemsToParseName;
  const perObject = blank(res.port.itemsToParse)
    ? `{i: [${body}]}`
    : `(${f(res.port.itemsToParse)}) as $it | if ($it | has("v")) and ($it.v | type) == "array" ` +
      `then {i: [$it.v[] as $x | (. + {${JSON.stringify(name)}: $x}) | ${body}]} else {ie: $it} end`;
  const head =
    `${prelude(env)}` +
    'def _f(f): try ([first(f)] | if length == 0 then {n: 1} else {v: .[0]} end) catch {e: tostring};\n';
  const main = `[.[] | try (${perObject}) catch {x: tostring}]`;
  return (cluster) => ({ program: `${head}${JSON.stringify(cluster)} as $cluster |\n${main}`, resource: res });
}

export function hashEntity(blueprint: string, entity: unknown): string {
  return createHash('sha1').update(stableJson({ blueprint, entity })).digest('base64url');
}

export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
const show = (v: unknown) => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
};
/** Port trims every leading and trailing `"` of string results (pkg/jq/parser.go, trimJQStringLiteral). */
const trimQuotes = (s: string) => s.replace(/^"+|"+$/g, '');
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

class FieldReader {
  private i = 0;
  constructor(private readonly fields: Field[]) {}
  /** The next field's value; no output and errors fail the object (runJQQuery's rules). */
  any(what: string): unknown {
    const r = this.fields[this.i++];
    if (!r) throw new Error(`${what}: no result`);
    if ('e' in r) throw new Error(`${what}: ${r.e}`);
    if ('n' in r) throw new Error(`${what}: the jq expression produced no output`);
    return r.v;
  }
  /** ParseString: a string, quotes trimmed. */
  string(what: string): string {
    const v = this.any(what);
    if (typeof v !== 'string') throw new Error(`${what}: string expected, got ${typeName(v)} ${show(v)}`);
    return trimQuotes(v);
  }
  /** ParseStringOrStringArray. */
  stringOrList(what: string): string | string[] {
    const v = this.any(what);
    if (typeof v === 'string') return trimQuotes(v);
    if (Array.isArray(v)) {
      return v.map((x, i) => {
        if (typeof x !== 'string') throw new Error(`${what}: element ${i} is ${typeName(x)}, strings expected`);
        return trimQuotes(x);
      });
    }
    throw new Error(`${what}: string or array of strings expected, got ${typeName(v)} ${show(v)}`);
  }
  /** ParseMapRecursively over a tree: leaves evaluated, `"*"` merges an object result. */
  tree(t: JqTree, what: string): unknown {
    if (typeof t === 'string') return this.any(what);
    if (Array.isArray(t)) return t.map((x, i) => this.tree(x, `${what}.${i}`));
    const out: Record<string, unknown> = {};
    for (const k of treeKeys(t)) {
      const v = this.tree(t[k], `${what}.${k}`);
      if (k === '*' && typeof t[k] === 'string' && isObject(v)) Object.assign(out, v);
      else out[k] = v;
    }
    return out;
  }
}

const isIdList = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((x) => typeof x === 'string' && ID_PATTERN.test(x));

/** Applies Port's field rules to one mapping's jq results (pkg/port/entity/entity.go, newEntityRequest). */
function finishMapping(m: EntityMapping, fields: Field[], o: MapOptions): MappedEntity {
  const r = new FieldReader(fields);
  const identifier = typeof m.identifier === 'string' ? r.string('identifier') : r.tree(m.identifier, 'identifier');
  const title = blank(m.title) ? undefined : r.string('title');
  const blueprint = r.string('blueprint');
  const team =
    m.team === undefined || m.team === ''
      ? undefined
      : typeof m.team === 'string'
        ? r.stringOrList('team')
        : r.tree(m.team, 'team');
  const icon = blank(m.icon) ? undefined : r.string('icon');
  const properties: Record<string, unknown> = {};
  for (const k of propertyKeys(m.properties ?? {})) {
    const v = r.any(`properties.${k}`);
    if (k === '*' && isObject(v)) Object.assign(properties, v);
    else properties[k] = v;
  }
  const relations = r.tree(m.relations ?? {}, 'relations') as Record<string, unknown>;
  return finishEntity({ identifier, blueprint, title, team, icon, properties, relations }, o);
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

/** Checks a mapped entity against what Port accepts and shapes it; pure, so it is unit-tested directly. */
export function finishEntity(raw: RawEntity, opts: MapOptions | string): MappedEntity {
  const o: MapOptions = typeof opts === 'string' ? { stateKey: opts } : opts;
  const kpromo = (o.dialect ?? 'kpromo') === 'kpromo';
  if (typeof raw.blueprint !== 'string' || !raw.blueprint)
    throw new Error(`blueprint ${JSON.stringify(raw.blueprint)} is not a string`);
  let queryParts = false;
  let identifier: string;
  if (typeof raw.identifier === 'string') {
    if (!ID_PATTERN.test(raw.identifier) || raw.identifier.length > 1000)
      throw new Error(`identifier ${JSON.stringify(raw.identifier)} is not a valid Port identifier`);
    identifier = raw.identifier;
  } else if (isObject(raw.identifier)) {
    queryParts = true;
    identifier = stableJson(raw.identifier);
  } else throw new Error(`identifier ${show(raw.identifier)} is not a string or a search query`);
  const properties: Record<string, unknown> = { ...raw.properties };
  if (kpromo) {
    properties[STATE_KEY_PROPERTY] = o.stateKey;
    for (const [k, v] of Object.entries(properties)) if (v === null) delete properties[k];
  }
  const entity: PortEntity = { identifier, properties, relations: {} };
  const request: PortEntityRequest = { identifier: raw.identifier as string | SearchQuery, properties, relations: {} };
  // Port's EntityRequest omits an empty title or icon (json omitempty); a null one fails earlier.
  if (raw.title != null && raw.title !== '') entity.title = request.title = String(raw.title);
  if (raw.icon != null && raw.icon !== '') entity.icon = request.icon = String(raw.icon);
  if (raw.team !== undefined && raw.team !== null) {
    if (typeof raw.team === 'string' || (Array.isArray(raw.team) && raw.team.every((t) => typeof t === 'string')))
      entity.team = request.team = raw.team as string | string[];
    else if (isObject(raw.team)) {
      queryParts = true;
      request.team = raw.team;
    } else throw new Error(`team ${show(raw.team)} is not a string, a list of strings or a search query`);
  }
  for (const [k, v] of Object.entries(raw.relations)) {
    if (v === null || (typeof v === 'string' && ID_PATTERN.test(v)) || isIdList(v)) {
      entity.relations[k] = v;
      request.relations[k] = v;
    } else if (isObject(v)) {
      queryParts = true;
      request.relations[k] = v;
    } else
      throw new Error(`relation ${k} = ${show(v)} is not an identifier, a list of identifiers, a search query or null`);
  }
  const sent = queryParts ? request : entity;
  return {
    blueprint: raw.blueprint,
    entity,
    ...(queryParts ? { request } : {}),
    hash: hashEntity(raw.blueprint, sent),
  };
}

interface ObjectResult {
  x?: string;
  ie?: Field;
  i?: Array<{ s?: Field; m?: Field[][] }>;
}

/** Port's per-object rules over the jq results: any failure fails the whole object (controller.go, getObjectEntities). */
function finishObject(res: ResourceConfig, r: ObjectResult, o: MapOptions): MapResult {
  try {
    if (r.x !== undefined) throw new Error(r.x);
    if (r.ie) {
      if ('e' in r.ie) throw new Error(`itemsToParse: ${r.ie.e}`);
      if ('n' in r.ie) throw new Error('itemsToParse: the jq expression produced no output');
      throw new Error(`itemsToParse: array expected, got ${typeName(r.ie.v)} ${show(r.ie.v)}`);
    }
    const entities: MappedEntity[] = [];
    for (const item of r.i ?? []) {
      if (item.s) {
        const s = item.s;
        if ('e' in s) throw new Error(`selector.query: ${s.e}`);
        if ('n' in s) throw new Error('selector.query: the jq expression produced no output');
        if (typeof s.v !== 'boolean')
          throw new Error(`selector.query: boolean expected, got ${typeName(s.v)} ${show(s.v)}`);
        if (!s.v) continue;
      }
      res.port.entity.mappings.forEach((m, j) => {
        try {
          entities.push(finishMapping(m, item.m?.[j] ?? [], o));
        } catch (e) {
          throw new Error(`mappings.${j}.${(e as Error).message}`);
        }
      });
    }
    return { ok: true, entities };
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
}

const MAP_CHUNK = 200;

/** Maps many objects of one resource; results align with `objects`. */
export async function mapObjects(
  compiled: CompiledResource,
  objects: unknown[],
  opts: MapOptions | string,
): Promise<MapResult[]> {
  const o: MapOptions = typeof opts === 'string' ? { stateKey: opts } : opts;
  const jq = await loadJq();
  const input = withReadModel(compiled.resource.kind, objects);
  const out: MapResult[] = [];
  // Chunks keep jq's WASM heap small: it grows to the largest input and never shrinks.
  for (let i = 0; i < objects.length; i += MAP_CHUNK) {
    const chunk = input.slice(i, i + MAP_CHUNK);
    let results: ObjectResult[];
    try {
      results = runJqSync(jq, chunk, compiled.program) as ObjectResult[];
    } catch (e) {
      const error = (e as Error).message;
      for (const _ of chunk) out.push({ ok: false, error });
      continue;
    }
    for (const r of results) out.push(finishObject(compiled.resource, r, o));
  }
  return out;
}
