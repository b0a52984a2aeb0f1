#!/usr/bin/env bash
# Builds the upstream Flux controllers the git-delivery tests run, from their Go modules (no prebuilt
# downloads), and copies the CRDs each module ships (config/crd/bases):
#   source-controller     <- github.com/fluxcd/source-controller@$FLUX_SOURCE_VERSION
#   kustomize-controller  <- github.com/fluxcd/kustomize-controller@$FLUX_KUSTOMIZE_VERSION
# Output: $PROMO_CACHE_DIR/flux/<name>-<version>_r<rev>/{bin/<name>,crds/*.yaml}, one key per controller.
# Reused when present (a second run is a no-op). Not part of `yarn cluster start`: test/flux/flux.ts
# calls it lazily. Prints one line per controller: "<name> <dir>".
#
# Both modules carry `replace ./api` in their go.mod, which `go install module@version` refuses, so
# each is built from a small wrapper module: the controller's own go.mod (same requirements and
# replacements, minus the local ./api one, whose published tag is required instead) plus a
# requirement on the controller module itself.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"

key_dir() { echo "$cache_root/flux/$1-$2_r${FLUX_BUILD_REV}"; }
complete() { [[ -x "$1/bin/$2" ]] && compgen -G "$1/crds/*.yaml" >/dev/null; }

targets=("source-controller $FLUX_SOURCE_VERSION" "kustomize-controller $FLUX_KUSTOMIZE_VERSION")

# Module versions the controllers require that the module proxy reachable here does not serve, each
# replaced by a served version of the same minor line. source-controller v1.9.6 requires
# github.com/fluxcd/pkg/artifact v0.18.3; v0.18.1 and v0.18.2 changed only go.mod/go.sum (dependency
# bumps) over v0.18.0, and the build still selects the newer dependencies, which the controller's own
# go.mod requires. Checked for the versions pinned in versions.env: revisit when bumping them.
replacements() {
  case "$1" in
    source-controller) echo "github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact v0.18.0" ;;
  esac
}

all_present() {
  local t
  for t in "${targets[@]}"; do
    set -- $t
    complete "$(key_dir "$1" "$2")" "$1" || return 1
  done
}

print() {
  local t
  for t in "${targets[@]}"; do
    set -- $t
    echo "$1 $(key_dir "$1" "$2")"
  done
}

once "$cache_root/flux/.build.lock" all_present print
require go "install Go >= 1.26"

export GOFLAGS="${GOFLAGS:-} -trimpath -mod=mod"
export CGO_ENABLED=0

build_one() {
  local name="$1" version="$2" mod="github.com/fluxcd/$1"
  local dir
  dir="$(key_dir "$name" "$version")"
  complete "$dir" "$name" && return
  local start src
  start=$(date +%s)
  src="$(module_path Dir "$mod@$version")"
  local work="$dir/src"
  rm -rf "$work"
  mkdir -p "$work" "$dir/bin" "$dir/crds"
  {
    sed -e "s#^module .*#module promotions.local/fluxbuild/$name#" -e '/=> \.\//d' "$src/go.mod"
    echo
    echo "require $mod $version"
    local r
    while read -r r; do [[ -n "$r" ]] && echo "replace $r"; done <<<"$(replacements "$name")"
  } >"$work/go.mod"
  cp "$src/go.sum" "$work/go.sum"
  chmod u+w "$work/go.mod" "$work/go.sum"
  echo "flux/build.sh: building $name $version" >&2
  (cd "$work" && go build -gcflags "$test_gcflags" -ldflags "-s -w" -o "$dir/bin/$name.tmp" "$mod")
  mv "$dir/bin/$name.tmp" "$dir/bin/$name"
  cp "$src"/config/crd/bases/*.yaml "$dir/crds/"
  chmod u+w "$dir"/crds/*.yaml
  echo "flux/build.sh: built $name $version in $(($(date +%s) - start))s" >&2
}

for t in "${targets[@]}"; do
  # shellcheck disable=SC2086
  build_one $t
done
print
