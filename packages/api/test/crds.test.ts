import { describe, expect, it } from 'vitest';
import { allCrdManifests, crdManifest, KINDS, RESOURCES } from '../src/index.js';

type Schema = Record<string, unknown>;

/** Walks a schema and reports constructs Kubernetes structural schemas forbid. */
function structuralProblems(s: Schema, path = ''): string[] {
  const out: string[] = [];
  for (const bad of ['$ref', 'anyOf', 'oneOf', 'allOf', 'const', 'patternProperties', '$schema', '$id']) {
    if (bad in s) out.push(`${path}: ${bad}`);
  }
  if (!('type' in s) && !s['x-kubernetes-preserve-unknown-fields'] && !s['x-kubernetes-int-or-string'])
    out.push(`${path}: no type`);
  if (s.properties && s.additionalProperties !== undefined) out.push(`${path}: properties with additionalProperties`);
  for (const [k, v] of Object.entries((s.properties as Record<string, Schema>) ?? {}))
    out.push(...structuralProblems(v, `${path}.${k}`));
  if (s.items) out.push(...structuralProblems(s.items as Schema, `${path}[]`));
  if (typeof s.additionalProperties === 'object')
    out.push(...structuralProblems(s.additionalProperties as Schema, `${path}{}`));
  return out;
}

describe('CRD manifests', () => {
  it('cover the eight kinds in one group and version', () => {
    const crds = allCrdManifests() as Array<{
      spec: { group: string; versions: Array<{ name: string }>; names: { kind: string } };
    }>;
    expect(crds.map((c) => c.spec.names.kind).sort()).toEqual([
      'AgentPolicy',
      'Application',
      'Environment',
      'LineStop',
      'Notification',
      'OrgPolicy',
      'PromotionFlow',
      'PromotionPlan',
    ]);
    expect(new Set(crds.map((c) => c.spec.group)).size).toBe(1);
    expect(crds.every((c) => c.spec.versions[0].name === 'v1alpha1')).toBe(true);
  });

  it.each(KINDS)('%s has a structural schema with conditions and observedGeneration in status', (kind) => {
    const crd = crdManifest(RESOURCES[kind]) as { spec: { versions: Array<{ schema: { openAPIV3Schema: Schema } }> } };
    const root = crd.spec.versions[0].schema.openAPIV3Schema;
    expect(structuralProblems(root)).toEqual([]);
    const status = (root.properties as Record<string, Schema>).status.properties as Record<string, Schema>;
    expect(status.observedGeneration.type).toBe('integer');
    expect((status.conditions.items as Schema).required).toEqual(
      expect.arrayContaining(['type', 'status', 'reason', 'message', 'lastTransitionTime']),
    );
  });
});
