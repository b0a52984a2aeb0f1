import { describe, expect, it } from 'vitest';
import type { SecretObject } from '../credentials/secrets.js';
import { NotificationSecrets } from './secretRefs.js';

const LABEL = { 'promotions.kpromo.dev/credential': 'true' };
const dest = (d: string) => ({ 'promotions.kpromo.dev/destinations': d });

function secrets(objects: Record<string, Partial<SecretObject>>) {
  return new NotificationSecrets(
    {
      readSecretObject: async (namespace, name) =>
        objects[name]
          ? { namespace, name, type: 'Opaque', data: {}, labels: {}, annotations: {}, ...objects[name] }
          : undefined,
    },
    'team-a',
    'team-a/n',
  );
}

describe('NotificationSecrets (what one delivery may read and send)', () => {
  it('refuses a Secret that did not opt in before looking at its data (no key oracle)', async () => {
    const s = secrets({ db: { data: { password: 'pw' } } });
    const refusal =
      'Secret team-a/db (spec.webhook.secretRef of Notification team-a/n) is not marked as a credential kpromo may send: its owner must label it promotions.kpromo.dev/credential=true and list where it may go in annotation promotions.kpromo.dev/destinations (e.g. "hooks.example.com")';
    // Same answer for a key that exists and one that does not.
    for (const key of ['password', 'nope'])
      await expect(
        s.value(
          { name: 'db', key },
          'secret',
          'spec.webhook.secretRef',
          'https://hooks.example.com/x',
          'spec.webhook.url',
        ),
      ).rejects.toThrow(refusal);
    await expect(s.data('gone', 'spec.webhook.headersSecretRef', 'https://h.example.com', 'u')).rejects.toThrow(
      'Secret gone (spec.webhook.headersSecretRef of Notification team-a/n) not found',
    );
  });

  it('gives values of opted-in Secrets for their destinations only', async () => {
    const s = secrets({
      hdr: { data: { 'x-api-key': 'k' }, labels: LABEL, annotations: dest('hooks.example.com') },
      tok: { data: { token: ' t \n' }, labels: LABEL, annotations: dest('https://ghe.example.com/api/v3') },
    });
    expect(await s.data('hdr', 'f', 'https://hooks.example.com/in', 'spec.webhook.url')).toEqual({ 'x-api-key': 'k' });
    expect(await s.token({ name: 'tok' }, 'f', 'https://ghe.example.com/api/v3', 'spec.github.apiURL')).toBe('t');
    await expect(s.token({ name: 'tok' }, 'f', 'https://ghe.example.com/api', 'spec.github.apiURL')).rejects.toThrow(
      'may be sent only to https://ghe.example.com/api/v3, not to https://ghe.example.com (spec.github.apiURL)',
    );
  });

  it('checks a webhook URL kept in a Secret against that Secret’s own destinations', async () => {
    const s = secrets({
      ok: {
        data: { url: 'https://hooks.slack.com/services/T/B/x' },
        labels: LABEL,
        annotations: dest('hooks.slack.com'),
      },
      elsewhere: { data: { url: 'https://evil.example.com/x' }, labels: LABEL, annotations: dest('hooks.slack.com') },
      unlabelled: { data: { url: 'https://hooks.slack.com/services/T/B/x' } },
    });
    expect(await s.url({ name: 'ok' }, 'spec.slack.webhookSecretRef')).toBe('https://hooks.slack.com/services/T/B/x');
    await expect(s.url({ name: 'elsewhere' }, 'spec.slack.webhookSecretRef')).rejects.toThrow(
      'may be sent only to hooks.slack.com, not to https://evil.example.com (the URL in spec.slack.webhookSecretRef)',
    );
    // Nothing derived from the data of a Secret that did not opt in (not even an example host).
    await expect(s.url({ name: 'unlabelled' }, 'spec.slack.webhookSecretRef')).rejects.toThrow(
      /is not marked as a credential kpromo may send: .* annotation promotions\.kpromo\.dev\/destinations$/,
    );
  });

  it('refusalFor checks every Secret read in this delivery against each request', async () => {
    const s = secrets({
      a: { data: { k: 'v' }, labels: LABEL, annotations: dest('a.example.com,b.example.com') },
      b: { data: { secret: 's' }, labels: LABEL, annotations: dest('a.example.com') },
    });
    expect(s.refusalFor('https://b.example.com/')).toBeUndefined(); // nothing read yet
    await s.data('a', 'spec.webhook.headersSecretRef', 'https://a.example.com/', 'spec.webhook.url');
    await s.value({ name: 'b' }, 'secret', 'spec.webhook.secretRef', 'https://a.example.com/', 'spec.webhook.url');
    expect(s.refusalFor('https://a.example.com/other')).toBeUndefined();
    expect(s.refusalFor('https://b.example.com/')).toMatch(
      /^Secret team-a\/b \(spec\.webhook\.secretRef of Notification team-a\/n\) may be sent only to a\.example\.com, not to https:\/\/b\.example\.com/,
    );
  });
});
