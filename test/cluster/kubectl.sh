#!/usr/bin/env bash
# Builds kubectl from the Kubernetes module at the control plane's version (no prebuilt download):
#   kubectl <- k8s.io/kubernetes/cmd/kubectl@$K8S_VERSION
# Output: $PROMO_CACHE_DIR/kubectl/kubectl-<version>_r<rev>/bin/kubectl. Its own cache key, so
# building it never rebuilds the control plane (build.sh's BUILD_REV) and pinning another Kubernetes
# rebuilds both. Reused when present (a second run is a no-op); shares Go's build and module caches
# with build.sh, so after `yarn cluster start` it compiles from what is already downloaded. Not part
# of `yarn cluster start`: test/cluster/kubectl.ts (kubectlPath) calls it lazily. Prints the bin dir.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
dir="$cache_root/kubectl/kubectl-${K8S_VERSION}_r${KUBECTL_BUILD_REV}"
out="$dir/bin"
ready() { [[ -x "$out/kubectl" ]]; }
print() { echo "$out"; }
once "$cache_root/kubectl/.build.lock" ready print
require go "install Go >= 1.25"

export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0
start=$(date +%s)
work="$dir/src"
mkdir -p "$out" "$work"

# k8s.io/kubernetes replaces its staging modules (k8s.io/kubectl, client-go, ...) with ./staging
# paths, which a consumer cannot use: the wrapper module replaces each with its published tag
# (v0.<minor>.<patch> for v1.<minor>.<patch>), read from the module's own go.mod.
staging="v0.${K8S_VERSION#v1.}"
gomod="$(module_path GoMod "k8s.io/kubernetes@$K8S_VERSION")"
printf 'module promotions.local/kubectlbuild\n\ngo 1.25.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$K8S_VERSION" >"$work/go.mod"
awk -v v="$staging" '$2 == "=>" && $3 ~ /^\.\/staging\/src\// {print "\t" $1 " => " $1 " " v}' "$gomod" >>"$work/go.mod"
echo ")" >>"$work/go.mod"
printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kubectl"\n' >"$work/tools.go"
(cd "$work" && go mod tidy >/dev/null)

# The version stamps hack/lib/version.sh puts in a release build, so `kubectl version` is truthful.
minor="${K8S_VERSION#v1.}"
minor="${minor%%.*}"
stamps=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamps+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  stamps+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
echo "kubectl.sh: building kubectl $K8S_VERSION" >&2
(cd "$work" && go build -ldflags "-s -w$stamps" -o "$out/kubectl.tmp" k8s.io/kubernetes/cmd/kubectl)
mv "$out/kubectl.tmp" "$out/kubectl"
echo "kubectl.sh: built kubectl $K8S_VERSION in $(($(date +%s) - start))s" >&2
echo "$out"
