import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { openApiRoutes, type Route } from '../openapi/routes.js';

/**
 * A Port stand-in: a real HTTP server that validates every request (path and query parameters,
 * JSON body) and every response it sends against the committed Port OpenAPI spec, keeps
 * blueprints and entities in memory, and injects faults on demand. Problems are collected in
 * `violations`; tests assert it stays empty.
 */
type Json = Record<string, unknown>;
interface Operation {
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: Json }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Json }> };
  responses: Record<string, { content?: Record<string, { schema?: Json }> }>;
}
export interface Fault {
  /** Matches `${METHOD} ${path}`; default: any entity/blueprint call (not auth). */
  match?: RegExp;
  status: 401 | 429 | 500 | 502 | 503;
  times: number;
  headers?: Record<string, string>;
}
export interface StoredEntity {
  identifier: string;
  title?: string;
  icon?: string;
  team?: string | string[];
  properties: Json;
  relations: Json;
}

/** An action run as the stand-in keeps it: every PATCH body and every log line, in order. */
export interface StoredRun {
  id: string;
  /** Action identifier reported in responses (seed with `addRun`; default `stand_in_action`). */
  action: string;
  patches: Json[];
  logs: Json[];
}

const SPEC_PATH = join(dirname(fileURLToPath(import.meta.url)), '../../packages/port-client/port-api/openapi.yaml');
let cachedSpec: { spec: { paths: Record<string, Record<string, Operation>> }; ajv: Ajv2020 } | undefined;

function loadSpec() {
  if (cachedSpec) return cachedSpec;
  const spec = parse(readFileSync(SPEC_PATH, 'utf8'));
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema(spec, 'port');
  cachedSpec = { spec, ajv };
  return cachedSpec;
}

const ptr = (...parts: string[]) => parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

export class PortStandIn {
  readonly blueprints = new Map<string, Json>();
  readonly entities = new Map<string, Map<string, StoredEntity>>();
  /** Action runs touched through PATCH /v1/actions/runs/{run_id} and POST …/logs, by run id. */
  readonly runs = new Map<string, StoredRun>();
  /** Action definitions (POST /v1/actions, PUT /v1/actions/{action_identifier}), by identifier. */
  readonly actions = new Map<string, Json>();
  /**
   * Integrations by identifier (GET/PATCH /v1/integration/{identifier}). Port's exporter reads its
   * mapping from its integration; the spec documents no route that creates one, so tests seed it.
   */
  readonly integrations = new Map<string, Json>();
  readonly violations: string[] = [];
  /**
   * Each entity's `$datasource`: Port derives it from the User-Agent of the call that last wrote the
   * entity (Port's exporter sends `port-k8s-exporter/<version> (statekey/<key>)`). Key: `bp\0id`.
   */
  readonly datasources = new Map<string, string>();
  readonly calls: Array<{ method: string; path: string; status: number; query?: Record<string, string> }> = [];
  faults: Fault[] = [];
  delayMs = 0;
  tokenTtlSeconds = 3 * 3600;
  private readonly tokens = new Map<string, number>();
  private readonly routes: Array<Route<Operation>>;
  private server?: Server;
  private seq = 0;
  url = '';

  constructor(
    readonly clientId = 'test-client',
    readonly clientSecret = 'test-secret',
  ) {
    const { spec } = loadSpec();
    this.routes = openApiRoutes<Operation>(spec.paths);
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  /** Every issued token stops working, as after the 3 h lifetime. */
  expireTokens(): void {
    this.tokens.clear();
  }

  entitiesOf(bp: string): Map<string, StoredEntity> {
    let m = this.entities.get(bp);
    if (!m) {
      m = new Map();
      this.entities.set(bp, m);
    }
    return m;
  }

  /**
   * The run Port creates when an action is invoked. Runs the stand-in has not seen are created on
   * first use (a webhook-invoked action's run exists in Port before the backend reports on it).
   */
  addRun(id: string, action = 'stand_in_action'): StoredRun {
    let r = this.runs.get(id);
    if (!r) {
      r = { id, action, patches: [], logs: [] };
      this.runs.set(id, r);
    }
    return r;
  }

  callCount(re?: RegExp): number {
    return this.calls.filter((c) => !re || re.test(`${c.method} ${c.path}`)).length;
  }

  private validate(ref: string, value: unknown, what: string): boolean {
    const v = loadSpec().ajv.getSchema(`port#/${ref}`);
    if (!v) {
      this.violations.push(`${what}: no schema at ${ref}`);
      return false;
    }
    if (v(value)) return true;
    this.violations.push(`${what}: ${loadSpec().ajv.errorsText(v.errors)}`);
    return false;
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://x');
    const method = req.method ?? 'GET';
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const route = this.routes.find((r) => r.method === method && r.re.test(url.pathname));
    const send = (status: number, body: Json, headers: Record<string, string> = {}, documented = true) => {
      this.calls.push({ method, path: url.pathname, status, query: Object.fromEntries(url.searchParams) });
      if (route) {
        const resp = route.op.responses[String(status)];
        if (resp?.content?.['application/json']?.schema) {
          this.validate(
            ptr(
              'paths',
              route.template,
              route.method.toLowerCase(),
              'responses',
              String(status),
              'content',
              'application/json',
              'schema',
            ),
            body,
            `response ${status} ${method} ${url.pathname}`,
          );
        } else if (documented) {
          this.violations.push(`response ${status} is not documented for ${method} ${route.template}`);
        }
      }
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    if (!route) {
      this.violations.push(`request ${method} ${url.pathname} matches no operation in the spec`);
      return send(404, { ok: false, error: 'not_found', message: 'no such route' });
    }
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    if (raw.length > 1024 * 1024)
      return send(413, { ok: false, error: 'payload_too_large', message: 'Request body is too large (limit is 1MiB)' });

    // Request validation: parameters, then body.
    const params: Record<string, string> = {};
    route.names.forEach((n, i) => {
      params[n] = decodeURIComponent(route.re.exec(url.pathname)![i + 1]);
    });
    const problems: string[] = [];
    for (const p of route.op.parameters ?? []) {
      const value = p.in === 'path' ? params[p.name] : p.in === 'query' ? url.searchParams.get(p.name) : undefined;
      if (p.in !== 'path' && p.in !== 'query') continue;
      if (value == null) {
        if (p.required) problems.push(`missing required ${p.in} parameter ${p.name}`);
        continue;
      }
      const type = (p.schema as { type?: string } | undefined)?.type;
      const coerced =
        type === 'boolean'
          ? value === 'true'
            ? true
            : value === 'false'
              ? false
              : value
          : type === 'number'
            ? Number(value)
            : value;
      const idx = route.op.parameters!.indexOf(p);
      if (
        !this.validate(
          ptr('paths', route.template, route.method.toLowerCase(), 'parameters', String(idx), 'schema'),
          coerced,
          `${p.in} parameter ${p.name}`,
        )
      )
        problems.push(`bad ${p.name}`);
    }
    let body: unknown;
    if (raw.length) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        problems.push('body is not JSON');
      }
    }
    const bodySchema = route.op.requestBody?.content?.['application/json']?.schema;
    if (bodySchema && (body !== undefined || route.op.requestBody?.required)) {
      if (
        !this.validate(
          ptr(
            'paths',
            route.template,
            route.method.toLowerCase(),
            'requestBody',
            'content',
            'application/json',
            'schema',
          ),
          body,
          `request ${method} ${route.template}`,
        )
      )
        problems.push('body does not match schema');
    }
    if (problems.length) {
      this.violations.push(`request ${method} ${url.pathname}: ${problems.join('; ')}`);
      return send(422, { ok: false, error: 'invalid_request', message: problems.join('; ') });
    }

    const isAuth = route.template === '/v1/auth/access_token';
    const fault = this.faults.find(
      (f) => f.times > 0 && (f.match ? f.match.test(`${method} ${url.pathname}`) : !isAuth),
    );
    if (fault) {
      fault.times--;
      // 429/5xx are not in Port's spec for these routes; the body uses Port's error shape.
      return send(
        fault.status,
        {
          ok: false,
          error: fault.status === 429 ? 'rate_limited' : fault.status === 401 ? 'unauthorized' : 'internal_error',
          message: 'injected fault',
        },
        fault.headers,
        fault.status === 401,
      );
    }
    if (isAuth) {
      const b = body as { clientId: string; clientSecret: string };
      if (b.clientId !== this.clientId || b.clientSecret !== this.clientSecret)
        return send(401, { ok: false, error: 'unauthorized', message: 'bad credentials' });
      const token = `tok-${++this.seq}`;
      this.tokens.set(token, Date.now() + this.tokenTtlSeconds * 1000);
      return send(200, { ok: true, accessToken: token, expiresIn: this.tokenTtlSeconds, tokenType: 'Bearer' });
    }
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!auth || !(this.tokens.get(auth)! > Date.now()))
      return send(401, { ok: false, error: 'unauthorized', message: 'token expired or missing' });
    this.userAgent = req.headers['user-agent'] ?? '';
    this.query = url.searchParams;
    this.route(route.template, method, params, body as Json, send);
  }

  private userAgent = '';
  private query = new URLSearchParams();
  private flag(name: string): boolean {
    return this.query.get(name) === 'true';
  }

  private blueprintResponse(bp: Json): Json {
    const now = new Date().toISOString();
    return { createdBy: 'stand-in', updatedBy: 'stand-in', createdAt: now, updatedAt: now, ...bp };
  }

  private upsert(bp: string, e: StoredEntity): void {
    this.entitiesOf(bp).set(e.identifier, { ...e, properties: e.properties ?? {}, relations: e.relations ?? {} });
  }

  /**
   * An entity write as Port applies it (query flags of the current call): a search-query identifier
   * resolves to the one entity it matches; relations given as search queries resolve to the
   * identifiers they match; `merge=true` updates an existing entity's properties and relations in
   * place (a null value is stored as null) instead of replacing it; missing relation targets are
   * created when `create_missing_related_entities=true` and refused otherwise. Returns the stored
   * identifier, or an error.
   */
  private write(
    bpId: string,
    input: Json,
  ): { identifier: string; created: boolean } | { status: number; message: string } {
    const bp = this.blueprints.get(bpId) as { relations?: Record<string, { target: string; many?: boolean }> };
    let identifier = input.identifier as string | Json;
    if (identifier && typeof identifier === 'object') {
      const hits = [...this.entitiesOf(bpId).values()].filter((x) => this.matches(bpId, x, identifier as Json));
      if (hits.length !== 1)
        return { status: 404, message: `identifier query matched ${hits.length} entities of ${bpId}, expected 1` };
      identifier = hits[0].identifier;
    }
    const relations: Json = {};
    for (const [k, v] of Object.entries((input.relations as Json | undefined) ?? {})) {
      const rel = bp.relations?.[k];
      if (v && typeof v === 'object' && !Array.isArray(v)) {
        const ids = rel
          ? [...this.entitiesOf(rel.target).values()]
              .filter((x) => this.matches(rel.target, x, v as Json))
              .map((x) => x.identifier)
          : [];
        relations[k] = rel?.many ? ids : (ids[0] ?? null);
      } else relations[k] = v;
      if (!rel) continue;
      for (const target of [relations[k]].flat()) {
        if (typeof target !== 'string' || this.entitiesOf(rel.target).has(target)) continue;
        if (!this.flag('create_missing_related_entities'))
          return { status: 404, message: `related entity ${target} of blueprint ${rel.target} was not found` };
        this.entitiesOf(rel.target).set(target, { identifier: target, properties: {}, relations: {} });
        this.datasources.set(`${rel.target}\u0000${target}`, this.userAgent);
      }
    }
    const prev = this.entitiesOf(bpId).get(identifier);
    const merge = this.flag('merge') && prev;
    const e: StoredEntity = merge
      ? {
          ...prev,
          ...(input as unknown as StoredEntity),
          identifier,
          properties: { ...prev.properties, ...((input.properties as Json | undefined) ?? {}) },
          relations: { ...prev.relations, ...relations },
        }
      : { ...(input as unknown as StoredEntity), identifier, relations };
    this.upsert(bpId, e);
    this.datasources.set(`${bpId}\u0000${identifier}`, this.userAgent);
    return { identifier, created: !prev };
  }

  /** Search rules as the stand-in supports them: `=`, `contains`, `in` over properties and $meta, nested and/or. */
  private matches(bpId: string, e: StoredEntity, q: Json): boolean {
    const rules = (q.rules ?? []) as Json[];
    const test = (r: Json): boolean => {
      if (r.combinator) return this.matches(bpId, e, r);
      const p = String(r.property);
      const v =
        p === '$identifier'
          ? e.identifier
          : p === '$title'
            ? e.title
            : p === '$blueprint'
              ? bpId
              : p === '$datasource'
                ? this.datasources.get(`${bpId}\u0000${e.identifier}`)
                : e.properties[p];
      switch (r.operator) {
        case '=':
          return v === r.value;
        case 'contains':
          return typeof v === 'string' && typeof r.value === 'string' && v.includes(r.value);
        case 'in':
          return Array.isArray(r.value) && r.value.includes(v);
        default:
          this.violations.push(`search operator ${String(r.operator)} not supported by the stand-in`);
          return false;
      }
    };
    return q.combinator === 'or' ? rules.some(test) : rules.every(test);
  }

  /**
   * Deletes an entity as Port does: with `delete_dependents=true` the entities whose relations
   * point at it go too; otherwise a dependent through a required relation refuses the delete, and
   * other references are cleared.
   */
  private deleteEntity(bpId: string, id: string, withDependents: boolean): string | undefined {
    const dependents: Array<[string, string, string, boolean]> = [];
    for (const [other, def] of this.blueprints) {
      const rels = ((def as { relations?: Record<string, { target: string; required?: boolean }> }).relations ??
        {}) as Record<string, { target: string; required?: boolean }>;
      for (const [rk, rd] of Object.entries(rels)) {
        if (rd.target !== bpId) continue;
        for (const x of this.entitiesOf(other).values())
          if ([x.relations[rk]].flat().includes(id)) dependents.push([other, x.identifier, rk, !!rd.required]);
      }
    }
    if (!withDependents && dependents.some((d) => d[3]))
      return `entity ${id} has dependent entities through required relations`;
    this.entitiesOf(bpId).delete(id);
    this.datasources.delete(`${bpId}\u0000${id}`);
    for (const [other, did, rk] of dependents) {
      if (withDependents) {
        if (this.entitiesOf(other).has(did)) this.deleteEntity(other, did, true);
        continue;
      }
      const x = this.entitiesOf(other).get(did);
      if (!x) continue;
      const cur = x.relations[rk];
      x.relations[rk] = Array.isArray(cur) ? cur.filter((t) => t !== id) : null;
    }
    return undefined;
  }

  private route(
    template: string,
    method: string,
    p: Record<string, string>,
    body: Json,
    send: (status: number, body: Json, headers?: Record<string, string>, documented?: boolean) => void,
  ) {
    const notFound = (what: string) => send(404, { ok: false, error: 'not_found', message: `${what} was not found` });
    const bpId = p.blueprint_identifier ?? p.identifier;
    switch (`${method} ${template}`) {
      case 'GET /v1/blueprints/{identifier}': {
        const bp = this.blueprints.get(bpId);
        return bp ? send(200, { ok: true, blueprint: this.blueprintResponse(bp) }) : notFound(`blueprint ${bpId}`);
      }
      case 'POST /v1/blueprints': {
        const bp: Json = { relations: {}, ...body };
        const targets = Object.values(bp.relations as Record<string, { target: string }>).map((r) => r.target);
        const missing = targets.filter((t) => t !== bp.identifier && !this.blueprints.has(t));
        if (missing.length) return notFound(`relation target blueprint ${missing.join(', ')}`);
        this.blueprints.set(String(bp.identifier), bp);
        return send(201, { ok: true, blueprint: this.blueprintResponse(bp) });
      }
      case 'PATCH /v1/blueprints/{identifier}': {
        const bp = this.blueprints.get(bpId);
        if (!bp) return notFound(`blueprint ${bpId}`);
        const next = { ...bp, ...body, schema: { ...(bp.schema as Json), ...(body.schema as Json) } };
        this.blueprints.set(bpId, next);
        return send(200, { ok: true, blueprint: this.blueprintResponse(next) });
      }
      case 'POST /v1/blueprints/{blueprint_identifier}/entities/bulk': {
        if (!this.blueprints.has(bpId)) return notFound(`blueprint ${bpId}`);
        const entities: Json[] = [];
        const errors: Json[] = [];
        (body.entities as StoredEntity[]).forEach((e, index) => {
          const bad = this.entityProblem(bpId, e);
          const done = bad ? { status: 422, message: bad } : this.write(bpId, e as unknown as Json);
          if ('status' in done)
            errors.push({
              identifier: typeof e.identifier === 'string' ? e.identifier : JSON.stringify(e.identifier),
              index,
              statusCode: done.status,
              error: done.status === 404 ? 'not_found' : 'invalid_entity',
              message: done.message,
            });
          else entities.push({ created: done.created, identifier: done.identifier, index });
        });
        return send(errors.length ? 207 : 200, { ok: errors.length === 0, entities, errors });
      }
      case 'POST /v1/blueprints/{blueprint_identifier}/entities': {
        if (!this.blueprints.has(bpId)) return notFound(`blueprint ${bpId}`);
        const e = body as unknown as StoredEntity;
        const bad = this.entityProblem(bpId, e);
        if (bad) return send(422, { ok: false, error: 'invalid_entity', message: bad });
        const done = this.write(bpId, e as unknown as Json);
        if ('status' in done)
          return send(done.status, {
            ok: false,
            error: done.status === 404 ? 'not_found' : 'invalid_entity',
            message: done.message,
          });
        return send(201, { ok: true, entity: this.entitiesOf(bpId).get(done.identifier) as unknown as Json });
      }
      case 'DELETE /v1/blueprints/{blueprint_identifier}/entities/{entity_identifier}': {
        if (!this.entitiesOf(bpId).has(p.entity_identifier)) return notFound(`entity ${p.entity_identifier}`);
        const refused = this.deleteEntity(bpId, p.entity_identifier, this.flag('delete_dependents'));
        return refused ? send(422, { ok: false, error: 'has_dependents', message: refused }) : send(200, { ok: true });
      }
      case 'POST /v1/blueprints/{blueprint_identifier}/bulk/entities/delete': {
        const ids = body.entities as string[];
        const m = this.entitiesOf(bpId);
        const missing = ids.filter((id) => !m.has(id));
        if (missing.length) return notFound(`entities ${missing.join(', ')}`);
        const withDependents = this.flag('delete_dependents');
        // All or nothing, as Port documents for this route.
        const snapshot = new Map([...this.entities].map(([b, em]) => [b, new Map(em)]));
        for (const id of ids) {
          if (!m.has(id)) continue;
          const refused = this.deleteEntity(bpId, id, withDependents);
          if (refused) {
            for (const [b, em] of snapshot) this.entities.set(b, em);
            return send(422, { ok: false, error: 'has_dependents', message: refused });
          }
        }
        return send(200, { ok: true, deletedEntities: ids });
      }
      case 'POST /v1/blueprints/{blueprint_identifier}/entities/search': {
        if (!this.blueprints.has(bpId)) return notFound(`blueprint ${bpId}`);
        const query = (body.query as Json | undefined) ?? { combinator: 'and', rules: [] };
        const all = [...this.entitiesOf(bpId).values()].filter((e) => this.matches(bpId, e, query));
        const limit = Number(body.limit ?? 200);
        const start = body.from ? Number(body.from) : 0;
        const page = all.slice(start, start + limit);
        const include = body.include as string[] | undefined;
        const shaped = page.map((e) =>
          include?.length === 1 && include[0] === '$identifier' ? { identifier: e.identifier } : e,
        );
        return send(200, {
          ok: true,
          entities: shaped as unknown as Json[],
          ...(start + limit < all.length ? { next: String(start + limit) } : {}),
        } as Json);
      }
      // Port's spec documents no success answer for the action definition routes: the bodies below are
      // Port's documented shape (`{ok, action}`), sent as undocumented answers; 409 is Port's
      // `identifier_taken`, which port-k8s-exporter looks for when an action exists.
      case 'GET /v1/actions/{action_identifier}': {
        const a = this.actions.get(p.action_identifier);
        return a ? send(200, { ok: true, action: a }, {}, false) : notFound(`action ${p.action_identifier}`);
      }
      case 'POST /v1/actions': {
        const id = String(body.identifier);
        if (this.actions.has(id))
          return send(409, { ok: false, error: 'identifier_taken', message: `action ${id} already exists` }, {}, false);
        const bp = (body.trigger as { blueprintIdentifier?: string } | undefined)?.blueprintIdentifier;
        if (bp && !this.blueprints.has(bp)) return notFound(`blueprint ${bp}`);
        this.actions.set(id, body);
        return send(201, { ok: true, action: body }, {}, false);
      }
      // As for actions, the spec documents no success answer for these: `{ok, integration}` as Port sends it.
      case 'GET /v1/integration/{identifier}': {
        const i = this.integrations.get(p.identifier);
        return i ? send(200, { ok: true, integration: i }, {}, false) : notFound(`integration ${p.identifier}`);
      }
      case 'PATCH /v1/integration/{identifier}': {
        const i = this.integrations.get(p.identifier);
        if (!i) return notFound(`integration ${p.identifier}`);
        const next = { ...i, ...body };
        this.integrations.set(p.identifier, next);
        return send(200, { ok: true, integration: next }, {}, false);
      }
      case 'PUT /v1/actions/{action_identifier}': {
        if (!this.actions.has(p.action_identifier)) return notFound(`action ${p.action_identifier}`);
        this.actions.set(p.action_identifier, body);
        return send(200, { ok: true, action: body }, {}, false);
      }
      case 'PATCH /v1/actions/runs/{run_id}': {
        const r = this.addRun(p.run_id);
        r.patches.push(body);
        const merged = Object.assign({}, ...r.patches) as Json;
        return send(200, {
          ok: true,
          run: {
            id: r.id,
            action: { identifier: r.action },
            properties: {},
            requiredApproval: false,
            source: 'UI',
            status: (merged.status as string | undefined) ?? 'IN_PROGRESS',
            ...(merged.statusLabel ? { statusLabel: merged.statusLabel } : {}),
            ...(merged.summary ? { summary: merged.summary } : {}),
            ...(merged.status ? { endedAt: new Date().toISOString() } : {}),
          },
        });
      }
      case 'POST /v1/actions/runs/{run_id}/logs': {
        const r = this.addRun(p.run_id);
        r.logs.push(body);
        return send(201, {
          ok: true,
          runLog: {
            id: `log-${++this.seq}`,
            runId: r.id,
            message: String(body.message),
            createdBy: 'stand-in',
            createdAt: new Date().toISOString(),
          },
        });
      }
      default:
        this.violations.push(`stand-in does not implement ${method} ${template}`);
        return send(404, {
          ok: false,
          error: 'not_found',
          message: `${method} ${template} not implemented by the stand-in`,
        });
    }
  }

  /** What Port would reject: properties the blueprint does not define, relations it lacks. */
  private entityProblem(bpId: string, e: StoredEntity): string | undefined {
    const bp = this.blueprints.get(bpId) as { schema?: { properties?: Json }; relations?: Json };
    const props = bp.schema?.properties ?? {};
    for (const k of Object.keys(e.properties ?? {}))
      if (!(k in props)) return `property ${k} is not defined on blueprint ${bpId}`;
    for (const k of Object.keys(e.relations ?? {}))
      if (!(k in (bp.relations ?? {}))) return `relation ${k} is not defined on blueprint ${bpId}`;
    return undefined;
  }
}
