#!/usr/bin/env bash
# Builds the upstream Prometheus server the verification tests query, from its Go module (no prebuilt
# download): github.com/prometheus/prometheus@$PROMETHEUS_VERSION, ./cmd/prometheus.
# Built with the module's own `remove_all_sd` tag: the tests scrape static targets, and leaving out the
# cloud service-discovery plugins (AWS, Azure, GCE, Kubernetes, ...) roughly halves the build. Without
# the `builtinassets` tag the web UI is not embedded (the tests use the HTTP query API, not the UI).
# Output: $PROMO_CACHE_DIR/prometheus/prometheus-<version>_r<rev>/bin/prometheus, reused when present.
# Not part of `yarn cluster start`: test/prometheus/prometheus.ts calls it lazily (and `yarn test`
# builds it in the background). Prints the binary's path.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"
dir="$cache_root/prometheus/prometheus-${PROMETHEUS_VERSION}_r${PROMETHEUS_BUILD_REV}"
bin="$dir/bin/prometheus"
ready() { [[ -x "$bin" ]]; }
print() { echo "$bin"; }
once "$cache_root/prometheus/.build.lock" ready print
require go "install Go >= 1.26.7"

export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0
start=$(date +%s)
src="$(module_path Dir "github.com/prometheus/prometheus@${PROMETHEUS_VERSION}")"
mkdir -p "$dir/bin"
echo "prometheus/build.sh: building Prometheus ${PROMETHEUS_VERSION} (a few minutes the first time)" >&2
(cd "$src" && GOWORK=off GOFLAGS="$GOFLAGS -mod=mod" nice -n 19 go build -gcflags "$test_gcflags" -tags remove_all_sd -ldflags "-s -w" -o "$bin.tmp" ./cmd/prometheus >&2)
mv "$bin.tmp" "$bin"
echo "prometheus/build.sh: built in $(($(date +%s) - start))s" >&2
echo "$bin"
