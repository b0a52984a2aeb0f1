import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { openApiDocument } from './openapi.js';
import type { ApiDescription } from './routes.js';

type Responses = Record<string, { content?: Record<string, { schema: unknown }> }>;
type Paths = Record<string, Record<string, { responses: Responses }>>;

/**
 * For tests: checks an HTTP answer against the OpenAPI document generated from the contract (what
 * clients are promised). `path` is the route template, e.g. `/plans/{namespace}/{name}`. Returns
 * the problems; empty when the answer fits.
 */
export function responseChecker(api: ApiDescription) {
  const doc = openApiDocument(api);
  const paths = doc.paths as Paths;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  // Component references (#/components/schemas/X) resolve against this registered copy.
  ajv.addSchema({ $id: 'kpromo-api', components: doc.components } as object);
  const compiled = new Map<string, ValidateFunction>();
  return (method: string, path: string, status: number, body: unknown): string[] => {
    const schema =
      paths[path]?.[method.toLowerCase()]?.responses[String(status)]?.content?.['application/json']?.schema;
    if (!schema) return [`${method} ${path} does not document status ${status} in "${api.title}"`];
    const key = `${method} ${path} ${status}`;
    let validate = compiled.get(key);
    if (!validate) {
      const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"kpromo-api#/components/'));
      validate = ajv.compile(rebased);
      compiled.set(key, validate);
    }
    return validate(body)
      ? []
      : (validate.errors ?? []).slice(0, 10).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
  };
}
