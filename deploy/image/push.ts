import { Egress, RegistryClient, type RegistryEndpoint } from '@kpromo/controller/oci';
import { type Blob, type Image, imageBlobs } from './oci.js';

/**
 * Pushes a built image with the controller's registry client (auth challenges, retries and error
 * messages come from there): blobs the registry lacks with one monolithic upload each (POST, then
 * PUT ?digest=), then the manifest under the tag.
 */

export interface ImageRef {
  host: string;
  repository: string;
  tag: string;
}

/** `host[:port]/path/name:tag`; the host part is mandatory (no Docker Hub defaulting). */
export function parseImageRef(ref: string): ImageRef {
  const m = /^([^/]+[.:][^/]*|localhost)\/([a-z0-9]+(?:[._/-][a-z0-9]+)*):([\w][\w.-]{0,127})$/.exec(ref);
  if (!m)
    throw new Error(
      `image reference ${JSON.stringify(ref)}: expected host[:port]/repository:tag, e.g. 127.0.0.1:5000/kpromo/controller:0.1.0`,
    );
  return { host: m[1], repository: m[2], tag: m[3] };
}

/** Operator tools reach the registry named on their command line, whatever its address. */
export const OPERATOR_EGRESS = new Egress({ allowedCidrs: ['0.0.0.0/0', '::/0'] });

export async function pushImage(
  img: Image,
  ref: ImageRef,
  endpoint: Omit<RegistryEndpoint, 'host'> = {},
): Promise<string> {
  // The operator names this registry on the command line (often a loopback or private one): the
  // SSRF guard is for addresses taken from CRs, so this tool allows any address.
  const client = new RegistryClient({ ...endpoint, host: ref.host }, undefined, OPERATOR_EGRESS);
  const scopes = [`repository:${ref.repository}:pull,push`];
  const { manifest } = img;
  for (const b of imageBlobs(img).filter((b) => b !== manifest)) {
    const head = await client.request({
      method: 'HEAD',
      repository: ref.repository,
      path: `blobs/${b.digest}`,
      accept: [404],
      scopes,
    });
    if (head.status === 200) continue;
    await uploadBlob(client, ref.repository, b, scopes);
  }
  const res = await client.request({
    method: 'PUT',
    repository: ref.repository,
    path: `manifests/${ref.tag}`,
    headers: { 'content-type': manifest.mediaType },
    body: () => new Uint8Array(manifest.bytes),
    scopes,
  });
  await res.body?.cancel();
  const stored = res.headers.get('docker-content-digest');
  if (stored && stored !== manifest.digest)
    throw client.error(
      'DIGEST_MISMATCH',
      ref.repository,
      `manifest stored as ${stored}, pushed ${manifest.digest}; the registry rewrote it`,
    );
  return manifest.digest;
}

async function uploadBlob(client: RegistryClient, repository: string, b: Blob, scopes: string[]): Promise<void> {
  const start = await client.request({ method: 'POST', repository, path: 'blobs/uploads/', scopes });
  await start.body?.cancel();
  const location = start.headers.get('location');
  if (!location)
    throw client.error('PROTOCOL', repository, `upload start answered HTTP ${start.status} without a Location header`);
  const url = new URL(location, client.base);
  url.searchParams.set('digest', b.digest);
  const put = await client.request({
    method: 'PUT',
    repository,
    path: url.toString(),
    headers: { 'content-type': 'application/octet-stream' },
    body: () => new Uint8Array(b.bytes),
    scopes,
    retry: false, // an upload session is single-use once the PUT reached the registry
    timeoutMs: 0,
  });
  await put.body?.cancel();
}
