import { describe, expect, it } from 'vitest';
import { createdOf } from './imageCreated.js';

describe('image build time', () => {
  it('prefers the config created, then the OCI annotation, then the label', () => {
    const label = { config: { Labels: { 'org.opencontainers.image.created': '2026-11-01T00:00:00Z' } } };
    expect(createdOf({ ...label, created: '2026-12-01T10:00:00.123456789Z' })).toBe('2026-12-01T10:00:00Z');
    expect(createdOf(label, { 'org.opencontainers.image.created': '2026-11-02T00:00:00Z' })).toBe(
      '2026-11-02T00:00:00Z',
    );
    expect(createdOf(label)).toBe('2026-11-01T00:00:00Z');
  });

  it('says nothing for reproducible-build epochs and values that are not times', () => {
    expect(createdOf({ created: '1970-01-01T00:00:00Z' })).toBeUndefined();
    expect(createdOf({ created: 'yesterday-ish' })).toBeUndefined();
    expect(createdOf({ created: 42 })).toBeUndefined();
    expect(createdOf(undefined)).toBeUndefined();
  });
});
