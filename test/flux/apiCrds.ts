import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { componentUsed } from '../cluster/need.js';
import { cacheRoot, runBuildScript, versions } from '../cluster/paths.js';
import { waitFor } from '../kube.js';
import { loadYaml } from '../manifests.js';
import { installFluxCrds } from './flux.js';

/**
 * Flux CRDs installed as real schemas only: their controllers (helm-controller,
 * image-reflector-controller, image-automation-controller) are not built here, so nothing reconciles
 * these objects; a test that needs their status writes it itself and says so.
 */
export const FLUX_API_CRDS = ['helmreleases', 'imagerepositories', 'imagepolicies', 'imageupdateautomations'] as const;
export type FluxApiCrd = (typeof FLUX_API_CRDS)[number];

/** The API group each generated CRD belongs to (its file is `<group>_<plural>.yaml`, controller-gen's naming). */
const GROUP: Record<FluxApiCrd, string> = {
  helmreleases: 'helm.toolkit.fluxcd.io',
  imagerepositories: 'image.toolkit.fluxcd.io',
  imagepolicies: 'image.toolkit.fluxcd.io',
  imageupdateautomations: 'image.toolkit.fluxcd.io',
};

/** The CRD object name (`<plural>.<group>`) of one of the {@link FLUX_API_CRDS}. */
export const fluxApiCrdName = (which: FluxApiCrd) => `${which}.${GROUP[which]}`;

/** The cache directory test/flux/crdgen.sh writes (same key: versions.env pins). */
function keyDir(): string {
  const v = versions();
  return join(
    cacheRoot(),
    'flux',
    `api-crds_helm-${v.FLUX_HELM_API_VERSION}_reflector-${v.FLUX_IMAGE_REFLECTOR_API_VERSION}_automation-${v.FLUX_IMAGE_AUTOMATION_API_VERSION}_cg-${v.CONTROLLER_TOOLS_VERSION}_r${v.FLUX_CRDGEN_REV}`,
  );
}

const crdFile = (dir: string, which: FluxApiCrd) => join(dir, 'crds', `${GROUP[which]}_${which}.yaml`);

/**
 * Paths of the generated CRD files (HelmRelease from github.com/fluxcd/helm-controller/api, the image
 * automation kinds from image-reflector-controller/api and image-automation-controller/api, versions
 * in test/cluster/versions.env); runs test/flux/crdgen.sh (controller-gen over the api modules; a
 * minute or two, once; needs Go) when absent. Never part of `yarn cluster start`.
 */
export function ensureFluxApiCrds(log: (s: string) => void = () => {}): Record<FluxApiCrd, string> {
  componentUsed('flux-crds');
  const dir = keyDir();
  const files = Object.fromEntries(FLUX_API_CRDS.map((w) => [w, crdFile(dir, w)])) as Record<FluxApiCrd, string>;
  const complete = () => Object.values(files).every((f) => existsSync(f));
  if (!complete()) {
    log(`generating the Flux HelmRelease and image automation CRDs into ${dir} (first time only; needs Go)…`);
    runBuildScript('../flux/crdgen.sh');
    if (!complete()) throw new Error(`test/flux/crdgen.sh finished but ${dir}/crds lacks some of ${FLUX_API_CRDS}`);
  }
  return files;
}

/**
 * Installs (server-side apply, idempotent) the real schemas of the named Flux CRDs into the cluster
 * of `kc`'s current context and waits until each is Established and its storage version lists (so a
 * create right after succeeds). Generates them first when needed (see {@link ensureFluxApiCrds}).
 */
export async function installFluxApiCrds(kc: k8s.KubeConfig, which: readonly FluxApiCrd[]): Promise<void> {
  const files = ensureFluxApiCrds();
  const wanted = [...new Set(which)];
  await installFluxCrds(
    kc,
    wanted.map((w) => files[w]),
  );
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  for (const w of wanted) {
    const crd = loadYaml(files[w])[0] as { spec: { versions: Array<{ name: string; storage?: boolean }> } };
    const version = crd.spec.versions.find((v) => v.storage)?.name ?? crd.spec.versions[0].name;
    await waitFor(`${fluxApiCrdName(w)} ${version} served`, async () => {
      await custom.listClusterCustomObject({ group: GROUP[w], version, plural: w, limit: 1 });
      return true;
    });
  }
}
