import { describe, expect, it } from 'vitest';
import { setImageInYaml } from './yamlEdit.js';

const v = { image: 'reg.local/prod/app', tag: 'v1.2.0-20260101T000000Z', digest: `sha256:${'a'.repeat(64)}` };

describe('setImageInYaml', () => {
  it('sets tag, digest and an existing repository of an object, keeping comments', () => {
    const src =
      '# values for app\nimage:\n  repository: reg.local/dev/app # where from\n  tag: v1.1.0\nreplicas: 2 # keep\n';
    const out = setImageInYaml(src, 'image', v);
    expect(out.changed).toBe(true);
    expect(out.text).toBe(
      `# values for app\nimage:\n  repository: reg.local/prod/app # where from\n  tag: ${v.tag}\n  digest: ${v.digest}\nreplicas: 2 # keep\n`,
    );
    expect(setImageInYaml(out.text, 'image', v)).toEqual({ text: out.text, changed: false });
  });

  it('replaces a string with the full reference at a nested path', () => {
    const src = 'spec:\n  values:\n    image: "reg.local/dev/app:v1" # pinned\n';
    const out = setImageInYaml(src, 'spec.values.image', v);
    expect(out.text).toBe(`spec:\n  values:\n    image: "reg.local/prod/app:${v.tag}@${v.digest}" # pinned\n`);
    expect(setImageInYaml(out.text, 'spec.values.image', v).changed).toBe(false);
  });

  it('creates a missing path and rejects lists and bad YAML', () => {
    expect(setImageInYaml('a: 1\n', 'b.image', v).text).toBe(
      `a: 1\nb:\n  image: reg.local/prod/app:${v.tag}@${v.digest}\n`,
    );
    expect(() => setImageInYaml('image: [1]\n', 'image', v)).toThrow(/is a list/);
    expect(() => setImageInYaml('a: [\n', 'image', v)).toThrow(/invalid YAML/);
  });
});
