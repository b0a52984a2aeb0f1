import type { Application, Environment } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import type { KubeRest } from '../kube/rest.js';
import { patchHelmReleaseValues, valuesPatch } from './helmRelease.js';
import { ValuesPathError } from './yamlEdit.js';

const polluted = () => (({}) as Record<string, unknown>).polluted;

describe('valuesPatch', () => {
  it('builds nested values without prototypes', () => {
    const v = valuesPatch([
      ['image.tag', 'v1'],
      ['image.digest', 'sha256:x'],
    ]);
    expect(JSON.parse(JSON.stringify(v))).toEqual({ image: { tag: 'v1', digest: 'sha256:x' } });
    expect(Object.getPrototypeOf(v)).toBeNull();
    expect(Object.getPrototypeOf(v.image)).toBeNull();
  });

  it.each(['__proto__.polluted', 'constructor.prototype.polluted', 'image.__proto__.polluted'])(
    'refuses %s with a clear error and does not pollute Object.prototype',
    (path) => {
      expect(() => valuesPatch([[path, 'yes', 'delivery.helmRelease.digestPath']])).toThrow(
        new ValuesPathError(
          'delivery.helmRelease.digestPath',
          `delivery.helmRelease.digestPath "${path}": segment "${path.includes('__proto__') ? '__proto__' : 'constructor'}" is not allowed (__proto__, constructor and prototype are reserved)`,
        ),
      );
      expect(polluted()).toBeUndefined();
    },
  );

  it('refuses paths where one value would overwrite the other', () => {
    expect(() =>
      valuesPatch([
        ['image', 'v1', 'delivery.helmRelease.valuesPath'],
        ['image.digest', 'sha256:x', 'delivery.helmRelease.digestPath'],
      ]),
    ).toThrow(
      'delivery.helmRelease.digestPath "image.digest" overlaps delivery.helmRelease.valuesPath "image": one value would overwrite the other',
    );
    expect(() =>
      valuesPatch([
        ['a.b', '1'],
        ['a.b', '2'],
      ]),
    ).toThrow(/overlaps/);
  });
});

describe('patchHelmReleaseValues', () => {
  const env = (helmRelease: object) =>
    ({
      metadata: { name: 'prod', namespace: 'ns' },
      spec: { namespace: 'shop', delivery: { method: 'helmRelease', helmRelease } },
    }) as unknown as Environment;
  const app = { metadata: { name: 'cart' } } as Application;

  it('checks the paths before any request and sends prototype-free values', async () => {
    const sent: unknown[] = [];
    const rest = {
      clusterName: 'prod',
      mergePatch: async (_p: string, body: unknown) => {
        sent.push(JSON.parse(JSON.stringify(body)));
        return {};
      },
    } as unknown as KubeRest;
    await expect(
      patchHelmReleaseValues(
        rest,
        env({ valuesPath: 'image.tag', digestPath: '__proto__.polluted' }),
        app,
        'v1',
        'sha256:x',
      ),
    ).rejects.toThrow(/^delivery\.helmRelease\.digestPath "__proto__\.polluted": segment "__proto__" is not allowed/);
    expect(sent).toEqual([]);
    expect(polluted()).toBeUndefined();
    await patchHelmReleaseValues(
      rest,
      env({ valuesPath: 'image.tag', digestPath: 'image.digest' }),
      app,
      'v1',
      'sha256:x',
    );
    expect(sent).toEqual([{ spec: { values: { image: { tag: 'v1', digest: 'sha256:x' } } } }]);
  });
});
