// The Gitea adapter's own rules, against a local stub (gitea.int.test.ts runs it against a real
// Gitea): requests stay under baseUrl, redirects are refused, answers are validated, review states
// are mapped, and a merge waits while Gitea still checks mergeability.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createGiteaForge, ForgeError } from '../src/index.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;
let handler: Handler;
const seen: Array<{ method: string; url: string; auth?: string; body: string }> = [];
let server: Server;
let origin: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', auth: req.headers.authorization, body });
      handler(req, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  seen.length = 0;
});

const json = (res: ServerResponse, status: number, value: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
const repo = { owner: 'team', name: 'envs' };
const pull = (over: Record<string, unknown> = {}) => ({
  number: 7,
  html_url: 'https://gitea.example/team/envs/pulls/7',
  state: 'open',
  merged: false,
  title: 't',
  body: 'b',
  user: { login: 'kpromo-bot' },
  head: { ref: 'promote', sha: 'a'.repeat(40), repo_id: 1 },
  base: { ref: 'main', sha: 'b'.repeat(40), repo_id: 1 },
  ...over,
});

describe('createGiteaForge', () => {
  it('sends the token and keeps every request under baseUrl, sub-path included, with path segments encoded', async () => {
    handler = (_req, _body, res) => json(res, 200, pull());
    const forge = createGiteaForge({ baseUrl: `${origin}/git/`, token: 's3cret' });
    await forge.getPullRequest({ owner: 'te am', name: 'a/b' }, 7);
    expect(seen).toEqual([
      { method: 'GET', url: '/git/api/v1/repos/te%20am/a%2Fb/pulls/7', auth: 'token s3cret', body: '' },
    ]);
    await expect(forge.getPullRequest({ owner: '..', name: 'x' }, 7)).rejects.toThrow(/invalid path segment/);
    expect(seen).toHaveLength(1);
  });

  it('refuses a redirect instead of following it (the token stays with baseUrl)', async () => {
    handler = (_req, _body, res) => res.writeHead(302, { location: 'http://elsewhere.example/api/v1/user' }).end();
    const forge = createGiteaForge({ baseUrl: origin, token: 't' });
    const err = await forge.currentUser().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForgeError);
    expect((err as ForgeError).status).toBe(302);
    expect((err as ForgeError).message).toMatch(
      /redirect \(302 to http:\/\/elsewhere\.example\/api\/v1\/user\), not followed/,
    );
    expect(seen).toHaveLength(1);
  });

  it('refuses a baseUrl with credentials, a query or another scheme', () => {
    for (const baseUrl of ['http://u:p@gitea.example', 'https://gitea.example/?x=1', 'ftp://gitea.example', 'nope'])
      expect(() => createGiteaForge({ baseUrl, token: 't' })).toThrow(ForgeError);
  });

  it("names the call and Gitea's message on a refusal, and never the token", async () => {
    handler = (_req, _body, res) => json(res, 404, { message: "The target couldn't be found.", url: 'x' });
    const err = await createGiteaForge({ baseUrl: origin, token: 'tok-123' })
      .getPullRequest(repo, 9)
      .catch((e: unknown) => e);
    expect((err as ForgeError).message).toBe(
      "gitea reading pull request team/envs#9: 404 The target couldn't be found.",
    );
    expect((err as ForgeError).message).not.toContain('tok-123');
  });

  it('validates the answers it relies on', async () => {
    handler = (_req, _body, res) => json(res, 200, { ...pull(), head: { ref: 'promote' } });
    await expect(createGiteaForge({ baseUrl: origin, token: 't' }).getPullRequest(repo, 7)).rejects.toThrow(
      /gitea reading pull request team\/envs#7: unexpected answer: head\.sha/,
    );
  });

  it('maps Gitea review states; a request for review is no review, and an unknown state never approves', async () => {
    const r = (id: number, state: string, over: Record<string, unknown> = {}) => ({
      id,
      user: { login: `u${id}` },
      state,
      commit_id: 'c'.repeat(40),
      submitted_at: '2026-12-08T00:00:00Z',
      stale: false,
      dismissed: false,
      ...over,
    });
    handler = (_req, _body, res) =>
      json(res, 200, [
        r(6, 'APPROVED', { dismissed: true }),
        r(1, 'APPROVED'),
        r(2, 'REQUEST_CHANGES', { stale: true }),
        r(3, 'COMMENT'),
        r(4, 'PENDING', { submitted_at: '0001-01-01T00:00:00Z' }),
        r(5, 'REQUEST_REVIEW'),
        r(7, 'SOMETHING_NEW'),
      ]);
    const reviews = await createGiteaForge({ baseUrl: origin, token: 't' }).listReviews(repo, 7);
    expect(reviews.map((x) => [x.id, x.state, x.stale ?? false, x.submittedAt ?? null])).toEqual([
      [1, 'APPROVED', false, '2026-12-08T00:00:00Z'],
      [2, 'CHANGES_REQUESTED', true, '2026-12-08T00:00:00Z'],
      [3, 'COMMENTED', false, '2026-12-08T00:00:00Z'],
      [4, 'PENDING', false, null],
      [6, 'DISMISSED', true, '2026-12-08T00:00:00Z'],
      [7, 'COMMENTED', false, '2026-12-08T00:00:00Z'],
    ]);
    expect(seen[0].url).toBe('/api/v1/repos/team/envs/pulls/7/reviews?page=1&limit=50');
  });

  it('merges guarded by the sha, retrying while Gitea still checks mergeability, then reads the merge commit', async () => {
    let attempts = 0;
    handler = (req, _body, res) => {
      if (req.method === 'POST') {
        attempts++;
        return attempts < 3 ? json(res, 405, { message: 'Please try again later' }) : res.writeHead(200).end();
      }
      json(
        res,
        200,
        pull({ state: 'closed', merged: true, merge_commit_sha: 'd'.repeat(40), merged_by: { login: 'kpromo-bot' } }),
      );
    };
    const forge = createGiteaForge({ baseUrl: origin, token: 't', mergeRetryDelaysMs: [1, 1, 1] });
    expect(await forge.merge(repo, 7, { sha: 'a'.repeat(40), title: 'T', message: 'M' })).toEqual({
      commit: 'd'.repeat(40),
    });
    expect(attempts).toBe(3);
    expect(JSON.parse(seen[0].body)).toEqual({
      Do: 'merge',
      MergeTitleField: 'T',
      MergeMessageField: 'M',
      head_commit_id: 'a'.repeat(40),
      delete_branch_after_merge: false,
    });
  });

  it('does not retry a final refusal', async () => {
    handler = (_req, _body, res) => json(res, 405, { message: 'Does not have enough approvals' });
    const forge = createGiteaForge({ baseUrl: origin, token: 't', mergeRetryDelaysMs: [1, 1, 1] });
    await expect(forge.merge(repo, 7, { sha: 'a'.repeat(40), title: 'T', message: 'M' })).rejects.toThrow(
      /gitea merging team\/envs#7 at a+: 405 Does not have enough approvals/,
    );
    expect(seen).toHaveLength(1);
  });
});
