#!/usr/bin/env bash
# Runs the methods family: imports the tiny BERT folder of the test fixtures, trains the
# LoRA, rsLoRA, DoRA and (IA)³ descendants co-batched, classifies two texts with each, and
# exports each as a PEFT adapter (exports/<model>-peft: adapter_config.json with use_rslora /
# use_dora, DoRA's lora_magnitude_vector tensors, and an IA3 adapter's ia3_l vectors).
#
# Usage: examples/methods/run.sh [path to scion]   (default: build/cli/scion)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
scion=${1:-$repo/build/cli/scion}

"$scion" -C "$here" validate
"$scion" -C "$here" lineage show bert >/dev/null 2>&1 ||
  "$scion" -C "$here" import "$repo/tests/fixtures/hf/tiny-bert" --as bert
"$scion" -C "$here" adapt
"$scion" -C "$here" lineage tree
"$scion" -C "$here" predict lora rslora dora ia3 --text "a splendid film" --text "a dreadful film"
mkdir -p "$here/exports"
for model in lora rslora dora ia3; do
  "$scion" -C "$here" export "$model" --format peft -o "$here/exports/$model-peft" --force
done
