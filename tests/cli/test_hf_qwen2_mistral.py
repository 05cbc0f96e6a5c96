#!/usr/bin/env python3
"""Qwen2 and Mistral bases through the CLI against transformers 4.40 + peft 0.10, on the
tiny fixtures (tests/python/make_hf_fixtures.py: tiny-qwen2 with q/k/v biases, tiny-qwen2-tied,
tiny-mistral with sliding_window 3, shorter than the texts):
  - the bases, a LoRA language model of each (Qwen2 on q, k, v: their biases stay the
    base's) and prompt tuning of Mistral (virtual tokens inside the window), exported with
    `--format peft`, load with PeftModel.from_pretrained with no missing or unexpected
    adapter keys and give `scion eval --data`'s mean log-probability per token within 1e-4,
    each text alone and in one right-padded batch;
  - `scion import --peft` reads the LoRA adapters back: the same scores;
  - `--format huggingface` writes Qwen2ForCausalLM / MistralForCausalLM folders (LoRA
    merged, q/k/v biases kept) that transformers loads with nothing missing and that score
    the same;
  - Qwen2 with use_sliding_window true is refused at validate, naming the key.
Skips (77) without the interop Python."""
import json
import os
import shutil

from harness import SOURCE_ROOT, check, run, run_json, temp_dir
from interop_python import CAUSAL_LM_LOGPROBS, interop_python, run_python

PYTHON = interop_python(SOURCE_ROOT)
FIXTURES = os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf")
TOLERANCE = 1e-4  # fp32 both sides; the bound
BOS = 1  # tokenizer_config.json's <s> in the fixtures' tokenizer (its post-processor adds none)

TEXTS = ["the movie was great", "I hated the plot", "a really terrible film!",
         "the acting was not bad, I loved it"]
LM = "{data: corpus, steps: 8, batch_size: 4, max_length: 24, optimizer: {type: adamw, lr: 2.0e-2}, seed: 3, objective: clm}"
SPEC = f"""datasets:
  corpus: {{path: corpus.jsonl}}
models:
  qwen2:
    import: tiny-qwen2
  qwen2-lora:
    from: qwen2
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, k, v, ffn_gate]}}}}
    train: {LM}
  qwen2-lora-back:
    from: qwen2
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, k, v, ffn_gate]}}}}
    train: {LM}
  qwen2-tied:
    import: tiny-qwen2-tied
  qwen2-tied-lora:
    from: qwen2-tied
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, v, o, ffn_out]}}}}
    train: {LM}
  mistral:
    import: tiny-mistral
  mistral-lora:
    from: mistral
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, v, ffn_in]}}}}
    train: {LM}
  mistral-lora-back:
    from: mistral
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, v, ffn_in]}}}}
    train: {LM}
  mistral-prompt:
    from: mistral
    adapt: {{prompt: {{virtual_tokens: 2}}}}
    train: {LM}
"""
FOLDERS = {"qwen2": "tiny-qwen2", "qwen2-tied": "tiny-qwen2-tied", "mistral": "tiny-mistral"}

work = temp_dir()
for folder in FOLDERS.values():
    shutil.copytree(os.path.join(FIXTURES, folder), os.path.join(work, folder))
with open(os.path.join(work, "corpus.jsonl"), "w") as f:
    for text in TEXTS * 2:
        f.write(json.dumps({"text": text}) + "\n")
with open(os.path.join(work, "eval.jsonl"), "w") as f:
    for text in TEXTS:
        f.write(json.dumps({"text": text}) + "\n")
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(SPEC)
for name, folder in FOLDERS.items():
    rc, out, err = run("import", folder, "--as", name, cwd=work)
    check(rc == 0, f"import {folder}: {err}")
rc, out, err = run("adapt", "qwen2-lora", "qwen2-tied-lora", "mistral-lora", "mistral-prompt",
                   cwd=work, timeout=1200)
check(rc == 0, f"adapt failed: {out}{err}")


def scion_logprob(model):
    """Mean log-probability per token of eval.jsonl by `scion eval --json`."""
    metrics = run_json("eval", model, "--data", "eval.jsonl", cwd=work)["results"][0]["metrics"]
    return -metrics["mean_nll"], metrics["tokens"]


def compare_lm(model, folder, adapter):
    theirs = json.loads(run_python(PYTHON, CAUSAL_LM_LOGPROBS, folder, adapter, str(BOS),
                                   json.dumps(TEXTS)))
    check(not theirs["unexpected"], f"{model}: unexpected keys {theirs['unexpected']}")
    check(not theirs["missing"], f"{model}: missing keys {theirs['missing']}")
    ours, tokens = scion_logprob(model)
    check(tokens == sum(theirs["counts"]), f"{model}: {tokens} tokens vs {sum(theirs['counts'])}")
    for mode in ("sums", "batched_sums"):
        mean = sum(theirs[mode]) / sum(theirs["counts"])
        print(f"{model} ({mode}): scion {ours:.6f} vs transformers {mean:.6f}, "
              f"difference {abs(ours - mean):.2e}")
        check(abs(ours - mean) < TOLERANCE, f"{model} ({mode}): scion {ours} vs {mean}")
    return ours


# ---- the bases and their adapters through PEFT ------------------------------------------
for base, folder in FOLDERS.items():
    compare_lm(base, os.path.join(work, folder), "")
scores = {}
for model, base, peft_type in (("qwen2-lora", "qwen2", "LORA"), ("qwen2-tied-lora", "qwen2-tied", "LORA"),
                               ("mistral-lora", "mistral", "LORA"),
                               ("mistral-prompt", "mistral", "PROMPT_TUNING")):
    target = os.path.join(work, model + "-peft")
    run_json("export", model, "--format", "peft", "-o", target, cwd=work)
    with open(os.path.join(target, "adapter_config.json")) as f:
        config = json.load(f)
    check(config["peft_type"] == peft_type and config["task_type"] == "CAUSAL_LM", f"{model}: {config}")
    scores[model] = compare_lm(model, os.path.join(work, FOLDERS[base]), target)
    check(abs(scores[model] - scion_logprob(base)[0]) > 1e-3, f"{model} scores as its base")
check(sorted(json.load(open(os.path.join(work, "qwen2-lora-peft", "adapter_config.json")))
             ["target_modules"]) == ["gate_proj", "k_proj", "q_proj", "v_proj"], "qwen2-lora targets")

# ---- import --peft: the same scores back ------------------------------------------------
for model in ("qwen2-lora", "mistral-lora"):
    imported = run_json("import", "--peft", os.path.join(work, model + "-peft"), "--as",
                        model + "-back", cwd=work)
    check(imported["tensors"] > 0, f"{model}-back: {imported}")
    check(scion_logprob(model + "-back")[0] == scores[model], f"{model}: import --peft changed scores")

# ---- --format huggingface: whole folders, LoRA merged ------------------------------------
for model, architecture in (("qwen2-lora", "Qwen2ForCausalLM"), ("mistral-lora", "MistralForCausalLM")):
    folder = os.path.join(work, model + "-hf")
    exported = run_json("export", model, "--format", "huggingface", "-o", folder, cwd=work)
    check(exported["architecture"] == architecture, f"{model}: {exported}")
    compare_lm(model, folder, "")

# ---- refused by name ----------------------------------------------------------------------
windowed = os.path.join(work, "qwen2-windowed")
shutil.copytree(os.path.join(FIXTURES, "tiny-qwen2"), windowed)
with open(os.path.join(windowed, "config.json")) as f:
    config = json.load(f)
config["use_sliding_window"] = True
with open(os.path.join(windowed, "config.json"), "w") as f:
    json.dump(config, f)
os.makedirs(os.path.join(work, "refused"))
with open(os.path.join(work, "refused", "scion.yaml"), "w") as f:
    f.write("models:\n  q:\n    import: ../qwen2-windowed\n")
rc, out, err = run("validate", cwd=os.path.join(work, "refused"))
check(rc == 2 and "use_sliding_window is true" in out + err, f"use_sliding_window: {rc} {out}{err}")
print("ok")
