import { describe, expect, it } from 'vitest';
import {
  formatDuration,
  formatRelative,
  readableMessage,
  readableReason,
  shortDigest,
  shortRef,
  skippedReasons,
  summarizeNoCandidates,
  summarizeReasons,
} from './format';

const D = (c: string) => `sha256:${c.repeat(64)}`;

describe('format', () => {
  it('shortens digests to sha256: and 12 hex digits, in values and inside messages', () => {
    expect(shortDigest(D('a'))).toBe('sha256:aaaaaaaaaaaa');
    expect(shortDigest('v1.0.0')).toBe('v1.0.0');
    expect(shortDigest(undefined)).toBeUndefined();
    expect(readableMessage(`checkout: dev runs ${D('b')}, stable runs ${D('c')}`)).toBe(
      'checkout: dev runs sha256:bbbbbbbbbbbb…, stable runs sha256:cccccccccccc…',
    );
  });

  it('turns the backend\'s "no release candidates" list into one line without digests', () => {
    const msg = `no release candidates stable -> prod: checkout: prod already runs ${D('a')}; cart: prod already runs ${D('b')}; ledger: not healthy in stable (HTTP 400)`;
    expect(summarizeNoCandidates(msg)).toBe(
      'Nothing to promote stable → prod: 3 applications skipped (already up to date ×2, not healthy in stable).',
    );
    expect(summarizeNoCandidates('no release candidates dev -> stable: no applications')).toBe(
      'Nothing to promote dev → stable: no applications.',
    );
    expect(summarizeNoCandidates(`boom ${D('f')}`)).toBe('boom sha256:ffffffffffff…');
    // At thousands of applications the message lists ten and counts every one by reason.
    const many = `no release candidates qa -> stable: ${Array.from({ length: 10 }, (_, i) => `app-${i}: stable already runs ${D('a')}`).join('; ')}; and 4392 more (2 SourceNotHealthy, 4400 UpToDate) (HTTP 400)`;
    expect(summarizeNoCandidates(many)).toBe(
      'Nothing to promote qa → stable: 4402 applications skipped (not healthy in the source ×2, already up to date ×4400).',
    );
  });

  it('counts skip reasons from skippedByReason when the answer lists only some', () => {
    const listed = [{ reason: 'SourceNotHealthy' }];
    expect(skippedReasons({ skipped: listed, skippedByReason: { SourceNotHealthy: 1, UpToDate: 3 } })).toEqual([
      'SourceNotHealthy',
      'UpToDate',
      'UpToDate',
      'UpToDate',
    ]);
    expect(skippedReasons({ skipped: listed })).toEqual(['SourceNotHealthy']);
  });

  it('says skip reasons in words', () => {
    expect(readableReason('UpToDate')).toBe('already up to date');
    expect(readableReason('SourceNotHealthy')).toBe('not healthy in the source');
    expect(summarizeReasons(['UpToDate', 'UpToDate', 'TagPatternMismatch'])).toBe(
      'already up to date ×2, tag does not match the flow pattern',
    );
  });

  it('gives relative times and durations people read at a glance', () => {
    const now = Date.parse('2026-12-02T12:00:00Z');
    expect(formatRelative('2026-12-02T11:59:50Z', now)).toBe('just now');
    // a little ahead of this browser's clock is also "just now", never "in a moment"
    expect(formatRelative('2026-12-02T12:00:30Z', now)).toBe('just now');
    expect(formatRelative('2026-12-02T11:55:00Z', now)).toBe('5 min ago');
    expect(formatRelative('2026-12-02T09:00:00Z', now)).toBe('3 h ago');
    expect(formatRelative('2026-11-30T12:00:00Z', now)).toBe('2 days ago');
    expect(formatRelative('2026-12-02T12:10:00Z', now)).toBe('in 10 min');
    expect(formatRelative('2026-01-02T12:00:00Z', now)).toBe('2026-01-02');
    expect(formatDuration(63_000)).toBe('1m 3s');
    expect(formatDuration(4_000)).toBe('4s');
    expect(formatDuration(2 * 3600_000 + 5 * 60_000)).toBe('2h 5m');
  });

  it('names people by their entity name', () => {
    expect(shortRef('user:development/guest')).toBe('guest');
    expect(shortRef('group:default/team-shop')).toBe('team-shop');
    expect(shortRef('alice')).toBe('alice');
  });
});
