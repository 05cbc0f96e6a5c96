#!/usr/bin/env bash
# Runs the generation family: imports the tiny GPT-2 and Llama folders of the test
# fixtures, adapts four descendants on prompt/completion pairs (the three GPT-2 ones
# co-batched), then lets every model continue the same prompts, each base's models in one
# batch, greedily and sampled, and scores the completions with `eval`.
#
# Usage: examples/generation/run.sh [path to scion]   (default: build/cli/scion)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
scion=${1:-$repo/build/cli/scion}
fixtures=$repo/tests/fixtures/hf

"$scion" -C "$here" validate
for base in gpt2 llama; do
  "$scion" -C "$here" lineage show "$base" >/dev/null 2>&1 ||
    "$scion" -C "$here" import "$fixtures/tiny-$base" --as "$base"
done
"$scion" -C "$here" adapt
"$scion" -C "$here" lineage tree
prompts=(--text "the cat says" --text "the owl says" --text "the pig says" --text "a cat says")
"$scion" -C "$here" predict gpt2 gpt2-lora gpt2-prefix gpt2-prompt llama llama-lora --generate \
  "${prompts[@]}" --max-new-tokens 6
"$scion" -C "$here" predict gpt2-lora --generate "${prompts[@]}" --max-new-tokens 6 \
  --temperature 0.8 --top-p 0.9 --seed 3
"$scion" -C "$here" eval gpt2 gpt2-lora gpt2-prefix gpt2-prompt llama llama-lora --data sounds
