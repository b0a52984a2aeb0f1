import { describe, expect, it } from 'vitest';
import { notificationOf } from '../../../test/support/notifierHarness.js';
import { imagesOfEvent } from '../imageCommits.js';
import { resolveTarget } from './index.js';

describe('resolveTarget', () => {
  it('finds the one target and its module', () => {
    const r = resolveTarget(notificationOf('n', { discord: { webhookSecretRef: { name: 'd' } } }), 'team-a/n');
    expect('kind' in r && r.kind).toBe('discord');
  });

  it('refuses none, two, and target specs the CRD rules refuse', () => {
    expect(resolveTarget(notificationOf('n', {}), 'team-a/n')).toEqual({
      problem:
        'Notification team-a/n: set exactly one of spec.webhook, spec.slack, spec.msteams, spec.discord, spec.github (found none)',
    });
    const two = notificationOf('n', { webhook: { url: 'https://x' }, slack: { webhookSecretRef: { name: 's' } } });
    expect(resolveTarget(two, 'team-a/n')).toEqual({
      problem:
        'Notification team-a/n: set exactly one of spec.webhook, spec.slack, spec.msteams, spec.discord, spec.github (found spec.webhook and spec.slack)',
    });
    expect(resolveTarget(notificationOf('n', { slack: { tokenSecretRef: { name: 's' } } }), 'team-a/n')).toEqual({
      problem: 'Notification team-a/n: spec.slack.channel is required with tokenSecretRef',
    });
    const both = notificationOf('n', {
      slack: { tokenSecretRef: { name: 's' }, webhookSecretRef: { name: 'w' }, channel: 'c' },
    });
    expect(resolveTarget(both, 'team-a/n')).toHaveProperty(
      'problem',
      expect.stringContaining('exactly one of webhookSecretRef'),
    );
  });
});

describe('imagesOfEvent', () => {
  const base = { namespace: 'a', plan: 'p', flow: 'f', from: 'dev', to: 'prod', time: 't' };
  const candidates = [
    { application: 'web', from: { digest: 'sha256:1' } },
    { application: 'api', from: { digest: 'sha256:2' } },
  ];
  it('is the app of an app event, every candidate of PlanApproved/PlanWaiting, nothing for other plan events', () => {
    expect(imagesOfEvent({ ...base, type: 'AppPromoted', application: 'web', digest: 'sha256:9' }, candidates)).toEqual(
      [{ application: 'web', digest: 'sha256:9' }],
    );
    expect(imagesOfEvent({ ...base, type: 'PlanApproved' }, candidates)).toEqual([
      { application: 'web', digest: 'sha256:1' },
      { application: 'api', digest: 'sha256:2' },
    ]);
    expect(imagesOfEvent({ ...base, type: 'PlanComplete' }, candidates)).toEqual([]);
  });
});
