// Referrers in numbers an attacker chooses: anyone who may push to a repository can attach referrers
// to its digests. Paging through the referrers API (a loopback server answering as an OCI 1.1
// registry with that API does: CNCF distribution, which the integration tests run, has none), the
// bounds, and which referrers the copy carries first. The flood against a real registry and cosign
// is in ../supplychain/supplyChain.int.test.ts.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Egress } from '../net/guardedFetch.js';
import {
  evidenceToCopy,
  listReferrers,
  MAX_REFERRER_PAGES,
  MAX_REFERRERS_READ,
  nextPage,
  type ReferrerDescriptor,
} from './referrers.js';
import { RegistryClient } from './registryClient.js';

const SUBJECT = `sha256:${'5'.repeat(64)}`;
const digestOf = (i: number) => `sha256:${i.toString(16).padStart(64, '0')}`;
const ref = (i: number, artifactType = 'application/vnd.example.junk'): ReferrerDescriptor => ({
  mediaType: 'application/vnd.oci.image.manifest.v1+json',
  digest: digestOf(i),
  size: 10,
  artifactType,
});
const BUNDLE = 'application/vnd.dev.sigstore.bundle.v0.3+json';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});
const egress = new Egress({ allowedCidrs: ['127.0.0.1/32'] });
afterAll(() => egress.close());

/** A registry with the referrers API listing `total` referrers of SUBJECT, `perPage` a page, linked by `Link`. */
async function pagedRegistry(total: number, perPage: number, link = (next: string) => `<${next}>; rel="next"`) {
  const pages: string[] = [];
  const srv = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    pages.push(url.search);
    const from = Number(url.searchParams.get('last') ?? 0);
    const items = Array.from({ length: Math.max(0, Math.min(perPage, total - from)) }, (_, i) => ref(from + i + 1));
    const headers: Record<string, string> = { 'content-type': 'application/vnd.oci.image.index.v1+json' };
    if (from + perPage < total) headers.link = link(`/v2/team/app/referrers/${SUBJECT}?last=${from + perPage}`);
    res.writeHead(200, headers).end(JSON.stringify({ schemaVersion: 2, manifests: items }));
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const host = `127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return { client: new RegistryClient({ host, insecure: true }, undefined, egress), pages };
}

describe('listing referrers through the referrers API', () => {
  it('follows Link rel="next" pages to the end, so a signature on a later page is seen', async () => {
    const { client, pages } = await pagedRegistry(250, 100);
    const listed = await listReferrers(client, 'team/app', SUBJECT);
    expect(listed).toMatchObject({ api: true, truncated: false });
    expect(listed.referrers.map((r) => r.digest)).toEqual(Array.from({ length: 250 }, (_, i) => digestOf(i + 1)));
    expect(pages).toEqual(['', '?last=100', '?last=200']);
  });

  it('stops at the bounds (entries, pages) and says the listing was cut, instead of failing', async () => {
    const many = await pagedRegistry(MAX_REFERRERS_READ + 500, 100);
    const a = await listReferrers(many.client, 'team/app', SUBJECT);
    expect(a.truncated).toBe(true);
    expect(a.referrers).toHaveLength(MAX_REFERRERS_READ);
    const tiny = await pagedRegistry(MAX_REFERRER_PAGES * 2, 1);
    const b = await listReferrers(tiny.client, 'team/app', SUBJECT);
    expect(b).toMatchObject({ truncated: true });
    expect(b.referrers).toHaveLength(MAX_REFERRER_PAGES);
    expect(tiny.pages).toHaveLength(MAX_REFERRER_PAGES);
  });

  it('refuses a next page on another host (the registry credentials go to the registry alone)', async () => {
    const { client } = await pagedRegistry(5, 2, () => '<http://127.0.0.9:1/v2/team/app/referrers/x>; rel="next"');
    await expect(listReferrers(client, 'team/app', SUBJECT)).rejects.toThrow(
      "the referrers API's next page is on another host (http://127.0.0.9:1); refused",
    );
  });
});

describe('nextPage (RFC 8288 Link header)', () => {
  const client = new RegistryClient({ host: 'reg.example.com' }, undefined, egress);
  it.each([
    [null, undefined],
    ['', undefined],
    ['</v2/a/referrers/x?last=1>; rel="next"', 'https://reg.example.com/v2/a/referrers/x?last=1'],
    ['</v2/a/referrers/x?last=1>; rel=next', 'https://reg.example.com/v2/a/referrers/x?last=1'],
    ['</p>; rel="prev", </n>; rel="next"', 'https://reg.example.com/n'],
    ['</n>; type="x"; rel="prefetch next"', 'https://reg.example.com/n'],
    ['</p>; rel="prev"', undefined],
    ['<https://reg.example.com/v2/a/referrers/x?n=5>; rel="next"', 'https://reg.example.com/v2/a/referrers/x?n=5'],
  ])('%j → %j', (link, next) => {
    expect(nextPage(client, link)).toBe(next);
  });
});

describe('evidenceToCopy: which referrers the copy carries', () => {
  const junk = Array.from({ length: 200 }, (_, i) => ref(i + 1));
  const bundles = [ref(1001, BUNDLE), ref(1002, `${BUNDLE.replace('0.3', '0.2')}`)];
  it.each([
    ['few: all, in order', junk.slice(0, 5), 10, junk.slice(0, 5), 0],
    ['exactly the cap: all', junk.slice(0, 10), 10, junk.slice(0, 10), 0],
    [
      'more than the cap: Sigstore bundles first, then others in order',
      [...junk.slice(0, 20), ...bundles],
      10,
      [...bundles, ...junk.slice(0, 8)],
      12,
    ],
    ['bundles alone beyond the cap: the first ones', [...bundles, ref(1003, BUNDLE)], 2, bundles, 1],
  ] as const)('%s', (_, listed, max, copy, skipped) => {
    expect(evidenceToCopy(listed, max)).toEqual({ copy, skipped });
  });
});
