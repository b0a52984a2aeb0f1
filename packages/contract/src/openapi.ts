import type { TSchema } from '@sinclair/typebox';
import { z } from 'zod';
import type { ApiDescription, Route } from './routes.js';

type Json = Record<string, unknown>;
type Components = Record<string, Json>;

/**
 * The TypeBox schema as plain JSON Schema, with every named sub-schema (`$id`) moved to
 * components.schemas and referenced, so each definition appears once in the document.
 */
function named(schema: TSchema, components: Components): Json {
  const walk = (v: unknown, top: boolean): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x, false));
    if (!v || typeof v !== 'object') return v;
    const o = v as Json;
    const id = typeof o.$id === 'string' ? o.$id : undefined;
    const body = Object.fromEntries(
      Object.entries(o)
        .filter(([k]) => k !== '$id')
        .map(([k, x]) => [k, walk(x, false)]),
    );
    if (!id) return body;
    components[id] ??= body;
    return top ? { $ref: `#/components/schemas/${id}` } : { $ref: `#/components/schemas/${id}` };
  };
  // JSON round trip: TypeBox keeps its bookkeeping under symbols, which are not part of the schema.
  return walk(JSON.parse(JSON.stringify(schema)), true) as Json;
}

/** JSON Schema of a zod input as the server sees it after parsing (`io: 'output'`). */
function zodSchema(s: z.ZodType): Json {
  const j = z.toJSONSchema(s, { io: 'output', unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  delete j.$schema;
  return j;
}

function parameters(where: 'path' | 'query', schema: z.ZodType | undefined): Json[] {
  if (!schema) return [];
  const shape = (schema as z.ZodObject).shape as Record<string, z.ZodType>;
  return Object.entries(shape).map(([name, field]) => {
    let s = zodSchema(field);
    // A transform (e.g. labelSelector) has no JSON Schema of its own: on the wire it is a string.
    if (!Object.keys(s).length || (s.type === 'object' && where === 'query')) s = { type: 'string' };
    // Lists arrive comma-separated in a query string.
    if (s.type === 'array' && where === 'query') s = { type: 'string', description: 'Comma-separated names or globs.' };
    return {
      name,
      in: where,
      required: where === 'path' || !field.safeParse(undefined).success,
      ...(typeof s.description === 'string' ? { description: s.description } : {}),
      schema: s,
    };
  });
}

function operation(r: Route, api: ApiDescription, components: Components): Json {
  const errors = (code: number, description: string) => [
    String(code),
    { description, content: { 'application/json': { schema: named(api.error, components) } } },
  ];
  return {
    operationId: r.operationId,
    summary: r.summary,
    parameters: [...parameters('path', r.params), ...parameters('query', r.query)],
    ...(r.body
      ? {
          requestBody: {
            // Required when an empty body is refused (an approval names the plan it approves).
            required: !r.body.safeParse({}).success,
            content: { 'application/json': { schema: zodSchema(r.body) } },
          },
        }
      : {}),
    responses: Object.fromEntries([
      [
        String(r.status),
        { description: 'OK', content: { 'application/json': { schema: named(r.response, components) } } },
      ],
      errors(400, 'Invalid input; the message names every bad field.'),
      errors(401, 'No or an unaccepted token.'),
      errors(403, 'Kubernetes RBAC (or a Backstage permission) refuses the caller.'),
      ...(r.params ? [errors(404, 'No such object, or the caller may not read it.')] : []),
      ...(r.method === 'post' ? [errors(409, 'Conflicts with the current state (exists, already approved).')] : []),
      errors(503, 'The controller (or the cluster behind it) is unavailable.'),
    ]),
  };
}

/** The OpenAPI 3.1 document of one API, generated from its route table. */
export function openApiDocument(api: ApiDescription, version = '0.1.0'): Json {
  const components: Components = {};
  const paths: Record<string, Json> = {};
  for (const r of api.routes) {
    paths[r.path] ??= {};
    paths[r.path][r.method] = operation(r, api, components);
  }
  return {
    openapi: '3.1.0',
    info: { title: api.title, version, description: api.description },
    servers: [{ url: api.basePath }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
    },
  };
}
