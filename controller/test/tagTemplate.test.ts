import { describe, expect, it } from 'vitest';
import { formatTimestamp, renderTag, versionOf } from '../src/reconcile/tagTemplate.js';

const time = new Date('2026-12-02T10:15:00.123Z');
const digest = `sha256:${'ab12'.repeat(16)}`;

describe('renderTag', () => {
  it('renders the default {version}-{timestamp}', () => {
    expect(renderTag(undefined, { tag: 'v1.0.1', digest, time })).toBe('v1.0.1-20261202T101500Z');
  });
  it('takes the version part of a pre-release tag and supports {tag} and {shortDigest}', () => {
    expect(versionOf('v2.3.4-rc.1+abc')).toBe('v2.3.4');
    expect(renderTag('{version}-{shortDigest}', { tag: 'v2.3.4-rc.1', digest, time })).toBe('v2.3.4-ab12ab12ab12');
    expect(renderTag('rel-{tag}', { tag: 'v1.0.0', digest, time })).toBe('rel-v1.0.0');
  });
  it('sanitises characters that are not valid in an OCI tag and caps the length', () => {
    expect(renderTag('{tag}', { tag: 'v1+build', digest, time })).toBe('v1-build');
    expect(renderTag('{tag}', { tag: 'x'.repeat(200), digest, time })).toHaveLength(128);
    expect(renderTag('.{tag}', { tag: 'a', digest, time })).toBe('_.a');
  });
  it('rejects unknown placeholders with the template in the message', () => {
    expect(() => renderTag('{version}-{date}', { tag: 'v1', digest, time })).toThrow(/unknown placeholder \{date\}/);
  });
  it('formats UTC timestamps compactly', () => {
    expect(formatTimestamp(new Date('2027-01-05T03:04:05Z'))).toBe('20270105T030405Z');
  });
});
