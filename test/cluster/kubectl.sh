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
# shellcheck source=versions.env
source "$here/versions.env"
cache_root="${PROMO_CACHE_DIR:-$(cd "$here/../.." && pwd)/.cache}"
dir="$cache_root/kubectl/kubectl-${K8S_VERSION}_r${KUBECTL_BUILD_REV}"
out="$dir/bin"
if [[ -x "$out/kubectl" ]]; then echo "$out"; exit 0; fi
command -v go >/dev/null || { echo "kubectl.sh: Go toolchain not found; install Go >= 1.25" >&2; exit 1; }

# Two test files may ask at once: one builds, the other waits and then finds the binary.
mkdir -p "$cache_root/kubectl"
exec 9>"$cache_root/kubectl/.build.lock"
flock 9
if [[ -x "$out/kubectl" ]]; then echo "$out"; exit 0; fi

export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0
start=$(date +%s)
work="$dir/src"
mkdir -p "$out" "$work"

# k8s.io/kubernetes replaces its staging modules (k8s.io/kubectl, client-go, ...) with ./staging
# paths, which a consumer cannot use: the wrapper module replaces each with its published tag
# (v0.<minor>.<patch> for v1.<minor>.<patch>), read from the module's own go.mod.
staging="v0.${K8S_VERSION#v1.}"
gomod="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
[[ -s "$gomod" ]] || { echo "kubectl.sh: go mod download k8s.io/kubernetes@$K8S_VERSION gave no go.mod" >&2; exit 1; }
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
