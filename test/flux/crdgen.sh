#!/usr/bin/env bash
# Generates the real CRD schemas of the Flux kinds whose controllers the tests do not run, with
# controller-gen over the published api modules (which carry the Go types and kubebuilder markers but
# no CRD YAML):
#   helmreleases                           <- github.com/fluxcd/helm-controller/api@$FLUX_HELM_API_VERSION
#   imagerepositories, imagepolicies       <- github.com/fluxcd/image-reflector-controller/api@$FLUX_IMAGE_REFLECTOR_API_VERSION
#   imageupdateautomations                 <- github.com/fluxcd/image-automation-controller/api@$FLUX_IMAGE_AUTOMATION_API_VERSION
#   controller-gen                         <- sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION
# Output: $PROMO_CACHE_DIR/flux/<key>/{bin/controller-gen,crds/<group>_<plural>.yaml}, one key for all
# (every pin is in it). Reused when present (a second run is a no-op). Not part of `yarn cluster start`:
# test/flux/apiCrds.ts calls it lazily. Prints the output directory.
#
# controller-gen is run the way the Flux Makefiles run it (`cd api; controller-gen crd paths=./...`),
# on a writable copy of each module (the module cache is read-only) so `go list` may complete go.sum.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"
dir="$cache_root/flux/api-crds_helm-${FLUX_HELM_API_VERSION}_reflector-${FLUX_IMAGE_REFLECTOR_API_VERSION}_automation-${FLUX_IMAGE_AUTOMATION_API_VERSION}_cg-${CONTROLLER_TOOLS_VERSION}_r${FLUX_CRDGEN_REV}"
want=(
  helm.toolkit.fluxcd.io_helmreleases.yaml
  image.toolkit.fluxcd.io_imagerepositories.yaml
  image.toolkit.fluxcd.io_imagepolicies.yaml
  image.toolkit.fluxcd.io_imageupdateautomations.yaml
)

complete() {
  local f
  [[ -x "$dir/bin/controller-gen" ]] || return 1
  for f in "${want[@]}"; do [[ -s "$dir/crds/$f" ]] || return 1; done
}
print() { echo "$dir"; }
once "$cache_root/flux/.crdgen.lock" complete print
require go "install Go >= 1.26"

export GOFLAGS="${GOFLAGS:-} -trimpath -mod=mod"
export CGO_ENABLED=0
start=$(date +%s)
mkdir -p "$dir/bin"

if [[ ! -x "$dir/bin/controller-gen" ]]; then
  echo "flux/crdgen.sh: building controller-gen $CONTROLLER_TOOLS_VERSION" >&2
  GOBIN="$dir/bin" go install -gcflags "$test_gcflags" -ldflags "-s -w" "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION"
fi

# Into a fresh directory, renamed into place only when every module generated (no half output).
out="$dir/crds.tmp"
rm -rf "$out" "$dir/src"
mkdir -p "$out"

gen() {
  local mod="$1" version="$2" info src work
  src="$(module_path Dir "$mod@$version")"
  work="$dir/src/${mod//\//_}"
  mkdir -p "$work"
  cp -R "$src"/. "$work"/
  chmod -R u+w "$work"
  echo "flux/crdgen.sh: generating CRDs of $mod $version" >&2
  (cd "$work" && "$dir/bin/controller-gen" crd:crdVersions=v1 paths=./... output:crd:dir="$out")
}

gen github.com/fluxcd/helm-controller/api "$FLUX_HELM_API_VERSION"
gen github.com/fluxcd/image-reflector-controller/api "$FLUX_IMAGE_REFLECTOR_API_VERSION"
gen github.com/fluxcd/image-automation-controller/api "$FLUX_IMAGE_AUTOMATION_API_VERSION"

for f in "${want[@]}"; do
  [[ -s "$out/$f" ]] || { echo "flux/crdgen.sh: controller-gen wrote no $f (got: $(ls "$out"))" >&2; exit 1; }
done
rm -rf "$dir/crds" "$dir/src"
mv "$out" "$dir/crds"
echo "flux/crdgen.sh: generated $(ls "$dir/crds" | tr '\n' ' ')in $(($(date +%s) - start))s" >&2
echo "$dir"
