import { OciError } from './errors.js';
import { readImageConfig } from './imageConfig.js';
import type { RegistryEndpoint } from './registryClient.js';

const CREATED_LABEL = 'org.opencontainers.image.created';

/** Pure: an RFC 3339 instant (normalised to UTC) or undefined; build tools write 1970 for reproducible builds, which says nothing. */
export function createdInstant(v: unknown): string | undefined {
  if (typeof v !== 'string' || v.length > 64) return undefined;
  const t = Date.parse(v);
  if (Number.isNaN(t) || t <= 0) return undefined;
  return new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Pure: when the image was built, from its config document and manifest annotations; config `created` first. */
export function createdOf(config: unknown, annotations: Record<string, unknown> = {}): string | undefined {
  const c = (config ?? {}) as { created?: unknown; config?: { Labels?: Record<string, unknown> } };
  return (
    createdInstant(c.created) ??
    createdInstant(annotations[CREATED_LABEL]) ??
    createdInstant(c.config?.Labels?.[CREATED_LABEL])
  );
}

/**
 * When the image `reference` (a digest) in `repository` was built: the OCI image config `created`,
 * else the org.opencontainers.image.created annotation or label; undefined when none says. For an
 * index, its linux/amd64 image (as {@link pickPlatform}). Throws OciError when the registry cannot be read.
 */
export async function imageCreated(
  ep: RegistryEndpoint,
  repository: string,
  reference: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  try {
    const { document, annotations } = await readImageConfig(ep, repository, reference, signal);
    return createdOf(document, annotations);
  } catch (e) {
    // A config that is not JSON says nothing about the build time; the manifests' annotations may.
    if (e instanceof OciError && e.code === 'PROTOCOL') return undefined;
    throw e;
  }
}
