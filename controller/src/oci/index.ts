// `@kpromo/controller/oci`: the OCI registry client and manifest helpers, for tools outside the
// controller (deploy/image pushes and pulls the controller's own images with them) — the same code,
// with the same egress guard, that copies release images.

export { Egress, type EgressOptions } from '../net/guardedFetch.js';
export { credentialsFor, parseDockerConfig } from './dockerConfig.js';
export {
  type Descriptor,
  isDigest,
  MANIFEST_ACCEPT,
  MEDIA_TYPES,
  type ParsedManifest,
  parseManifest,
  sha256Digest,
} from './manifest.js';
export { attachReferrer, listReferrers } from './referrers.js';
export { type RegistryAuth, RegistryClient, type RegistryEndpoint, registryBaseUrl } from './registryClient.js';
