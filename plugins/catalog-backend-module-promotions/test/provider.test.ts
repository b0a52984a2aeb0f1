import { finishEntity } from '@kpromo/exporter';
import { describe, expect, it } from 'vitest';
import { PromotionsEntityProvider } from '../src/provider.js';

const log = () => {
  const warnings: string[] = [];
  const l = {
    debug: () => undefined,
    info: () => undefined,
    warn: (_o: object, m?: string) => void warnings.push(m ?? ''),
    error: () => undefined,
    child: () => l,
  };
  return { l, warnings };
};

const app = (cluster: string, ns: string, name: string, envs: string[] = []) =>
  [
    finishEntity(
      {
        identifier: `${cluster}:${ns}:${name}`,
        blueprint: 'kpromoApplication',
        team: 'team-shop',
        properties: {},
        relations: { environments: envs.map((e) => `${cluster}:${ns}:${e}`) },
      },
      'k',
    ),
    { cluster, apiVersion: 'promotions.kpromo.dev/v1alpha1', kind: 'Application', namespace: ns, name },
  ] as const;

function provider(naming?: 'name' | 'namespace' | 'qualified') {
  const { l, warnings } = log();
  const p = new PromotionsEntityProvider({
    config: {} as never,
    clusters: [],
    log: l,
    mapping: naming ? { naming } : undefined,
  });
  const entities = () =>
    (p as unknown as { entities: Map<string, { metadata: { name: string; namespace: string }; spec: object }> })
      .entities;
  return { p, warnings, entities };
}

describe('PromotionsEntityProvider naming', () => {
  it('relates entities by their readable names, also before the target was seen', () => {
    const { p, entities } = provider();
    p.put(...app('dev', 'shop', 'checkout', ['stable']));
    const [e] = entities().values();
    expect(e.metadata).toMatchObject({ name: 'checkout', namespace: 'default' });
    expect(e.spec).toMatchObject({ dependsOn: ['resource:default/stable'] });
  });

  it('keeps the first of two CRs that map to the same entity and says how to name them apart', () => {
    const { p, warnings, entities } = provider();
    p.put(...app('dev', 'shop', 'checkout'));
    p.put(...app('dev', 'other', 'checkout'));
    p.put(...app('dev', 'other', 'checkout')); // its next watch event is not warned about again
    expect(p.size).toBe(1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('kpromo.catalog.entityNames');
    // once the first is gone, the second may take the name
    p.remove('kpromoApplication', 'dev:shop:checkout');
    p.put(...app('dev', 'other', 'checkout'));
    expect([...entities().values()].map((e) => e.metadata.name)).toEqual(['checkout']);
  });

  it('keeps both apart with namespace naming', () => {
    const { p, warnings, entities } = provider('namespace');
    p.put(...app('dev', 'shop', 'checkout'));
    p.put(...app('dev', 'other', 'checkout'));
    expect(warnings).toEqual([]);
    expect([...entities().values()].map((e) => `${e.metadata.namespace}/${e.metadata.name}`).sort()).toEqual([
      'other/checkout',
      'shop/checkout',
    ]);
  });
});
