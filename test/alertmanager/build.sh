#!/usr/bin/env bash
# Builds the upstream Prometheus Alertmanager the line-stop receiver test runs, from its Go module (no
# prebuilt download): github.com/prometheus/alertmanager@$ALERTMANAGER_VERSION, ./cmd/alertmanager.
# The module embeds its web UI from ui/app/dist, which its release process builds with npm and the
# module zip does not carry: the build uses a copy of the module with an empty placeholder UI (the
# tests use Alertmanager's API and webhooks, not its UI).
# Output: $PROMO_CACHE_DIR/alertmanager/alertmanager-<version>_r<rev>/bin/alertmanager, reused when
# present. Not part of `yarn cluster start`: test/alertmanager/alertmanager.ts calls it lazily
# (and `yarn test` builds it in the background). Prints the binary's path.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"
dir="$cache_root/alertmanager/alertmanager-${ALERTMANAGER_VERSION}_r${ALERTMANAGER_BUILD_REV}"
bin="$dir/bin/alertmanager"
ready() { [[ -x "$bin" ]]; }
print() { echo "$bin"; }
once "$cache_root/alertmanager/.build.lock" ready print
require go "install Go >= 1.26"

export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0
start=$(date +%s)
src="$(module_path Dir "github.com/prometheus/alertmanager@${ALERTMANAGER_VERSION}")"
work="$dir/src"
rm -rf "$work"
mkdir -p "$dir/bin"
cp -r "$src" "$work"
chmod -R u+w "$work"
mkdir -p "$work/ui/app/dist/elm" "$work/ui/app/dist/mantine"
echo '<!doctype html><title>Alertmanager (kpromo test build: no UI)</title>' >"$work/ui/app/dist/elm/index.html"
cp "$work/ui/app/dist/elm/index.html" "$work/ui/app/dist/mantine/index.html"
echo "alertmanager/build.sh: building Alertmanager ${ALERTMANAGER_VERSION} (a few minutes the first time)" >&2
(cd "$work" && GOFLAGS="$GOFLAGS -mod=mod" nice -n 19 go build -gcflags "$test_gcflags" -ldflags "-s -w" -o "$bin.tmp" ./cmd/alertmanager >&2)
mv "$bin.tmp" "$bin"
rm -rf "$work"
echo "alertmanager/build.sh: built in $(($(date +%s) - start))s" >&2
echo "$bin"
