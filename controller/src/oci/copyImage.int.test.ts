import {
  type LocalRegistry,
  pushTestArtifact,
  pushTestImage,
  startFaultProxy,
  startRegistry,
  startTokenAuthRegistry,
} from '@kpromo/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointCredentials } from '../credentials/registryCredentials.js';
import { Egress, setDefaultEgress } from '../net/guardedFetch.js';
import { metricsRegistry } from '../observability/metrics.js';
import { copyImage, OciError, resolveDigest } from './copyImage.js';
import { MANIFEST_ACCEPT } from './manifest.js';

let a: LocalRegistry;
let b: LocalRegistry;
// The harness registries listen on loopback: registry traffic reaches them only as the operator
// allows (egress.allowedCidrs), here as the controller's default egress guard.
const loopbackAllowed = new Egress({ allowedCidrs: ['127.0.0.1/32'] });
let restoreEgress: () => void;

beforeAll(async () => {
  restoreEgress = setDefaultEgress(loopbackAllowed);
  [a, b] = await Promise.all([startRegistry({ name: 'copy-a' }), startRegistry({ name: 'copy-b' })]);
});
afterAll(async () => {
  restoreEgress?.();
  await Promise.all([a?.stop(), b?.stop(), loopbackAllowed.close()]);
});

async function targetDigest(reg: LocalRegistry, repo: string, ref: string): Promise<string | null> {
  const res = await fetch(`${reg.url}/v2/${repo}/manifests/${ref}`, { headers: { accept: MANIFEST_ACCEPT } });
  await res.arrayBuffer();
  return res.ok ? res.headers.get('docker-content-digest') : null;
}

async function blobMetric(action: string): Promise<number> {
  const m = await metricsRegistry.getSingleMetric('kpromo_image_copy_blobs_total')?.get();
  return m?.values.find((v) => v.labels.action === action)?.value ?? 0;
}

describe('copyImage between real registries', () => {
  it('copies a single-arch image with the digest unchanged, then skips every blob on a second copy', async () => {
    const { digest } = await pushTestImage({ host: a.host, repository: 'team/app', tag: 'v1.0.0' });
    const req = {
      source: { host: a.host, repository: 'team/app', reference: 'v1.0.0' },
      target: { host: b.host, repository: 'prod/app', tag: 'v1.0.0-20260101' },
      expectedDigest: digest,
    };
    const first = await copyImage(req);
    expect(first).toEqual({
      digest,
      blobsCopied: 2,
      blobsSkipped: 0,
      blobsMounted: 0,
      manifests: 1,
      evidence: 0,
      evidenceSkipped: 0,
    });
    expect(await targetDigest(b, 'prod/app', 'v1.0.0-20260101')).toBe(digest);
    expect(await resolveDigest({ host: b.host }, 'prod/app', 'v1.0.0-20260101')).toBe(digest);

    const second = await copyImage({ ...req, target: { ...req.target, tag: 'again' } });
    expect(second).toMatchObject({ digest, blobsCopied: 0, blobsSkipped: 2, blobsMounted: 0 });
    expect(await targetDigest(b, 'prod/app', 'again')).toBe(digest);
  });

  it("carries the image's signatures, attestations and SBOMs: OCI referrers and cosign's tag scheme", async () => {
    const { digest } = await pushTestImage({ host: a.host, repository: 'team/signed', tag: 'v1' });
    const sbom = await pushTestArtifact({
      host: a.host,
      repository: 'team/signed',
      subject: digest,
      artifactType: 'application/spdx+json',
      content: '{"spdxVersion":"SPDX-2.3"}',
    });
    const sig = await pushTestArtifact({
      host: a.host,
      repository: 'team/signed',
      subject: digest,
      artifactType: 'application/vnd.dev.cosign.simplesigning.v1+json',
      content: 'signature',
      tag: `${digest.replace(':', '-')}.sig`,
      withSubject: false,
    });
    // An artifact about another image stays behind.
    const { digest: other } = await pushTestImage({ host: a.host, repository: 'team/signed', tag: 'other' });
    await pushTestArtifact({
      host: a.host,
      repository: 'team/signed',
      subject: other,
      artifactType: 'x/y',
      content: 'z',
    });

    const res = await copyImage({
      source: { host: a.host, repository: 'team/signed', reference: 'v1' },
      target: { host: b.host, repository: 'prod/signed', tag: 'v1-x' },
      expectedDigest: digest,
    });
    // The image, the referrers index with the SBOM, and the signature.
    expect(res).toMatchObject({ digest, evidence: 2, manifests: 4 });
    // The target lists the SBOM as a referrer of the same digest (distribution 3.1 serves no referrers
    // API: the OCI 1.1 fallback index under the tag sha256-<hex>), and has the cosign tag.
    const referrers = (await (
      await fetch(`${b.url}/v2/prod/signed/manifests/${digest.replace(':', '-')}`, {
        headers: { accept: 'application/vnd.oci.image.index.v1+json' },
      })
    ).json()) as { manifests: Array<{ digest: string; artifactType?: string }> };
    expect(referrers.manifests.map((m) => [m.digest, m.artifactType])).toEqual([
      [sbom.digest, 'application/spdx+json'],
    ]);
    expect(await targetDigest(b, 'prod/signed', sbom.digest)).toBe(sbom.digest);
    expect(await targetDigest(b, 'prod/signed', `${digest.replace(':', '-')}.sig`)).toBe(sig.digest);
    // Copied again: nothing new to upload, the evidence is there already.
    const again = await copyImage({
      source: { host: a.host, repository: 'team/signed', reference: 'v1' },
      target: { host: b.host, repository: 'prod/signed', tag: 'v1-y' },
    });
    expect(again).toMatchObject({ evidence: 2, blobsCopied: 0 });
  });

  it('copies a multi-arch index with all children', async () => {
    const { digest } = await pushTestImage({ host: a.host, repository: 'team/multi', tag: 'v2', multiArch: true });
    const res = await copyImage({
      source: { host: a.host, repository: 'team/multi', reference: 'v2' },
      target: { host: b.host, repository: 'prod/multi', tag: 'v2-x' },
    });
    expect(res).toMatchObject({ digest, manifests: 3, blobsCopied: 4 });
    const index = (await (
      await fetch(`${b.url}/v2/prod/multi/manifests/v2-x`, { headers: { accept: MANIFEST_ACCEPT } })
    ).json()) as { manifests: Array<{ digest: string; platform: { architecture: string } }> };
    expect(index.manifests.map((m) => m.platform.architecture)).toEqual(['amd64', 'arm64']);
    for (const child of index.manifests) expect(await targetDigest(b, 'prod/multi', child.digest)).toBe(child.digest);
  });

  it('mounts blobs across repositories of the same registry instead of uploading', async () => {
    const { digest } = await pushTestImage({ host: a.host, repository: 'dev/mounted', tag: 'v3' });
    const mountedBefore0 = await blobMetric('mounted');
    const res = await copyImage({
      source: { host: a.host, repository: 'dev/mounted', reference: digest },
      target: { host: a.host, repository: 'staging/mounted', tag: 'v3' },
    });
    expect(res).toEqual({
      digest,
      blobsCopied: 0,
      blobsSkipped: 0,
      blobsMounted: 2,
      manifests: 1,
      evidence: 0,
      evidenceSkipped: 0,
    });
    expect(await blobMetric('mounted')).toBe(mountedBefore0 + 2);
    expect(await targetDigest(a, 'staging/mounted', 'v3')).toBe(digest);
  });

  it('streams big blobs with a chunked upload', async () => {
    const { digest } = await pushTestImage({
      host: a.host,
      repository: 'team/big',
      tag: 'v4',
      layerSize: 3 * 1024 * 1024,
    });
    const res = await copyImage(
      {
        source: { host: a.host, repository: 'team/big', reference: 'v4' },
        target: { host: b.host, repository: 'prod/big', tag: 'v4' },
      },
      { monolithicLimitBytes: 1024 },
    );
    expect(res).toMatchObject({ digest, blobsCopied: 2 });
    expect(await targetDigest(b, 'prod/big', 'v4')).toBe(digest);
  });

  it('fails with NOT_FOUND for a missing image and DIGEST_MISMATCH when the tag moved', async () => {
    const missing = copyImage({
      source: { host: a.host, repository: 'team/nope', reference: 'v9' },
      target: { host: b.host, repository: 'prod/nope', tag: 'v9' },
    });
    await expect(missing).rejects.toBeInstanceOf(OciError);
    await expect(missing).rejects.toMatchObject({ code: 'NOT_FOUND', registry: a.host, repository: 'team/nope' });
    expect(await resolveDigest({ host: a.host }, 'team/nope', 'v9')).toBeUndefined();

    await pushTestImage({ host: a.host, repository: 'team/moved', tag: 'v1' });
    await expect(
      copyImage({
        source: { host: a.host, repository: 'team/moved', reference: 'v1' },
        target: { host: b.host, repository: 'prod/moved', tag: 'v1' },
        expectedDigest: `sha256:${'0'.repeat(64)}`,
      }),
    ).rejects.toMatchObject({ code: 'DIGEST_MISMATCH' });
    expect(await targetDigest(b, 'prod/moved', 'v1')).toBeNull();
  });

  it('retries 503s and 429s from the registry and still copies', async () => {
    const { digest } = await pushTestImage({ host: a.host, repository: 'team/flaky', tag: 'v1' });
    // Every first request of each kind fails: manifest GET, blob HEAD/GET, upload POST/PUT.
    const proxy = await startFaultProxy({ target: b.host, failures: 3, status: 503 });
    const limited = await startFaultProxy({
      target: a.host,
      failures: 2,
      status: 429,
      headers: { 'retry-after': '0' },
    });
    try {
      const res = await copyImage({
        source: { host: limited.host, repository: 'team/flaky', reference: 'v1' },
        target: { host: proxy.host, repository: 'prod/flaky', tag: 'v1' },
      });
      expect(res.digest).toBe(digest);
      expect(proxy.failed()).toBe(3);
      expect(limited.failed()).toBe(2);
      expect(await targetDigest(b, 'prod/flaky', 'v1')).toBe(digest);
    } finally {
      await Promise.all([proxy.stop(), limited.stop()]);
    }
  });

  it('gives up with UNAVAILABLE when a registry keeps answering 503', async () => {
    const proxy = await startFaultProxy({ target: a.host, failures: 1000, status: 503 });
    try {
      await expect(
        copyImage({
          source: { host: proxy.host, repository: 'team/app', reference: 'v1.0.0' },
          target: { host: b.host, repository: 'prod/never', tag: 'v1' },
        }),
      ).rejects.toMatchObject({ code: 'UNAVAILABLE', registry: proxy.host, repository: 'team/app' });
      expect(proxy.failed()).toBe(4); // bounded: DEFAULT_RETRY.attempts
    } finally {
      await proxy.stop();
    }
  });

  it('stops when the signal aborts', async () => {
    await pushTestImage({ host: a.host, repository: 'team/abort', tag: 'v1' });
    const ctrl = new AbortController();
    ctrl.abort(new Error('shutting down'));
    await expect(
      copyImage({
        source: { host: a.host, repository: 'team/abort', reference: 'v1' },
        target: { host: b.host, repository: 'prod/abort', tag: 'v1' },
        signal: ctrl.signal,
      }),
    ).rejects.toThrow('shutting down');
    expect(await targetDigest(b, 'prod/abort', 'v1')).toBeNull();
  });

  it('fails with UNAVAILABLE when the target registry is down', async () => {
    const down = await startRegistry({ name: 'copy-down' });
    await down.stop();
    await pushTestImage({ host: a.host, repository: 'team/down', tag: 'v1' });
    const started = Date.now();
    const err = await copyImage({
      source: { host: a.host, repository: 'team/down', reference: 'v1' },
      target: { host: down.host, repository: 'prod/down', tag: 'v1' },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OciError);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', registry: down.host });
    expect((err as Error).message).toMatch(/ECONNREFUSED/);
    expect(Date.now() - started).toBeLessThan(15_000); // retries are bounded
  });
});

describe('copyImage with Bearer token auth (real registry token verification)', () => {
  it('gets push/pull tokens with basic credentials and copies; wrong or no credentials are UNAUTHORIZED', async () => {
    const secured = await startTokenAuthRegistry({ robot: 'hunter2' });
    try {
      const { digest } = await pushTestImage({ host: a.host, repository: 'team/secure', tag: 'v1' });
      // The token service runs on another host:port: it gets credentials only from an entry naming it.
      const robot = { username: 'robot', password: 'hunter2' };
      const creds = (auths: Record<string, object>) =>
        endpointCredentials({ auths }, 'Secret t/c', secured.host, 'prod/secure');
      const req = {
        source: { host: a.host, repository: 'team/secure', reference: 'v1' },
        target: {
          host: secured.host,
          repository: 'prod/secure',
          tag: 'v1',
          ...creds({ [secured.host]: robot, [secured.realmHost]: robot }),
        },
      };
      expect(await copyImage(req)).toMatchObject({ digest, blobsCopied: 2 });
      expect(
        secured.tokenRequests.some((t) => t.user === 'robot' && t.scopes.includes('repository:prod/secure:pull,push')),
      ).toBe(true);
      const unauthenticated = await fetch(`${secured.url}/v2/prod/secure/manifests/v1`);
      expect(unauthenticated.status).toBe(401);
      expect(await resolveDigest(req.target, 'prod/secure', 'v1')).toBe(digest);

      const nope = { username: 'robot', password: 'nope' };
      const wrong = {
        ...req,
        target: { ...req.target, ...creds({ [secured.host]: nope, [secured.realmHost]: nope }) },
      };
      await expect(copyImage(wrong)).rejects.toMatchObject({ code: 'UNAUTHORIZED', registry: secured.host });
      // An entry for the registry host alone is never sent to the token service on the other host.
      // (Blob requests of the failed copy above may still be in flight: wait until they settle.)
      let settled = -1;
      while (settled !== secured.tokenRequests.length) {
        settled = secured.tokenRequests.length;
        await new Promise((r) => setTimeout(r, 500));
      }
      const before = secured.tokenRequests.length;
      const registryOnly = { ...req, target: { ...req.target, ...creds({ [secured.host]: robot }) } };
      await expect(copyImage(registryOnly)).rejects.toMatchObject({
        code: 'UNAUTHORIZED',
        message: expect.stringContaining(`the token service ${secured.realmHost} got no credentials`),
      });
      expect(secured.tokenRequests.length).toBeGreaterThan(before);
      expect(secured.tokenRequests.slice(before).every((t) => t.user === undefined)).toBe(true);
      const anonymous = { ...req, target: { host: secured.host, repository: 'prod/secure', tag: 'v1' } };
      await expect(copyImage(anonymous)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    } finally {
      await secured.stop();
    }
  });
});

describe('copyImage through the egress guard (real registries)', () => {
  it('a registry at an address the operator did not allow is never contacted; allowed, the copy works', async () => {
    const { digest } = await pushTestImage({ host: a.host, repository: 'team/egress', tag: 'v1' });
    const req = {
      source: { host: a.host, repository: 'team/egress', reference: 'v1' },
      target: { host: b.host, repository: 'prod/egress', tag: 'v1' },
    };
    const strict = new Egress();
    try {
      const err = await copyImage(req, { egress: strict }).catch((e) => e);
      expect(err).toBeInstanceOf(OciError);
      expect(err).toMatchObject({ code: 'EGRESS_BLOCKED', name: 'EgressBlocked', permanent: true, registry: a.host });
      expect(err.message).toBe(
        `${a.host}/team/egress: GET manifests/v1 refused: blocked by egress policy: address 127.0.0.1 is loopback; allow it with egress.allowedCidrs`,
      );
      expect(await targetDigest(b, 'prod/egress', 'v1')).toBeNull();
    } finally {
      await strict.close();
    }
    expect(await copyImage(req, { egress: loopbackAllowed })).toMatchObject({ digest, blobsCopied: 2 });
    expect(await targetDigest(b, 'prod/egress', 'v1')).toBe(digest);
  });
});
