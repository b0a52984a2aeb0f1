import { finishEntity } from '@kpromo/exporter';
import { describe, expect, it } from 'vitest';
import {
  ANNOTATION,
  backstageName,
  DEFAULT_OWNER,
  entityName,
  ownerRef,
  toBackstageEntity,
} from '../src/toBackstageEntity.js';

const origin = {
  cluster: 'dev',
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'Application',
  namespace: 'shop',
  name: 'checkout',
};

function checkout() {
  return finishEntity(
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
}

describe('toBackstageEntity', () => {
  it('turns identifiers into valid, unique Backstage names', () => {
    expect(backstageName('dev:shop:checkout')).toBe('dev.shop.checkout');
    const long = `dev:${'n'.repeat(60)}:${'a'.repeat(60)}`;
    const other = `dev:${'n'.repeat(60)}:${'a'.repeat(59)}b`;
    expect(backstageName(long).length).toBeLessThanOrEqual(63);
    expect(backstageName(long)).toMatch(/^[A-Za-z0-9]+([-_.][A-Za-z0-9]+)*$/);
    expect(backstageName(long)).not.toBe(backstageName(other));
  });

  it('names entities after the CR: readable by default, namespaced or fully qualified on request', () => {
    expect(entityName(origin)).toEqual({ namespace: 'default', name: 'checkout' });
    expect(entityName(origin, 'namespace')).toEqual({ namespace: 'shop', name: 'checkout' });
    expect(entityName(origin, 'qualified')).toEqual({ namespace: 'default', name: 'dev.shop.checkout' });
    // stable: the same CR always gets the same name
    expect(entityName({ ...origin })).toEqual(entityName(origin));
  });

  it('makes teams group refs, so ownership resolves to Group entities', () => {
    expect(ownerRef('team-a')).toBe('group:default/team-a');
    expect(ownerRef('group:payments/team-b')).toBe('group:payments/team-b');
    expect(ownerRef('user:default/alice')).toBe('user:default/alice');
  });

  it('maps an application to a Component with dependsOn and CR annotations', () => {
    const e = toBackstageEntity(checkout(), origin, 'p', (id) => `resource:default/${id.split(':')[2]}`);
    expect(e.kind).toBe('Component');
    expect(e.metadata).toMatchObject({ name: 'checkout', namespace: 'default', title: 'Checkout' });
    expect(e.spec).toEqual({
      type: 'service',
      owner: 'group:default/team-a',
      lifecycle: 'production',
      dependsOn: ['resource:default/dev'],
    });
    expect(e.metadata.annotations).toMatchObject({
      [ANNOTATION.cluster]: 'dev',
      [ANNOTATION.kind]: 'Application',
      [ANNOTATION.namespace]: 'shop',
      [ANNOTATION.name]: 'checkout',
      [ANNOTATION.portIdentifier]: 'dev:shop:checkout',
      'backstage.io/managed-by-location': 'kpromo:dev/promotions.kpromo.dev/v1alpha1/Application/shop/checkout',
      'backstage.io/kubernetes-id': 'checkout',
    });
    const namespaced = toBackstageEntity(checkout(), origin, 'p', String, { naming: 'namespace' });
    expect(namespaced.metadata).toMatchObject({ name: 'checkout', namespace: 'shop' });
  });

  it('gives kinds without a team the configured owner (environments, flows, plans)', () => {
    const m = finishEntity(
      { identifier: 'dev:shop:stable', blueprint: 'kpromoEnvironment', properties: {}, relations: {} },
      'k',
    );
    const env = { ...origin, kind: 'Environment', name: 'stable' };
    const e = toBackstageEntity(m, env, 'p', String);
    expect(e).toMatchObject({
      kind: 'Resource',
      metadata: { name: 'stable', namespace: 'default' },
      spec: { type: 'kpromo-environment', owner: DEFAULT_OWNER },
    });
    expect(toBackstageEntity(m, env, 'p', String, { defaultOwner: 'group:default/sre' }).spec?.owner).toBe(
      'group:default/sre',
    );
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
    expect(e.spec).toEqual({ type: 'ExpWidget', owner: DEFAULT_OWNER });
  });
});
