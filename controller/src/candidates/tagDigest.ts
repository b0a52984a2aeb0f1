import type { Application, Environment } from '@kpromo/api';
import { registryEndpoint } from '../extension/credentials.js';
import type { KubeRest } from '../kube/rest.js';
import type { RegistryEndpoint } from '../oci/registryClient.js';
import { registryRepository } from '../util/imageRef.js';

/** The digest a tag names in a registry now; undefined when the registry has no such tag (oci/copyImage.ts resolveDigest). */
export type ResolveDigest = (ep: RegistryEndpoint, repository: string, tag: string) => Promise<string | undefined>;

/**
 * The digest `tag` of an Application's image names now in an Environment's registry, read with
 * that Environment's credentials: what a workload that runs a tag only (no digest) runs. Undefined
 * when the registry has no such tag; throws when the registry or the credentials cannot be read
 * (the caller decides whether that waits or skips, never that it passes).
 */
export async function environmentTagDigest(
  resolve: ResolveDigest,
  control: KubeRest,
  env: Environment,
  app: Application,
  tag: string,
): Promise<string | undefined> {
  const repository = registryRepository(env.spec.registry.prefix, app.spec.image.repository);
  return resolve(await registryEndpoint(control, env, repository), repository, tag);
}
