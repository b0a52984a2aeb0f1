import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { openApiSchema, RESOURCES } from './crds.js';
import type { AnyKpromoObject, KpromoKind } from './types.js';

// The x-kubernetes-* keywords are apiserver extensions; ajv only needs to know they are allowed.
const ajv = new Ajv({ allErrors: true, strict: false, useDefaults: false });
addFormats(ajv);
for (const kw of ['x-kubernetes-validations', 'x-kubernetes-list-type', 'x-kubernetes-list-map-keys']) {
  ajv.addKeyword(kw);
}

const validators = new Map<KpromoKind, ValidateFunction>();

function validatorFor(kind: KpromoKind): ValidateFunction {
  let v = validators.get(kind);
  if (!v) {
    v = ajv.compile(openApiSchema(RESOURCES[kind]));
    validators.set(kind, v);
  }
  return v;
}

export class ValidationError extends Error {
  constructor(
    readonly kind: string,
    readonly resourceName: string,
    readonly problems: string[],
  ) {
    super(`${kind} "${resourceName}" is invalid: ${problems.join('; ')}`);
    this.name = 'ValidationError';
  }
}

function describe(e: ErrorObject): string {
  const where = e.instancePath ? e.instancePath.slice(1).replaceAll('/', '.') : '(root)';
  if (e.keyword === 'enum')
    return `${where}: must be one of ${(e.params as { allowedValues: string[] }).allowedValues.join(', ')}`;
  if (e.keyword === 'required')
    return `${where}: missing required field ${(e.params as { missingProperty: string }).missingProperty}`;
  return `${where}: ${e.message ?? e.keyword}`;
}

/**
 * Client-side check against the same OpenAPI schema the CRD carries (CEL rules are left to the
 * apiserver). Used to give clear errors before a write, e.g. in the CLI, MCP tools and the exporter.
 */
export function validateResource(
  obj: unknown,
): { ok: true; value: AnyKpromoObject } | { ok: false; error: ValidationError } {
  const o = obj as { kind?: string; metadata?: { name?: string } } | null;
  const name = o?.metadata?.name ?? '(unnamed)';
  const kind = o?.kind;
  // Own keys only: "toString" or "__proto__" must not be taken for a kind.
  if (!kind || !Object.hasOwn(RESOURCES, kind)) {
    return {
      ok: false,
      error: new ValidationError(String(kind ?? '(no kind)'), name, [
        `unknown kind; expected one of ${Object.keys(RESOURCES).join(', ')}`,
      ]),
    };
  }
  const v = validatorFor(kind as KpromoKind);
  if (v(obj)) return { ok: true, value: obj as AnyKpromoObject };
  return { ok: false, error: new ValidationError(kind, name, (v.errors ?? []).map(describe)) };
}
