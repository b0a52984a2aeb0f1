#!/usr/bin/env bash
# Builds the real upstream control-plane binaries from Go modules (no prebuilt downloads):
#   kube-apiserver, kube-controller-manager, kube-scheduler <- k8s.io/kubernetes (wrapper module, staging modules replaced by published versions)
#   etcd                                     <- go.etcd.io/etcd/server/v3 (etcdmain)
#   kwok                                     <- sigs.k8s.io/kwok
#   helm                                     <- helm.sh/helm/v3 (the chart tests' CLI; not part of the clusters)
#   registry                                 <- github.com/distribution/distribution/v3 (the OCI registry of the demo and tests)
# Output: $PROMO_CACHE_DIR/k8s/<key>/bin and $PROMO_CACHE_DIR/helm/<key>/bin. Reused when present, so a
# second run is a no-op. Prints the k8s bin dir; `build.sh k8s` builds what every integration test
# needs, the control plane and the registry (what ./kpromo builds beside yarn install and `yarn
# cluster start` waits for; helm builds beside the tests), `build.sh helm` / `build.sh registry`
# only that one and prints its bin dir.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
key="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_r${BUILD_REV}"
out="$cache_root/k8s/$key/bin"
want=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok)
# Separate key, so pinning another helm never rebuilds the control plane (and vice versa).
helm_out="$cache_root/helm/helm-${HELM_VERSION}_r${BUILD_REV}/bin"
registry_out="$cache_root/registry/registry-${REGISTRY_VERSION}_r${BUILD_REV}/bin"
only="${1:-}"
[[ -z "$only" || "$only" == k8s || "$only" == helm || "$only" == registry ]] || {
  echo "build.sh: unknown target '$only' (k8s, helm or registry)" >&2
  exit 2
}

find_missing() {
  missing=()
  if [[ -z "$only" || "$only" == k8s ]]; then
    for b in "${want[@]}"; do [[ -x "$out/$b" ]] || missing+=("$b"); done
    [[ -s "$out/kwok-stages.yaml" ]] || missing+=(kwok-stages.yaml)
  fi
  k8s_missing=${#missing[@]}
  [[ -n "$only" && "$only" != helm ]] || [[ -x "$helm_out/helm" ]] || missing+=(helm)
  [[ -n "$only" && "$only" != registry && "$only" != k8s ]] || [[ -x "$registry_out/registry" ]] || missing+=(registry)
}
result="$out"
if [[ "$only" == helm ]]; then result="$helm_out"; fi
if [[ "$only" == registry ]]; then result="$registry_out"; fi
find_missing
if [[ ${#missing[@]} -eq 0 ]]; then echo "$result"; exit 0; fi
# The test run builds components in the background while test files ask for them: one builds, the
# other waits here and then finds what it needs.
mkdir -p "$cache_root"
# One lock per target, so that helm and the registry build side by side.
exec 9>"$cache_root/.build-sh-${only:-all}.lock"
flock 9
find_missing
if [[ ${#missing[@]} -eq 0 ]]; then echo "$result"; exit 0; fi
command -v go >/dev/null || { echo "build.sh: Go toolchain not found; install Go >= 1.25" >&2; exit 1; }

work="$cache_root/k8s/$key/src"
if [[ $k8s_missing -gt 0 ]]; then mkdir -p "$out" "$work"; fi
export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0
ldflags="-s -w"
start=$(date +%s)

# What hack/lib/version.sh stamps in an upstream release build, so /version reports the real version.
kube_version_ldflags() {
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local f
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    f+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$f"
}

build_kube() {
  local d="$work/kubernetes"
  mkdir -p "$d"
  local minor="v0.${K8S_VERSION#v1.}"
  # The kubernetes go.mod replaces every k8s.io staging module with ./staging/...; a consumer must
  # replace them with their published tags instead. Read the list from the module's own go.mod.
  local gomod
  gomod="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  {
    echo "module promotions.local/kubebuild"
    echo
    echo "go 1.25.0"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    grep -E '=> \./staging/src/' "$gomod" | awk -v v="$minor" '{print "\t" $1 " => " $1 " " v}'
    echo ")"
  } >"$d/go.mod"
  cat >"$d/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
  (cd "$d" && go mod tidy -e >/dev/null 2>&1 || true; cd "$d" && go mod download >/dev/null)
  (cd "$d" && go get k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler >/dev/null 2>&1 || true)
  local pkgs=() b
  for b in kube-apiserver kube-controller-manager kube-scheduler; do
    [[ -x "$out/$b" ]] || pkgs+=("k8s.io/kubernetes/cmd/$b")
  done
  [[ ${#pkgs[@]} -gt 0 ]] || return 0
  # One go build for all three: one package graph, so their links (one core each) run side by side.
  echo "build.sh: building ${pkgs[*]##*/} $K8S_VERSION" >&2
  (cd "$d" && go build -ldflags "$ldflags $(kube_version_ldflags)" -o "$out/" "${pkgs[@]}")
}

build_etcd() {
  [[ -x "$out/etcd" ]] && return
  local d="$work/etcd"
  mkdir -p "$d"
  cat >"$d/go.mod" <<MOD
module promotions.local/etcdbuild

go 1.25.0

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
MOD
  cat >"$d/main.go" <<'GO'
// Same entry point as etcd's own main package.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  echo "build.sh: building etcd $ETCD_VERSION" >&2
  (cd "$d" && go mod tidy >/dev/null && go build -ldflags "$ldflags" -o "$out/etcd" .)
}

build_kwok() {
  if [[ ! -x "$out/kwok" ]]; then
    echo "build.sh: building kwok $KWOK_VERSION" >&2
    GOBIN="$out" go install -ldflags "$ldflags" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  fi
  # kwok needs Stage objects to act; use the upstream "fast" set (what kwokctl embeds) from the module.
  if [[ ! -s "$out/kwok-stages.yaml" ]]; then
    local dir
    dir="$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
    local s="$dir/kustomize/stage"
    for f in "$s"/node/fast/node-initialize.yaml "$s"/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml "$s"/pod/fast/pod-ready.yaml "$s"/pod/fast/pod-complete.yaml "$s"/pod/fast/pod-delete.yaml; do
      echo "---"; cat "$f"
    done >"$out/kwok-stages.yaml"
  fi
}

build_helm() {
  [[ -x "$helm_out/helm" ]] && return
  mkdir -p "$helm_out"
  # Stamp what helm's Makefile stamps: the version, and the default Kubernetes version (used by
  # `helm lint`/`helm template` capabilities) taken from the client-go in helm's own go.mod.
  local gomod k8s_minor p=helm.sh/helm/v3 f
  gomod="$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  k8s_minor="$(awk '$1 == "k8s.io/client-go" {print $2}' "$gomod" | cut -d. -f2)"
  f="-X $p/internal/version.version=$HELM_VERSION -X $p/internal/version.gitTreeState=clean"
  for pkg in pkg/lint/rules pkg/chartutil; do
    f+=" -X $p/$pkg.k8sVersionMajor=1 -X $p/$pkg.k8sVersionMinor=$k8s_minor"
  done
  echo "build.sh: building helm $HELM_VERSION" >&2
  GOBIN="$helm_out" go install -gcflags "$test_gcflags" -ldflags "$ldflags $f" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

build_registry() {
  [[ -x "$registry_out/registry" ]] && return
  mkdir -p "$registry_out"
  echo "build.sh: building registry (distribution) $REGISTRY_VERSION" >&2
  GOBIN="$registry_out" go install -ldflags "$ldflags -X github.com/distribution/distribution/v3/version.version=$REGISTRY_VERSION" \
    "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION"
}

if [[ $k8s_missing -gt 0 ]]; then
  build_etcd
  build_kwok
  build_kube
fi
[[ -n "$only" && "$only" != registry && "$only" != k8s ]] || build_registry
[[ -n "$only" && "$only" != helm ]] || build_helm
echo "build.sh: built ${missing[*]} in $(( $(date +%s) - start ))s" >&2
echo "$result"
