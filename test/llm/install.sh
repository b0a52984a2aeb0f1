#!/usr/bin/env bash
# Installs llama.cpp's OpenAI-compatible server for the assistant tests from the prebuilt PyPI wheel
# xllamacpp (llama.cpp's own server code and HTTP listener, built for x86-64 with AVX2/FMA and
# published with its CPU wheels), checked against the sha256 pinned in versions.env, into a venv of
# its own; serve.py is installed beside it as `llama-server`, taking the llama-server flags the tests
# use. Seconds, where compiling llama-server from source took 10+ minutes of both cores.
# Output: $PROMO_CACHE_DIR/llm/xllamacpp-<version>_r<rev>/bin/llama-server, reused when present.
# Not part of `yarn cluster start`: test/llm/llamaServer.ts calls it lazily. Prints the launcher's path.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"
dir="$cache_root/llm/xllamacpp-${XLLAMACPP_VERSION}_r${XLLAMACPP_REV}"
bin="$dir/bin/llama-server"

ready() { [[ -x "$bin" ]]; }
print() { echo "$bin"; }
once "$cache_root/llm/.install.lock" ready print
require python3 "install Python >= 3.10 with venv (apt-get install python3 python3-venv)"

start=$(date +%s)
rm -rf "$dir"
python3 -m venv "$dir/venv" >&2
# --require-hashes: pip refuses a wheel whose sha256 is not the one pinned (and any other package).
printf 'xllamacpp==%s --hash=sha256:%s\n' "$XLLAMACPP_VERSION" "$XLLAMACPP_WHEEL_SHA256" >"$dir/requirements.txt"
"$dir/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --only-binary :all: \
  --require-hashes -r "$dir/requirements.txt" >&2
mkdir -p "$dir/bin"
cp "$here/serve.py" "$dir/bin/serve.py"
cat >"$bin.tmp" <<SH
#!/bin/sh
exec "$dir/venv/bin/python" "$dir/bin/serve.py" "\$@"
SH
chmod +x "$bin.tmp"
mv "$bin.tmp" "$bin"
echo "llm/install.sh: installed xllamacpp ${XLLAMACPP_VERSION} in $(($(date +%s) - start))s" >&2
echo "$bin"
