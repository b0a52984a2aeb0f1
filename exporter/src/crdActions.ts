import type { ConfigDialect } from './config.js';
import type { Crd, CrdSchema } from './discoverCrds.js';

/** One user input of an action (Port's "Default order" user inputs). */
export interface ActionInput {
  type: 'string' | 'number' | 'boolean' | 'object' | 'array';
  title?: string;
  description?: string;
  default?: unknown;
  pattern?: string;
  format?: string;
  enum?: string[];
  visible?: boolean;
}

/**
 * A POST /v1/actions body: a self-service action invoked by webhook (the subset of Port's schema
 * this module writes; test/crdActions.test.ts validates every one against Port's published schema).
 */
export interface PortAction {
  identifier: string;
  title: string;
  icon: string;
  description: string;
  trigger: {
    type: 'self-service';
    operation: 'CREATE' | 'DAY-2' | 'DELETE';
    blueprintIdentifier: string;
    userInputs: { properties: Record<string, ActionInput>; required?: string[] };
  };
  invocationMethod: {
    type: 'WEBHOOK';
    url: string;
    agent: boolean;
    synchronized: boolean;
    method: string;
    headers: Record<string, string>;
    body: { runId: string; action: string; user: string; resource: Record<string, string> };
  };
}

export interface CrdActionOptions {
  /** Where Port sends every run: the promotions backend's Port webhook (…/api/promotions/port/webhook). */
  webhookUrl: string;
  /** Which exporter config made the blueprint: it decides the blueprint name and how a name is read back from an entity. */
  dialect: ConfigDialect;
}

/** Nested spec fields become one input each, named with this separator (pkg/crd/crd.go, NestedSchemaSeparator). */
export const NESTED_SEPARATOR = '__';
/** Port's user input names (`trigger.userInputs.properties` property names). */
const INPUT_NAME = /^[A-Za-z0-9@_=\\-]+$/;
/** Input formats Port accepts; a CRD's other formats (int32, byte, …) are dropped. */
const PORT_FORMATS = new Set(['date-time', 'url', 'email', 'ipv4', 'ipv6', 'yaml', 'multi-line', 'markdown']);
const INPUT_TYPES = new Set(['string', 'number', 'boolean', 'object', 'array']);
const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

/**
 * The spec built from the inputs, as port-k8s-exporter's manifest template does: `a__b` inputs
 * become nested fields, `name` and `namespace` are metadata, not spec.
 */
const SPEC_FROM_INPUTS =
  '{{ .inputs | to_entries | map(if .key | contains("__") then .key |= split("__") else . end) | reduce .[] as $item ({}; if $item.key | type == "array" then setpath($item.key; $item.value) else setpath([$item.key]; $item.value) end) | del(.name) | del(.namespace) }}';

/** A type Port understands: integers are numbers, `anyOf` prefers string (adjustSchemaToPortSchemaCompatibilityLevel). */
function portType(s: CrdSchema): string {
  if (s.type === 'integer') return 'number';
  if (s.type) return s.type;
  const any = (s.anyOf ?? []).map((a) => a.type ?? '');
  return any.includes('string') ? 'string' : (any[0] ?? '');
}

/** One input from a CRD field: its type, title, description, pattern, format and string enum where Port takes them. */
function toInput(s: CrdSchema, type: ActionInput['type']): ActionInput {
  return {
    type,
    ...(s.title ? { title: s.title } : {}),
    ...(s.description ? { description: s.description } : {}),
    ...(s.default !== undefined ? { default: s.default } : {}),
    ...(s.pattern && type === 'string' ? { pattern: s.pattern } : {}),
    ...(s.format && PORT_FORMATS.has(s.format) ? { format: s.format } : {}),
    ...(s.enum?.length && s.enum.every((e) => typeof e === 'string') ? { enum: s.enum as string[] } : {}),
  };
}

/**
 * The spec schema made shallow (ShallowJsonSchema): every non-object field is one input, nested ones
 * named `parent__child`; objects themselves (also those without declared fields) are not inputs.
 * Required are the required leaves whose parents are required all the way up (shallowRequired).
 */
export function shallowInputs(spec: CrdSchema): { properties: Record<string, ActionInput>; required: string[] } {
  const properties: Record<string, ActionInput> = {};
  const walk = (s: CrdSchema, prefix: string) => {
    for (const [k, v] of Object.entries(s.properties ?? {})) {
      const name = prefix + k;
      const type = portType(v);
      if (type === 'object') walk(v, name + NESTED_SEPARATOR);
      else if (INPUT_TYPES.has(type) && INPUT_NAME.test(name))
        properties[name] = toInput(v, type as ActionInput['type']);
    }
  };
  walk(spec, '');
  const required: string[] = [];
  const req = (s: CrdSchema, prefix: string) => {
    for (const k of s.required ?? []) {
      const v = s.properties?.[k];
      if (!v) continue;
      if (portType(v) === 'object') req(v, prefix + k + NESTED_SEPARATOR);
      else if (properties[prefix + k]) required.push(prefix + k);
    }
  };
  req(spec, '');
  // Optional inputs are hidden and carry no default: Kubernetes applies the CRD's own defaults.
  for (const [k, v] of Object.entries(properties))
    if (!required.includes(k)) {
      v.visible = false;
      delete v.default;
    }
  return { properties, required };
}

/**
 * The three self-service actions port-k8s-exporter creates for a discovered CRD (pkg/crd/crd.go:
 * buildCreateAction, buildUpdateAction, buildDeleteAction): `create_`, `update_` and `delete_` +
 * the blueprint, with the spec schema as user inputs. Invoked by WEBHOOK (the Go exporter uses a
 * GitHub workflow) at the promotions backend, which writes the object through the controller as
 * the Port user; the body carries the object's name, namespace and spec, never its kind.
 */
export function crdToPortActions(crd: Crd, o: CrdActionOptions): PortAction[] {
  const port = o.dialect === 'port-k8s-exporter';
  // The same version and blueprint the exporter watches and maps the CRD with (discoverCrds.ts).
  const v = port ? crd.spec.versions[0] : (crd.spec.versions.find((x) => x.storage) ?? crd.spec.versions[0]);
  const root = v?.schema?.openAPIV3Schema ?? {};
  const spec = root.properties?.spec ?? root;
  const singular = crd.spec.names.singular || crd.spec.names.kind.toLowerCase();
  const blueprint = port ? singular : crd.spec.names.kind;
  const title = (op: string) => `${op} ${port ? singular.replace(/\b\w/g, (c) => c.toUpperCase()) : blueprint}`;
  const namespaced = crd.spec.scope !== 'Cluster';
  const icon = crd.metadata.ownerReferences?.[0]?.kind === 'CompositeResourceDefinition' ? 'Crossplane' : 'Cluster';
  const description = `Created by kpromo-exporter from the CRD ${crd.metadata.name}: ${title('').trim()} objects are created, updated and deleted through the kpromo promotions backend, as the Port user, with Kubernetes RBAC deciding.`;
  const inputs = shallowInputs(spec);

  // kpromo exporter configs identify entities as cluster:namespace:name and keep the cluster.
  const entityName = port ? '{{ .entity.identifier }}' : '{{ .entity.identifier | split(":") | .[2] }}';
  const fromEntity = {
    name: entityName,
    ...(namespaced ? { namespace: '{{ .entity.properties.namespace }}' } : {}),
    ...(port ? {} : { cluster: '{{ .entity.properties.cluster }}' }),
  };
  const invocation = (resource: Record<string, string>): PortAction['invocationMethod'] => ({
    type: 'WEBHOOK',
    url: o.webhookUrl,
    agent: false,
    synchronized: false,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: {
      runId: '{{ .run.id }}',
      action: '{{ .action.identifier }}',
      user: '{{ .trigger.by.user.email }}',
      resource,
    },
  });

  const create: Record<string, ActionInput> = {
    ...structuredClone(inputs.properties),
    name: { type: 'string', title: `${singular} Name`, pattern: DNS_SUBDOMAIN },
  };
  const createRequired = [...inputs.required, 'name'];
  if (namespaced) {
    create.namespace = { type: 'string', title: 'Namespace', default: 'default' };
    createRequired.push('namespace');
  }
  // Update inputs default to the entity's current values (its properties hold the nested spec).
  const update = structuredClone(inputs.properties);
  for (const [k, p] of Object.entries(update))
    p.default = { jqQuery: `.entity.properties.${k.split(NESTED_SEPARATOR).join('.')}` };

  const action = (
    op: 'create' | 'update' | 'delete',
    operation: PortAction['trigger']['operation'],
    userInputs: PortAction['trigger']['userInputs'],
    resource: Record<string, string>,
  ): PortAction => ({
    identifier: `${op}_${blueprint}`,
    title: title(op[0].toUpperCase() + op.slice(1)),
    icon,
    description,
    trigger: { type: 'self-service', operation, blueprintIdentifier: blueprint, userInputs },
    invocationMethod: invocation(resource),
  });
  return [
    action(
      'create',
      'CREATE',
      { properties: create, required: createRequired },
      {
        name: '{{ .inputs.name }}',
        ...(namespaced ? { namespace: '{{ .inputs.namespace }}' } : {}),
        spec: SPEC_FROM_INPUTS,
      },
    ),
    action(
      'update',
      'DAY-2',
      { properties: update, required: inputs.required },
      { ...fromEntity, spec: SPEC_FROM_INPUTS },
    ),
    action('delete', 'DELETE', { properties: {} }, fromEntity),
  ];
}
