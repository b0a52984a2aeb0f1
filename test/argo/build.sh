#!/usr/bin/env bash
# Builds the upstream Argo Rollouts controller the workload-kind tests run, from its Go module (no
# prebuilt downloads), and copies the CRDs the module ships (manifests/crds):
#   rollouts-controller <- github.com/argoproj/argo-rollouts/cmd/rollouts-controller@$ARGO_ROLLOUTS_VERSION
# Output: $PROMO_CACHE_DIR/argo-rollouts/argo-rollouts-<version>_r<rev>/{bin/rollouts-controller,crds/*.yaml}.
# Reused when present (a second run is a no-op). Not part of `yarn cluster start`: test/argo/rollouts.ts
# calls it lazily. Prints the output directory.
#
# The module's go.mod pins k8s.io/* (and a few forks) with replace directives, which
# `go install module@version` refuses; as test/cluster/build.sh does for Kubernetes, it is built
# from a small wrapper module that requires it and repeats its replace lines (and its go.sum).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"
mod=github.com/argoproj/argo-rollouts
version="$ARGO_ROLLOUTS_VERSION"
dir="$cache_root/argo-rollouts/argo-rollouts-${version}_r${ARGO_BUILD_REV}"

complete() { [[ -x "$dir/bin/rollouts-controller" ]] && compgen -G "$dir/crds/*.yaml" >/dev/null; }
print() { echo "$dir"; }
once "$cache_root/argo-rollouts/.build.lock" complete print
require go "install Go >= 1.26"

export GOFLAGS="${GOFLAGS:-} -trimpath -mod=mod"
export CGO_ENABLED=0
start=$(date +%s)
src="$(module_path Dir "$mod@$version")"

work="$dir/src"
rm -rf "$work"
mkdir -p "$work" "$dir/bin" "$dir/crds"
{
  echo "module promotions.local/argobuild"
  echo
  # Same language version (and toolchain line, if any) as the upstream module.
  grep -E '^(go|toolchain) ' "$src/go.mod"
  echo
  echo "require $mod $version"
  echo
  # The upstream replace block, verbatim (single-line `replace x => y` forms too); none is a local path.
  awk '/^replace \($/{inb=1; print; next} inb{print; if ($0 == ")") inb=0; next} /^replace [^(]/{print}' "$src/go.mod"
} >"$work/go.mod"
if grep -E '=> \.\.?/' "$work/go.mod" >&2; then
  echo "argo/build.sh: $mod@$version replaces a module with a local path; adapt this script" >&2
  exit 1
fi
cp "$src/go.sum" "$work/go.sum"
chmod u+w "$work/go.mod" "$work/go.sum"
cat >"$work/tools.go" <<'GO'
//go:build tools

package tools

import _ "github.com/argoproj/argo-rollouts/cmd/rollouts-controller"
GO
p="$mod/utils/version"
ldflags="-s -w -X $p.version=${version#v} -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
echo "argo/build.sh: building rollouts-controller $version" >&2
(cd "$work" && go build -gcflags "$test_gcflags" -ldflags "$ldflags" -o "$dir/bin/rollouts-controller.tmp" "$mod/cmd/rollouts-controller")
mv "$dir/bin/rollouts-controller.tmp" "$dir/bin/rollouts-controller"
for f in "$src"/manifests/crds/*-crd.yaml; do cp "$f" "$dir/crds/"; done
chmod u+w "$dir"/crds/*.yaml
echo "argo/build.sh: built rollouts-controller $version in $(($(date +%s) - start))s" >&2
echo "$dir"
