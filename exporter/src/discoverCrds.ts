import type { BlueprintConfig, ResourceConfig } from './config.js';
import { ID } from './defaults.js';
import { runJq } from './jq.js';

interface JsonSchema {
  type?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
}

export interface Crd {
  metadata: { name: string };
  spec: {
    group: string;
    names: { kind: string; plural: string };
    versions: Array<{ name: string; storage?: boolean; served?: boolean; schema?: { openAPIV3Schema?: JsonSchema } }>;
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

/** Which CRDs match the `crdsToDiscover` query (one jq call for all of them). */
export async function matchCrds(query: string, crds: Crd[]): Promise<boolean[]> {
  if (crds.length === 0) return [];
  const out = await runJq(crds, `[.[] | (try ([(${query}\n)] | .[0] == true) catch false)]`);
  return out as boolean[];
}
