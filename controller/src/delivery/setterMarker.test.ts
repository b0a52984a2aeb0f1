import { describe, expect, it } from 'vitest';
import { readSetterMarker } from './setterMarker.js';

// The marker forms of Flux's image automation docs (image-automation-controller
// docs/spec/v1/imageupdateautomations.md), as the YAML library hands over a line comment.
describe('readSetterMarker', () => {
  it.each([
    [' {"$imagepolicy": "flux-system:my-policy"}', 'image'],
    [' {"$imagepolicy": "flux-system:my-policy:name"}', 'name'],
    [' {"$imagepolicy": "flux-system:my-policy:tag"}', 'tag'],
    [' {"$imagepolicy": "flux-system:my-policy:digest"}', 'digest'],
  ] as const)('reads %s as the %s setter', (comment, field) => {
    expect(readSetterMarker(comment)).toEqual({
      marker: {
        policy: { namespace: 'flux-system', name: 'my-policy' },
        field,
        setter: JSON.parse(comment).$imagepolicy,
      },
    });
  });

  it('strips further # like kyaml and accepts dotted policy names', () => {
    expect(readSetterMarker('#  {"$imagepolicy":"automation-ns:policy.v2"}  ')).toMatchObject({
      marker: { policy: { namespace: 'automation-ns', name: 'policy.v2' }, field: 'image' },
    });
  });

  it('leaves plain comments and other JSON comments alone', () => {
    for (const c of [
      undefined,
      '',
      ' keep me',
      ' pinned by $imagepolicy later',
      ' {"$ref": "#/definitions/x"}',
      ' ["$imagepolicy"]',
    ])
      expect(readSetterMarker(c), String(c)).toBeUndefined();
  });

  it.each([
    [' {"$imagepolicy": "flux-system"}', /wrong number of ":"-separated parts/],
    [' {"$imagepolicy": "a:b:c:d"}', /wrong number of ":"-separated parts/],
    [' {"$imagepolicy": "flux-system:my-policy:newTag"}', /ends in ":newTag", which Flux does not set/],
    [' {"$imagepolicy": "Flux_System:p"}', /names namespace "Flux_System", not a Kubernetes namespace/],
    [' {"$imagepolicy": "ns:../p"}', /names ImagePolicy "..\/p", not a Kubernetes object name/],
    [' {"$imagepolicy": 3}', /is not a string/],
    [' {"$imagepolicy": "ns:p", "n": 1}', /non-string values/],
  ])('reports a marker Flux could not use: %s', (comment, problem) => {
    const read = readSetterMarker(comment);
    expect(read && 'problem' in read && read.problem).toMatch(problem);
    expect(read && 'problem' in read && read.problem).toMatch(/expected "<namespace>:<name>", optionally followed by/);
  });
});
