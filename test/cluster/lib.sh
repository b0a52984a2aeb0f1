# shellcheck shell=bash
# Sourced by each script that builds or installs an upstream component into the cache keyed by version
# (test/*/build.sh, test/cluster/build.sh and kubectl.sh, test/flux/crdgen.sh, test/llm/install.sh), right after
# `set -euo pipefail`: loads the pinned versions and sets `cache_root`.
lib_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$lib_dir/versions.env"
cache_root="${PROMO_CACHE_DIR:-$(cd "$lib_dir/../.." && pwd)/.cache}"
# How messages name the script: "prometheus/build.sh".
script_name="$(basename "$(dirname "$0")")/$(basename "$0")"

# once <lock file> <ready command> <print command>: when the component is ready, prints where it is
# and ends the script. Otherwise takes the lock and asks again: two test files may ask at once, and
# one builds while the other waits and then finds the result. The lock is held until the script ends.
once() {
  local lock="$1" ready="$2" print="$3"
  if $ready; then $print; exit 0; fi
  mkdir -p "$(dirname "$lock")"
  exec 9>"$lock"
  flock 9
  if $ready; then $print; exit 0; fi
}

# require <command> <how to get it>: ends the script with a message saying what to install.
require() {
  command -v "$1" >/dev/null || { echo "$script_name: $1 not found; $2" >&2; exit 1; }
}

# module_path <Dir|GoMod> <module@version>: the module's source folder or go.mod in Go's module cache,
# downloaded through the module proxy the first time.
module_path() {
  local info path
  info="$(go mod download -json "$2")"
  path="$(sed -n "s/.*\"$1\": \"\(.*\)\".*/\1/p" <<<"$info")"
  [[ -e "$path" ]] || { echo "$script_name: go mod download $2 gave no $1:" >&2; echo "$info" >&2; exit 1; }
  echo "$path"
}

# Go compiler flags for the components only some tests run (Flux, Argo Rollouts, Prometheus,
# Alertmanager, cosign, the OTel Collector, helm, controller-gen), not for the control plane, kubectl
# (which shares its build cache) and the registry that every test talks to: no optimisation and no
# inlining. Measured on Alertmanager from an empty Go build cache: 205 against 285 CPU-seconds (-28%);
# the tests ask little work of these processes. Not part of any cache key: the binaries behave the
# same, so optimised builds already in a cache stay valid.
test_gcflags='all=-N -l'
