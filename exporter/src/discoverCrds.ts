import type { BlueprintConfig, ResourceConfig } from './config.js';
import { ID } from './defaults.js';
import { jqEnvironment, prelude, runJq } from './jq.js';

/** The parts of a CRD's openAPIV3Schema the exporter reads. */
export interface CrdSchema {
  type?: string;
  title?: string;
  description?: string;
  properties?: Record<string, CrdSchema>;
  required?: string[];
  anyOf?: CrdSchema[];
  default?: unknown;
  pattern?: string;
  format?: string;
  enum?: unknown[];
}

export interface Crd {
  metadata: { name: string; ownerReferences?: Array<{ kind: string }> };
  spec: {
    group: string;
    scope?: string;
    names: { kind: string; plural: string; singular?: string };
    versions: Array<{ name: string; storage?: boolean; served?: boolean; schema?: { openAPIV3Schema?: CrdSchema } }>;
  };
}

const PORT_TYPES: Record<string, BlueprintConfig['schema']['properties'][string]['type']> = {
  string: 'string',
  integer: 'number',
  number: 'number',
  boolean: 'boolean',
  object: 'object',
  array: 'array',
};
const NAME = /^[A-Za-z0-9@_=-]{1,100}$/;

/** Blueprint + default mapping for a CRD, from its storage version's top-level spec fields. */
export function crdToResource(crd: Crd): { blueprint: BlueprintConfig; resource: ResourceConfig } {
  const v = crd.spec.versions.find((x) => x.storage) ?? crd.spec.versions[0];
  const specProps = v?.schema?.openAPIV3Schema?.properties?.spec?.properties ?? {};
  const id = crd.spec.names.kind;
  const properties: BlueprintConfig['schema']['properties'] = {
    cluster: { title: 'Cluster', type: 'string' },
    namespace: { title: 'Namespace', type: 'string' },
  };
  const mapped: Record<string, string> = { cluster: '$cluster', namespace: '.metadata.namespace' };
  for (const [name, s] of Object.entries(specProps)) {
    const type = PORT_TYPES[s.type ?? ''];
    if (!type || !NAME.test(name) || name in properties) continue;
    properties[name] = { title: name, type };
    mapped[name] = `.spec[${JSON.stringify(name)}]`;
  }
  return {
    blueprint: { identifier: id, title: id, schema: { properties }, relations: {} },
    resource: {
      kind: `${crd.spec.group}/${v.name}/${crd.spec.names.plural}`,
      port: {
        entity: {
          mappings: [
            {
              identifier: ID,
              title: '.metadata.name',
              blueprint: JSON.stringify(id),
              properties: mapped,
              relations: {},
            },
          ],
        },
      },
    },
  };
}

/**
 * Blueprint + mapping for a CRD as Port's exporter makes them for `crdsToDiscover`
 * (pkg/crd/crd.go: createKindConfigFromCRD, convertToPortSchemas): blueprint named after the
 * singular name, properties from the first version's `spec` schema (integers as numbers, `anyOf`
 * preferring string) plus `namespace` for namespaced CRDs; identifier and title `.metadata.name`,
 * `namespace` and `"*": .spec` as properties.
 */
export function crdToPortResource(crd: Crd): { blueprint: BlueprintConfig; resource: ResourceConfig } {
  const v = crd.spec.versions[0];
  const root = v?.schema?.openAPIV3Schema;
  const spec = root?.properties?.spec ?? root ?? {};
  const singular = crd.spec.names.singular || crd.spec.names.kind.toLowerCase();
  const properties: BlueprintConfig['schema']['properties'] = {};
  for (const [name, s] of Object.entries(spec.properties ?? {})) {
    const t = s.type || (s.anyOf?.some((a) => a.type === 'string') ? 'string' : s.anyOf?.[0]?.type) || '';
    const type = PORT_TYPES[t];
    if (type) properties[name] = { title: name, type };
  }
  if (crd.spec.scope === 'Namespaced') properties.namespace = { title: 'Namespace', type: 'string' };
  return {
    blueprint: {
      identifier: singular,
      title: singular.replace(/\b\w/g, (c) => c.toUpperCase()),
      schema: { properties },
      relations: {},
    },
    resource: {
      kind: `${crd.spec.group}/${v.name}/${crd.spec.names.plural}`,
      selector: { query: 'true' },
      port: {
        entity: {
          mappings: [
            {
              identifier: '.metadata.name',
              title: '.metadata.name',
              blueprint: JSON.stringify(singular),
              properties: { namespace: '.metadata.namespace', '*': '.spec' },
            },
          ],
        },
      },
    },
  };
}

/**
 * Which CRDs match the `crdsToDiscover` query (one jq call for all of them): its first output must
 * be `true`; an error or a non-boolean skips the CRD (pkg/crd/crd.go, findMatchingCRDs).
 */
export async function matchCrds(
  query: string,
  crds: Crd[],
  env: Record<string, string> = jqEnvironment(),
): Promise<boolean[]> {
  if (crds.length === 0) return [];
  const out = await runJq(crds, `${prelude(env)}[.[] | (try ([first(${query}\n)] | .[0] == true) catch false)]`);
  return out as boolean[];
}
