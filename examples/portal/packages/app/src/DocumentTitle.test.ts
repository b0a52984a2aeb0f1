import { describe, expect, it } from 'vitest';
import { titleForPath } from './DocumentTitle';

describe('titleForPath', () => {
  it('names every page of the portal that does not name itself', () => {
    expect(titleForPath('/catalog')).toBe('Catalog');
    // entity pages title themselves ("<entity> | <tab> | <app>")
    expect(titleForPath('/catalog/default/component/checkout/promotions')).toBeUndefined();
    expect(titleForPath('/search')).toBe('Search');
    expect(titleForPath('/settings/auth-providers')).toBe('Settings');
    expect(titleForPath('/catalog-graph')).toBe('Catalog graph');
    expect(titleForPath('/nope')).toBe('Page not found');
    // the Promotions pages set their own (plan name, section)
    expect(titleForPath('/promotions/plans/shop/p1')).toBeUndefined();
  });
});
