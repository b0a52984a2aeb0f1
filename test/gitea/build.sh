#!/usr/bin/env bash
# Builds the upstream Gitea server the pull-request delivery tests run, from its Go module (no prebuilt
# download): code.gitea.io/gitea@$GITEA_VERSION, whose go.mod names the module `gitea.dev`, so it is
# built from a writable copy as the main module, as a source checkout builds. v1.27 builds SQLite in by
# default (modernc.org/sqlite, pure Go: no cgo; the old `sqlite sqlite_unlock_notify` tags are gone and
# `sqlite_mattn` would select the cgo driver). Without the `bindata` tag the binary reads its templates
# and options (locales, licences, .gitignore templates) from STATIC_ROOT_PATH, so the build keeps them
# beside it in share/; the module does not carry the built web assets (npm builds them), which the API
# and git over HTTP do not need.
# Output: $PROMO_CACHE_DIR/gitea/gitea-<version>_r<rev>/bin/gitea and .../share, reused when present.
# Not part of `yarn cluster start`: test/gitea/gitea.ts calls it lazily (and `yarn test` builds it in
# the background). Prints the binary's path.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"
dir="$cache_root/gitea/gitea-${GITEA_VERSION}_r${GITEA_BUILD_REV}"
bin="$dir/bin/gitea"
ready() { [[ -x "$bin" && -d "$dir/share/templates" && -d "$dir/share/options" ]]; }
print() { echo "$bin"; }
once "$cache_root/gitea/.build.lock" ready print
require go "install Go >= 1.26.4"
require git "install git (Gitea runs it for every repository operation)"

export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0
start=$(date +%s)
src="$(module_path Dir "code.gitea.io/gitea@${GITEA_VERSION}")"
work="$dir/src"
rm -rf "$work" "$dir/share"
mkdir -p "$dir/bin" "$dir/share"
cp -r "$src" "$work"
chmod -R u+w "$work"
echo "gitea/build.sh: building Gitea ${GITEA_VERSION} (several minutes the first time)" >&2
(cd "$work" && GOWORK=off GOFLAGS="$GOFLAGS -mod=mod" nice -n 19 go build -gcflags "$test_gcflags" \
  -ldflags "-s -w -X 'main.Version=${GITEA_VERSION#v}'" -o "$bin.tmp" . >&2)
cp -r "$work/templates" "$work/options" "$work/public" "$dir/share/"
mv "$bin.tmp" "$bin"
rm -rf "$work"
echo "gitea/build.sh: built in $(($(date +%s) - start))s" >&2
echo "$bin"
