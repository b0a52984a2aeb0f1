import { finishEntity } from '@kpromo/exporter';
import { describe, expect, it } from 'vitest';
import { ANNOTATION, backstageName, toBackstageEntity } from '../src/toBackstageEntity.js';

describe('toBackstageEntity', () => {
  it('turns Port identifiers into valid, unique Backstage names', () => {
    expect(backstageName('dev:shop:checkout')).toBe('dev.shop.checkout');
    const long = `dev:${'n'.repeat(60)}:${'a'.repeat(60)}`;
    const other = `dev:${'n'.repeat(60)}:${'a'.repeat(59)}b`;
    expect(backstageName(long).length).toBeLessThanOrEqual(63);
    expect(backstageName(long)).toMatch(/^[A-Za-z0-9]+([-_.][A-Za-z0-9]+)*$/);
    expect(backstageName(long)).not.toBe(backstageName(other));
  });

  it('maps an application to a Component with dependsOn and CR annotations', () => {
    const m = finishEntity(
      {
        identifier: 'dev:shop:checkout',
        blueprint: 'kpromoApplication',
        title: 'Checkout',
        team: 'team-a',
        properties: {},
        relations: { environments: ['dev:shop:dev'] },
      },
      'k',
    );
    const e = toBackstageEntity(
      m,
      {
        cluster: 'dev',
        apiVersion: 'promotions.kpromo.dev/v1alpha1',
        kind: 'Application',
        namespace: 'shop',
        name: 'checkout',
      },
      'p',
      (id) => `resource:default/${backstageName(id)}`,
    );
    expect(e.kind).toBe('Component');
    expect(e.metadata.name).toBe('dev.shop.checkout');
    expect(e.spec).toEqual({
      type: 'service',
      owner: 'team-a',
      lifecycle: 'production',
      dependsOn: ['resource:default/dev.shop.dev'],
    });
    expect(e.metadata.annotations).toMatchObject({
      [ANNOTATION.cluster]: 'dev',
      [ANNOTATION.kind]: 'Application',
      [ANNOTATION.namespace]: 'shop',
      'backstage.io/managed-by-location': 'kpromo:dev/promotions.kpromo.dev/v1alpha1/Application/shop/checkout',
      'backstage.io/kubernetes-id': 'checkout',
    });
  });

  it('falls back to a Resource typed by blueprint for unknown blueprints', () => {
    const m = finishEntity({ identifier: 'dev:x:w', blueprint: 'ExpWidget', properties: {}, relations: {} }, 'k');
    const e = toBackstageEntity(
      m,
      { cluster: 'dev', apiVersion: 'x/v1', kind: 'ExpWidget', namespace: 'x', name: 'w' },
      'p',
      String,
    );
    expect(e.kind).toBe('Resource');
    expect(e.spec).toEqual({ type: 'ExpWidget', owner: 'unknown' });
  });
});
