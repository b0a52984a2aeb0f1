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
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"
dir="$cache_root/cosign/cosign-${COSIGN_VERSION}_r${COSIGN_BUILD_REV}"
bin="$dir/bin/cosign"
ready() { [[ -x "$bin" ]]; }
print() { echo "$bin"; }
once "$cache_root/cosign/.build.lock" ready print
require go "install Go >= 1.25"

export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0
start=$(date +%s)
src="$(module_path Dir "github.com/sigstore/cosign/v3@${COSIGN_VERSION}")"
mkdir -p "$dir/bin"
echo "cosign/build.sh: building cosign ${COSIGN_VERSION} (a few minutes the first time)" >&2
(cd "$src" && GOWORK=off GOFLAGS="$GOFLAGS -mod=mod" nice -n 19 go build -gcflags "$test_gcflags" -ldflags "-s -w" -o "$bin.tmp" ./cmd/cosign >&2)
mv "$bin.tmp" "$bin"
echo "cosign/build.sh: built in $(($(date +%s) - start))s" >&2
echo "$bin"
