import { afterEach, describe, expect, it } from 'vitest';
import {
  guardedAnswer,
  MemoryStatus,
  notificationOf,
  planEvents,
  testNotifier,
} from '../../../test/support/notifierHarness.js';
import { githubStatusProblems, type SaasReceivers, startSaasReceivers } from '../../../test/support/saasReceivers.js';
import type { ImageCommitSource } from '../imageCommits.js';
import {
  commitState,
  commitStatus,
  githubVerdict,
  MAX_DESCRIPTION,
  REVISION_LABEL,
  repositoryAllowed,
  SOURCE_LABEL,
  sourceCommit,
  webHostOf,
} from './github.js';

const [approved, promoted, complete] = planEvents();
const SHA = 'a'.repeat(40);
let r: SaasReceivers | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

const labels = (source: string, revision = SHA) => ({ [SOURCE_LABEL]: source, [REVISION_LABEL]: revision });

describe('commit from OCI labels', () => {
  it('reads owner, repository and commit from source and revision', () => {
    expect(sourceCommit(labels('https://github.com/acme/shop'), 'github.com')).toEqual({
      owner: 'acme',
      repo: 'shop',
      sha: SHA,
    });
    expect(sourceCommit(labels('https://github.com/acme/shop.git', SHA.toUpperCase()), 'github.com')).toEqual({
      owner: 'acme',
      repo: 'shop',
      sha: SHA,
    });
    expect(sourceCommit(labels('https://github.com/acme/shop/tree/main/cart'), 'github.com')).toMatchObject({
      repo: 'shop',
    });
  });

  it('skips images without labels, with short or odd revisions, and sources on another host', () => {
    expect(sourceCommit({}, 'github.com')).toEqual({
      skip: 'image has no org.opencontainers.image.source and org.opencontainers.image.revision labels',
    });
    expect(sourceCommit(labels('https://github.com/acme/shop', 'abc123'), 'github.com')).toEqual({
      skip: 'org.opencontainers.image.revision is not a full commit SHA',
    });
    expect(sourceCommit(labels('https://gitlab.com/acme/shop'), 'github.com')).toEqual({
      skip: 'org.opencontainers.image.source is on gitlab.com, not on this GitHub (github.com)',
    });
    expect(sourceCommit(labels('https://github.com/acme'), 'github.com')).toHaveProperty('skip');
    expect(sourceCommit(labels('https://github.com/../x'), 'github.com')).toHaveProperty('skip');
    expect(sourceCommit(labels('git@github.com:acme/shop.git'), 'github.com')).toHaveProperty('skip');
  });

  it('maps the API host to the web host (github.com, or the GHES host itself)', () => {
    expect(webHostOf('https://api.github.com')).toBe('github.com');
    expect(webHostOf('https://ghe.example.com/api/v3')).toBe('ghe.example.com');
  });

  it('allows only listed repositories (owner/* for an owner), case-insensitively', () => {
    expect(repositoryAllowed('Acme', 'Shop', ['acme/shop'])).toBe(true);
    expect(repositoryAllowed('acme', 'blog', ['acme/*'])).toBe(true);
    expect(repositoryAllowed('acme', 'blog', ['acme/shop', 'other/*'])).toBe(false);
  });
});

describe('commitStatus', () => {
  it('maps events to states (plan events have none)', () => {
    expect([approved, promoted, complete].map((e) => commitState(e.type))).toEqual(['pending', 'success', undefined]);
    expect(commitState('AppFailed')).toBe('failure');
  });

  it('has context kpromo/<environment>, a description of at most 140 characters and an encoded target_url', () => {
    const s = commitStatus({ ...promoted, message: 'z'.repeat(500) }, 'success', {
      targetURL: 'https://portal.example.com/plans/{namespace}/{plan}?app={application}&env={environment}',
    });
    expect(s).toMatchObject({
      state: 'success',
      context: 'kpromo/production',
      target_url: 'https://portal.example.com/plans/team-a/shop-42?app=cart&env=production',
    });
    expect(s.description.length).toBe(MAX_DESCRIPTION);
    expect(githubStatusProblems(s)).toEqual([]);
    expect(commitStatus({ ...approved, plan: 'a&b' }, 'pending', { targetURL: 'https://x/{plan}' }).target_url).toBe(
      'https://x/a%26b',
    );
  });

  it('waits out primary and secondary rate limits', () => {
    const now = 1_700_000_000_000;
    const primary = guardedAnswer(
      403,
      { message: 'API rate limit exceeded' },
      {
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(now / 1000 + 30),
      },
    );
    expect(githubVerdict(primary, 'G', now)).toMatchObject({ ok: false, retry: true, retryAfterMs: 30_000 });
    const secondary = guardedAnswer(403, { message: 'secondary rate limit' }, { 'retry-after': '60' });
    expect(githubVerdict(secondary, 'G', now)).toMatchObject({ retry: true, retryAfterMs: 60_000 });
    expect(githubVerdict(guardedAnswer(422, { message: 'Validation Failed' }), 'G', now)).toMatchObject({
      retry: false,
      error: 'G answered HTTP 422 (Validation Failed)',
    });
  });
});

describe('github target against a local GitHub (Enterprise Server) stand-in', () => {
  const token = 'ghp_test';
  const commits = (sources: Record<string, Record<string, string> | undefined>): ImageCommitSource => ({
    images: async (e) =>
      Object.entries(sources)
        .filter(([app]) => !e.application || app === e.application)
        .map(([application, l]) => ({ application, digest: `sha256:${'c'.repeat(64)}`, ...(l ? { labels: l } : {}) })),
  });

  it('sets pending then success on the commit of each labelled image; skips the others and counts them', async () => {
    r = await startSaasReceivers({ slackToken: 'x', githubToken: token, rateLimitOnce: ['github'] });
    const source = `http://${r.host}/acme/shop`;
    const status = new MemoryStatus();
    const { run, deliveries } = testNotifier(
      [
        notificationOf('gh', {
          github: {
            tokenSecretRef: { name: 'gh' },
            apiURL: r.urls.githubApi,
            repositories: ['acme/*'],
            targetURL: 'https://portal.example.com/{namespace}/{plan}',
          },
        }),
      ],
      {
        secrets: { gh: { token } },
        annotations: { gh: { 'promotions.kpromo.dev/destinations': r.urls.githubApi } },
        commits: commits({
          cart: labels(source),
          web: {},
          evil: labels(`http://${r.host}/someone-else/repo`),
        }),
        status,
      },
    );
    await run([approved, promoted, complete]);
    expect(r.problems).toEqual([]);
    const calls = r.of('github');
    // One 429 (Retry-After) first, then pending for cart (PlanApproved) and success (AppPromoted).
    expect(calls.map((c) => c.url)).toEqual(Array(3).fill(`/github/api/v3/repos/acme/shop/statuses/${SHA}`));
    expect(calls.slice(1).map((c) => c.json)).toEqual([
      {
        state: 'pending',
        description: 'Plan team-a/shop-42 approved: staging → production',
        context: 'kpromo/production',
        target_url: 'https://portal.example.com/team-a/shop-42',
      },
      {
        state: 'success',
        description: 'cart v1.2.0 promoted to production',
        context: 'kpromo/production',
        target_url: 'https://portal.example.com/team-a/shop-42',
      },
    ]);
    expect(calls[1].headers).toMatchObject({ authorization: `Bearer ${token}`, 'x-github-api-version': '2022-11-28' });
    expect(deliveries.map((d) => [d.outcome.ok, d.outcome.skipped])).toEqual([
      [true, undefined],
      [true, undefined],
      [true, 'PlanComplete sets no commit status'],
    ]);
    expect(status.statuses.get('gh')).toMatchObject({ delivered: 2, skipped: 1 });
  });

  it('skips an event whose only image has no labels', async () => {
    r = await startSaasReceivers({ slackToken: 'x', githubToken: token });
    const { run, deliveries } = testNotifier(
      [
        notificationOf('gh', {
          github: { tokenSecretRef: { name: 'gh' }, apiURL: r.urls.githubApi, repositories: ['acme/*'] },
        }),
      ],
      {
        secrets: { gh: { token } },
        annotations: { gh: { 'promotions.kpromo.dev/destinations': r.urls.githubApi } },
        commits: commits({ cart: {} }),
      },
    );
    await run([promoted]);
    expect(r.received).toEqual([]);
    expect(deliveries[0].outcome).toEqual({
      ok: true,
      attempts: 0,
      skipped: 'cart: image has no org.opencontainers.image.source and org.opencontainers.image.revision labels',
    });
  });
});
