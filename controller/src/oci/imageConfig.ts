import { getManifest } from './copyImage.js';
import { type Descriptor, parseManifest, sha256Digest } from './manifest.js';
import { RegistryClient, type RegistryEndpoint } from './registryClient.js';

/** Image configs are small JSON documents; a bigger one is not read (and not trusted). */
const MAX_CONFIG_BYTES = 1024 * 1024;

/** Index entry picked for labels: linux/amd64 first, else the first real platform (not an attestation). */
export function pickPlatform(children: Descriptor[]): Descriptor | undefined {
  const real = children.filter((c) => c.platform?.os !== 'unknown');
  return real.find((c) => c.platform?.os === 'linux' && c.platform.architecture === 'amd64') ?? real[0] ?? children[0];
}

function annotationsOf(bytes: Uint8Array): Record<string, string> {
  try {
    const a = (JSON.parse(Buffer.from(bytes).toString('utf8')) as { annotations?: unknown }).annotations;
    return stringEntries(a);
  } catch {
    return {};
  }
}

function stringEntries(o: unknown): Record<string, string> {
  if (!o || typeof o !== 'object' || Array.isArray(o)) return {};
  return Object.fromEntries(Object.entries(o).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** An image's config document (undefined when there is none to read) and its manifests' annotations. */
export interface ImageConfig {
  document?: unknown;
  /** Of the manifest `reference` names and, for an index, of the image picked in it (which win). */
  annotations: Record<string, string>;
}

/**
 * Reads the OCI image config of `reference` (a digest, best) in `repository`: for an index, of its
 * linux/amd64 image ({@link pickPlatform}). An index without images or a config over 1 MiB gives no
 * document; unreadable registries and bytes that do not match their digest throw OciError.
 */
export async function readImageConfig(
  ep: RegistryEndpoint,
  repository: string,
  reference: string,
  signal?: AbortSignal,
): Promise<ImageConfig> {
  const client = new RegistryClient(ep);
  let m = await getManifest(client, repository, reference, signal);
  const annotations = annotationsOf(m.bytes);
  let parsed = parseManifest(m.bytes, m.mediaType);
  if (parsed.kind === 'index') {
    const child = pickPlatform(parsed.children);
    if (!child) return { annotations };
    m = await getManifest(client, repository, child.digest, signal);
    Object.assign(annotations, annotationsOf(m.bytes));
    parsed = parseManifest(m.bytes, m.mediaType);
    if (parsed.kind !== 'image') return { annotations };
  }
  const config = parsed.blobs[0];
  if (!config || config.size > MAX_CONFIG_BYTES) return { annotations };
  const res = await client.request({ method: 'GET', repository, path: `blobs/${config.digest}`, signal });
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (sha256Digest(bytes) !== config.digest)
    throw client.error('DIGEST_MISMATCH', repository, `image config bytes do not hash to ${config.digest}`);
  try {
    return { document: JSON.parse(Buffer.from(bytes).toString('utf8')), annotations };
  } catch {
    throw client.error('PROTOCOL', repository, `image config ${config.digest} is not JSON`);
  }
}

/**
 * The labels of an image (config `config.Labels`, as `LABEL` and `docker buildx --label` write them)
 * merged with the OCI annotations of its manifests (`--annotation`, which win). Throws OciError.
 */
export async function imageLabels(
  ep: RegistryEndpoint,
  repository: string,
  reference: string,
  signal?: AbortSignal,
): Promise<Record<string, string>> {
  const { document, annotations } = await readImageConfig(ep, repository, reference, signal);
  const labels = stringEntries((document as { config?: { Labels?: unknown } } | undefined)?.config?.Labels);
  return { ...labels, ...annotations };
}
