#!/usr/bin/env bash
# Builds sigstore's cosign CLI from its Go module (no prebuilt download):
# github.com/sigstore/cosign/v3@$COSIGN_VERSION, ./cmd/cosign. The supply-chain tests use it to sign test
# images and SBOM attestations with key pairs (no Fulcio or Rekor here: --tlog-upload=false) and to verify
# kpromo's promotion attestations the way the ecosystem's own tool does.
# Output: $PROMO_CACHE_DIR/cosign/cosign-<version>_r<rev>/bin/cosign, reused when present.
# Not part of `yarn cluster start`: test/cosign/cosign.ts calls it lazily (and `yarn test` builds it in
# the background). Prints the binary's path.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/versions.env
source "$here/../cluster/versions.env"
cache_root="${PROMO_CACHE_DIR:-$(cd "$here/../.." && pwd)/.cache}"
dir="$cache_root/cosign/cosign-${COSIGN_VERSION}_r${COSIGN_BUILD_REV}"
bin="$dir/bin/cosign"
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi
command -v go >/dev/null || { echo "cosign/build.sh: Go toolchain not found; install Go >= 1.25" >&2; exit 1; }

# Two test files may ask at once: one builds, the other waits and then finds the binary.
mkdir -p "$cache_root/cosign"
exec 9>"$cache_root/cosign/.build.lock"
flock 9
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi

export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0
start=$(date +%s)
info="$(go mod download -json "github.com/sigstore/cosign/v3@${COSIGN_VERSION}")"
src="$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$info")"
[[ -d "$src" ]] || { echo "cosign/build.sh: go mod download gave no Dir:" >&2; echo "$info" >&2; exit 1; }
mkdir -p "$dir/bin"
echo "cosign/build.sh: building cosign ${COSIGN_VERSION} (a few minutes the first time)" >&2
(cd "$src" && GOWORK=off GOFLAGS="$GOFLAGS -mod=mod" nice -n 19 go build -ldflags "-s -w" -o "$bin.tmp" ./cmd/cosign >&2)
mv "$bin.tmp" "$bin"
echo "cosign/build.sh: built in $(($(date +%s) - start))s" >&2
echo "$bin"
