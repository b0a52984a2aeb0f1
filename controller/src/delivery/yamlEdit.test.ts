import { describe, expect, it } from 'vitest';
import { checkRepoFilePath, parseValuesPath, setImageInYaml, ValuesPathError, YamlEditError } from './yamlEdit.js';

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
    expect(() => setImageInYaml('image: [1]\n', 'image', v)).toThrow(YamlEditError);
    expect(() => setImageInYaml('a: [\n', 'image', v)).toThrow(/invalid YAML/);
  });
});

describe('value path checks (prototype pollution)', () => {
  const polluted = () => (({}) as Record<string, unknown>).polluted;

  it.each(['__proto__.polluted', 'constructor.prototype.polluted', 'a.__proto__.polluted', 'prototype'])(
    'refuses %s with a clear error and leaves Object.prototype alone',
    (path) => {
      for (const text of ['a: 1\n', '', '__proto__:\n  x: 1\n', 'constructor: {}\n']) {
        let err: unknown;
        try {
          setImageInYaml(text, path, v);
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(ValuesPathError);
        expect((err as Error).message).toMatch(
          /^valuesPath ".*": segment "(__proto__|constructor|prototype)" is not allowed \(__proto__, constructor and prototype are reserved\)$/,
        );
      }
      expect(polluted()).toBeUndefined();
    },
  );

  it('names the field and the rule for malformed paths', () => {
    expect(() => parseValuesPath('image..tag')).toThrow(
      'valuesPath "image..tag": must be dot-separated keys of letters, digits, "_" and "-" (e.g. image.tag); segment "" is not',
    );
    expect(() => parseValuesPath('', 'delivery.git.valuesPath')).toThrow('delivery.git.valuesPath "": is empty');
    expect(() => parseValuesPath('a'.repeat(257))).toThrow(/is longer than 256 characters/);
    expect(() => parseValuesPath(undefined)).toThrow('valuesPath: must be a string');
    expect(parseValuesPath('spec.values.image-1_x')).toEqual(['spec', 'values', 'image-1_x']);
  });

  it("turns the yaml library's own errors into YamlEditError", () => {
    expect(() => setImageInYaml('just a string\n', 'image.tag', v)).toThrow(YamlEditError);
    expect(() => setImageInYaml('a: &x 1\nb: *x\n', 'b.tag', v)).toThrow(YamlEditError);
  });
});

describe('checkRepoFilePath', () => {
  it('keeps the file inside the repository checkout', () => {
    expect(checkRepoFilePath('clusters/prod/cart/values.yaml')).toBe('clusters/prod/cart/values.yaml');
    expect(checkRepoFilePath('a/.hidden/b..c.yaml')).toBe('a/.hidden/b..c.yaml');
    for (const bad of ['../x.yaml', 'a/../../x.yaml', '/etc/passwd', 'C:/x', 'a//b', './x', '.git/config', 'a\\b', ''])
      expect(() => checkRepoFilePath(bad), bad).toThrow(/^delivery\.git\.path/);
  });
});
