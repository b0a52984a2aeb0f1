import { describe, expect, it } from 'vitest';
import { crdManifest, RESOURCES, validateResource } from '../src/index.js';

// The schema side of the "Hardening" issue: user patterns and paths are bounded and constrained
// before the controller sees them (the controller checks the same in code).

const env = (delivery: object) => ({
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'Environment',
  metadata: { name: 'e' },
  spec: { cluster: { context: 'dev' }, namespace: 'shop', registry: { host: 'r:5000' }, delivery },
});
const helm = (h: object) => env({ method: 'helmRelease', helmRelease: { valuesPath: 'image.tag', ...h } });
const git = (g: object) =>
  env({ method: 'git', git: { repository: 'file:///repo.git', path: 'apps/{app}/values.yaml', ...g } });
const flow = (spec: object) => ({
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'PromotionFlow',
  metadata: { name: 'f' },
  spec: { stages: [{ environment: 'dev' }, { environment: 'prod' }], ...spec },
});

const problems = (obj: unknown) => {
  const r = validateResource(obj);
  return r.ok ? [] : r.error.problems;
};

type Schema = { properties?: Record<string, Schema>; [k: string]: unknown };
const specSchema = (kind: keyof typeof RESOURCES): Schema => {
  const crd = crdManifest(RESOURCES[kind]) as { spec: { versions: Array<{ schema: { openAPIV3Schema: Schema } }> } };
  return crd.spec.versions[0].schema.openAPIV3Schema.properties!.spec;
};

describe('value paths (valuesPath, digestPath)', () => {
  it.each(['image', 'image.tag', 'a-b.c_d.E9', 'x'.repeat(256)])('accepts %s', (p) => {
    expect(problems(helm({ valuesPath: p, digestPath: p }))).toEqual([]);
    expect(problems(git({ valuesPath: p }))).toEqual([]);
  });

  it.each(['image..tag', '.image', 'image.', 'image[0]', 'a b', 'spec/values', 'x'.repeat(257), ''])(
    'rejects %j naming the field',
    (p) => {
      expect(problems(helm({ valuesPath: p })).join('\n')).toMatch(/^spec\.delivery\.helmRelease\.valuesPath: /m);
      expect(problems(helm({ digestPath: p })).join('\n')).toMatch(/^spec\.delivery\.helmRelease\.digestPath: /m);
      expect(problems(git({ valuesPath: p })).join('\n')).toMatch(/^spec\.delivery\.git\.valuesPath: /m);
    },
  );

  it('carries a CEL rule refusing prototype segments (the apiserver checks it; see examples/invalid)', () => {
    const d = specSchema('Environment').properties!.delivery.properties!;
    for (const s of [
      d.helmRelease.properties!.valuesPath,
      d.helmRelease.properties!.digestPath,
      d.git.properties!.valuesPath,
    ]) {
      const rules = s['x-kubernetes-validations'] as Array<{ rule: string; message: string }>;
      expect(rules.map((r) => r.message)).toContain(
        'the segments __proto__, constructor and prototype are not allowed',
      );
      // The same regular expression, applied here as CEL's matches() would (RE2 semantics for this subset).
      const re = new RegExp(/'(.*)'/.exec(rules[0].rule)![1]);
      for (const bad of ['__proto__.x', 'a.constructor', 'a.prototype.b', 'prototype']) expect(re.test(bad)).toBe(true);
      for (const ok of ['proto.x', 'a.constructors', 'my_prototype', '__proto']) expect(re.test(ok)).toBe(false);
      expect(s.maxLength).toBe(256);
    }
  });
});

describe('git path template', () => {
  it.each(['values.yaml', 'clusters/{environment}/{app}/values.yaml', 'a/.hidden/v.yaml', 'a/b..c/v.yaml'])(
    'accepts %s',
    (p) => expect(problems(git({ path: p }))).toEqual([]),
  );

  it.each(['/etc/passwd', 'a//b.yaml', 'a/b/', 'a\\b.yaml', 'a b.yaml', 'x'.repeat(513)])('rejects %j', (p) => {
    expect(problems(git({ path: p })).join('\n')).toMatch(/^spec\.delivery\.git\.path: /m);
  });

  it('carries a CEL rule refusing ".", ".." and ".git" segments', () => {
    const s = specSchema('Environment').properties!.delivery.properties!.git.properties!.path;
    const rules = s['x-kubernetes-validations'] as Array<{ rule: string; message: string }>;
    const re = new RegExp(/'(.*)'/.exec(rules[0].rule)![1]);
    for (const bad of ['../x.yaml', 'a/../../x.yaml', './x.yaml', 'a/.', '.git/config', 'a/.GIT/hooks/x'])
      expect(re.test(bad), bad).toBe(true);
    for (const ok of ['a/b.yaml', 'a/.hidden/x', 'a/b..c/x', '.github/x.yaml', 'x.git/y'])
      expect(re.test(ok), ok).toBe(false);
  });
});

describe('tagPattern', () => {
  it('is bounded to 256 characters and keeps its default', () => {
    expect(problems(flow({ tagPattern: 'a'.repeat(256) }))).toEqual([]);
    expect(problems(flow({ tagPattern: 'a'.repeat(257) }))).toEqual([
      'spec.tagPattern: must NOT have more than 256 characters',
    ]);
    const s = specSchema('PromotionFlow').properties!.tagPattern;
    expect(s.default).toBe('^v\\d+\\.\\d+\\.\\d+');
    expect(s.maxLength).toBe(256);
  });
});
