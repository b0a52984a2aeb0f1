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

// Files as Flux's image automation docs and tests write them (image-automation-controller
// docs/spec/v1/imageupdateautomations.md, internal/update/testdata/setters): kpromo writes a marked
// field in the marker's form and changes nothing else, byte for byte.
describe('Flux setter markers ($imagepolicy)', () => {
  const full = `${v.image}:${v.tag}@${v.digest}`;

  it('a Deployment container image with the basic marker gets the full reference; the rest of the file is untouched', () => {
    const src = [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'spec:',
      '  template:',
      '    spec:',
      '      containers:',
      '      - name: my-app',
      '        image: ghcr.io/my-org/my-app:4.0.6 # {"$imagepolicy": "flux-system:my-policy"}',
      '        args: [ --a,   --b ]   # spacing kept',
      '',
    ].join('\n');
    const out = setImageInYaml(src, 'spec.template.spec.containers.0.image', v);
    expect(out).toEqual({
      text: src.replace('ghcr.io/my-org/my-app:4.0.6', full),
      changed: true,
    });
    expect(setImageInYaml(out.text, 'spec.template.spec.containers.0.image', v).changed).toBe(false);
  });

  it('HelmRelease values with :name, :tag and :digest markers get each part', () => {
    const src = [
      'apiVersion: helm.toolkit.fluxcd.io/v2',
      'kind: HelmRelease',
      'spec:',
      '  values:',
      '    image:',
      '      repository: ghcr.io/my-org/my-app # {"$imagepolicy": "flux-system:my-policy:name"}',
      '      tag: 4.0.6 # {"$imagepolicy": "flux-system:my-policy:tag"}',
      '      digest: sha256:6129bb944cada32b4662eafd13fd9904d34c77286bf2ec4523eaedb711757cb0 # {"$imagepolicy": "flux-system:my-policy:digest"}',
      '',
    ].join('\n');
    const out = setImageInYaml(src, 'spec.values.image', v);
    expect(out.text).toBe(
      src
        .replace('ghcr.io/my-org/my-app', v.image)
        .replace('tag: 4.0.6', `tag: ${v.tag}`)
        .replace(/sha256:6129\w+/, v.digest),
    );
    expect(setImageInYaml(out.text, 'spec.values.image', v).changed).toBe(false);
  });

  it('a kustomize images entry sets only the marked newName/newTag/newDigest and adds no keys', () => {
    const src = [
      '# This is not intended to be a working kustomization',
      'images:',
      '  - name: container',
      '    newName: replaced # {"$imagepolicy": "automation-ns:policy:name"}',
      '    newTag: v1 # {"$imagepolicy": "automation-ns:policy:tag"}',
      '    newDigest: sha256:1234567890abcdef # {"$imagepolicy": "automation-ns:policy-with-digest:digest"}',
      '',
    ].join('\n');
    expect(setImageInYaml(src, 'images.0', v).text).toBe(
      src
        .replace('newName: replaced', `newName: ${v.image}`)
        .replace('newTag: v1', `newTag: ${v.tag}`)
        .replace('sha256:1234567890abcdef', v.digest),
    );
  });

  it('a marked tag alone is all that is written: no digest key is added beside it', () => {
    const src = 'image:\n  repository: reg.local/prod/app\n  tag: v1 # {"$imagepolicy": "flux-system:app:tag"}\n';
    expect(setImageInYaml(src, 'image', v).text).toBe(src.replace('tag: v1', `tag: ${v.tag}`));
  });

  it('a string at the path takes the form its marker names, quoted as before or as it must be', () => {
    const at = (marker: string, value = "'old'") => `image: ${value} # {"$imagepolicy": "flux-system:app${marker}"}\n`;
    expect(setImageInYaml(at(':tag'), 'image', v).text).toBe(at(':tag', `'${v.tag}'`));
    expect(setImageInYaml(at(':digest', '"old"'), 'image', v).text).toBe(at(':digest', `"${v.digest}"`));
    expect(setImageInYaml(at(':name', 'old'), 'image', v).text).toBe(at(':name', v.image));
    expect(setImageInYaml(at('', 'old'), 'image', v).text).toBe(at('', full));
    // A tag that plain YAML would read as a number is quoted, so it stays a string.
    expect(setImageInYaml(at(':tag', 'old'), 'image', { ...v, tag: '1.10' }).text).toBe(at(':tag', '"1.10"'));
  });

  it('refuses a malformed marker at the path, naming the field', () => {
    const src = 'image:\n  tag: v1 # {"$imagepolicy": "flux-system:app:newTag"}\n';
    expect(() => setImageInYaml(src, 'image', v)).toThrow(YamlEditError);
    expect(() => setImageInYaml(src, 'image', v)).toThrow(/^image\.tag: Flux setter marker .* ends in ":newTag"/);
  });

  it('inserts a missing digest as a line of its own, in the list item column, keeping CRLF line ends', () => {
    const src = 'apps:\r\n- tag: v1 # old\r\n  name: a\r\n# trailing\r\n';
    expect(setImageInYaml(src, 'apps.0', v).text).toBe(
      `apps:\r\n- tag: ${v.tag} # old\r\n  name: a\r\n  digest: ${v.digest}\r\n# trailing\r\n`,
    );
  });

  it('re-serializes (keeping comments and markers) only when no minimal edit exists', () => {
    const src = 'image: {tag: v1} # {"$imagepolicy": "flux-system:app"}\n# end\n';
    const out = setImageInYaml(src, 'image', v);
    expect(out.text).toContain(`digest: ${v.digest}`);
    expect(out.text).toContain('# {"$imagepolicy": "flux-system:app"}');
    expect(out.text).toContain('# end');
  });
});

describe('minimal edits fall back to the Document API whenever they would read back differently', () => {
  it('a YAML 1.1 document keeps keys and values strings (found by the fuzz test)', () => {
    const src = '%YAML 1.1\n---\na: <<\n';
    const out = setImageInYaml(src, '0', v);
    expect(out.text).toBe(`%YAML 1.1\n---\na: <<\n"0": ${v.image}:${v.tag}@${v.digest}\n`);
    expect(setImageInYaml(out.text, '0', v).changed).toBe(false);
    const yes = 'image:\n  tag: v1 # {"$imagepolicy": "ns:p:tag"}\n';
    expect(setImageInYaml(`%YAML 1.1\n---\n${yes}`, 'image', { ...v, tag: 'yes' }).text).toBe(
      `%YAML 1.1\n---\nimage:\n  tag: "yes" # {"$imagepolicy": "ns:p:tag"}\n`,
    );
  });
});
