#!/usr/bin/env python3
"""Greedy generation against transformers 4.40 + peft 0.10 `generate`, token for token, on
the tiny GPT-2- and Llama-shaped fixtures. Descendants trained on a prompt/completion
dataset (the loss on completions only) with LoRA, prefix and prompt tuning, on GPT-2, on
the fixture's Llama (grouped-query attention: 4 query heads, 2 key/value heads) and on a
Llama with one key/value head per query head (prefix tuning needs it: PEFT's prefix has
as many key heads as query heads), and a descendant of a descendant (prefix tuning on a
LoRA, exported over DIR/base with the LoRA merged), and LoRA descendants of the tiny Qwen2
(q/k/v biases) and Mistral (sliding_window 3: the window moves along the cache as tokens
are generated) with Mistral prompt tuning, each generate in ONE `scion predict
--generate` call per base (mixed adapters in one batch). Each exported adapter, loaded
with PeftModel.from_pretrained, generates every prompt alone (and the bases bare) with
do_sample=False, the same EOS and max_new_tokens; the token ids must be equal. Skips (77)
without the interop Python."""
import json
import os
import shutil

from harness import SOURCE_ROOT, check, run, run_json, temp_dir
from interop_python import interop_python, run_python

PYTHON = interop_python(SOURCE_ROOT)
FIXTURES = os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf")
MAX_NEW = 12  # within max_length (GPT-2 48, Llama 64) after the longest framed prompt

PAIRS = [("the cat says", " meow meow"), ("the dog says", " woof"), ("a movie was", " great fun"),
         ("the plot", " was thin"), ("I loved", " the acting"), ("really bad", " writing")]
PROMPTS = ["the cat says", "a movie was", "hello", "the acting was not bad, I loved it"]

RECIPE = "{data: pairs, steps: 12, batch_size: 6, max_length: 24, optimizer: {type: adamw, lr: 3.0e-2}, seed: %d}"
SPEC = f"""datasets:
  pairs: {{path: pairs.jsonl, prompt_field: prompt, completion_field: completion}}
models:
  gpt2:
    import: tiny-gpt2
  gpt2-lora:
    from: gpt2
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, v, o, ffn_out]}}}}
    train: {RECIPE % 1}
  gpt2-prefix:
    from: gpt2
    adapt: {{prefix: {{virtual_tokens: 3}}}}
    train: {RECIPE % 2}
  gpt2-prompt:
    from: gpt2
    adapt: {{prompt: {{virtual_tokens: 4}}}}
    train: {RECIPE % 3}
  llama:
    import: tiny-llama
  llama-lora:
    from: llama
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, k, v, ffn_gate]}}}}
    train: {RECIPE % 4}
  llama-prompt:
    from: llama
    adapt: {{prompt: {{virtual_tokens: 3}}}}
    train: {RECIPE % 5}
  mha:
    import: tiny-llama-mha
  mha-prefix:
    from: mha
    adapt: {{prefix: {{virtual_tokens: 2}}}}
    train: {RECIPE % 6}
  mha-lora:
    from: mha
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, v]}}}}
    train: {RECIPE % 7}
  mha-lora-prefix:
    from: mha-lora
    adapt: {{prefix: {{virtual_tokens: 2}}}}
    train: {RECIPE % 8}
  qwen2:
    import: tiny-qwen2
  qwen2-lora:
    from: qwen2
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, k, v, ffn_gate]}}}}
    train: {RECIPE % 9}
  mistral:
    import: tiny-mistral
  mistral-lora:
    from: mistral
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, v, o]}}}}
    train: {RECIPE % 10}
  mistral-prompt:
    from: mistral
    adapt: {{prompt: {{virtual_tokens: 3}}}}
    train: {RECIPE % 11}
"""

# A Llama with one key/value head per query head, from the tiny fixture's shapes and
# tokenizer, randomly initialised by transformers (as test_hf_peft_decoders.py makes it).
MAKE_MHA = r"""
import json, sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
src, dst = sys.argv[1], sys.argv[2]
config = json.load(open(src + "/config.json"))
config["num_key_value_heads"] = config["num_attention_heads"]
torch.manual_seed(7)
model = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in config.items() if k not in ("architectures", "model_type", "transformers_version")}))
model.save_pretrained(dst, safe_serialization=True)
"""

# Greedy generate() of each (base folder, adapter folder or "") on each framed prompt,
# one prompt at a time. Arguments: a JSON list of [base, adapter] pairs, the framed prompts
# (token ids, JSON), max_new_tokens, eos id. Prints the generated ids per pair and prompt.
HF_GENERATE = r"""
import json, sys, warnings, torch
from peft import PeftModel
from transformers import AutoModelForCausalLM
warnings.filterwarnings("ignore")
pairs, prompts, max_new, eos = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
out = []
for base, adapter in pairs:
    model = AutoModelForCausalLM.from_pretrained(base)
    if adapter:
        model = PeftModel.from_pretrained(model, adapter)
    model.eval()
    generated = []
    with torch.no_grad():
        for ids in prompts:
            row = torch.tensor([ids])
            tokens = model.generate(input_ids=row, attention_mask=torch.ones_like(row),
                                    max_new_tokens=max_new, do_sample=False, num_beams=1,
                                    eos_token_id=eos, pad_token_id=eos)
            generated.append(tokens[0, row.shape[1]:].tolist())
    out.append(generated)
print(json.dumps(out))
"""

work = temp_dir()
for folder in ("tiny-gpt2", "tiny-llama", "tiny-qwen2", "tiny-mistral"):
    shutil.copytree(os.path.join(FIXTURES, folder), os.path.join(work, folder))
mha = os.path.join(work, "tiny-llama-mha")
run_python(PYTHON, MAKE_MHA, os.path.join(FIXTURES, "tiny-llama"), mha)
for name in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(os.path.join(FIXTURES, "tiny-llama", name), mha)
with open(os.path.join(work, "pairs.jsonl"), "w") as f:
    for prompt, completion in PAIRS:
        f.write(json.dumps({"prompt": prompt, "completion": completion}) + "\n")
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(SPEC)
for folder, name in (("tiny-gpt2", "gpt2"), ("tiny-llama", "llama"), ("tiny-llama-mha", "mha"),
                     ("tiny-qwen2", "qwen2"), ("tiny-mistral", "mistral")):
    rc, out, err = run("import", folder, "--as", name, cwd=work)
    check(rc == 0, f"import {folder}: {err}")
rc, out, err = run("adapt", cwd=work, timeout=1200)
check(rc == 0, f"adapt failed: {out}{err}")

FAMILIES = {  # base: (folder, descendants, PEFT type of each)
    "gpt2": ("tiny-gpt2", {"gpt2-lora": "LORA", "gpt2-prefix": "PREFIX_TUNING",
                           "gpt2-prompt": "PROMPT_TUNING"}),
    "llama": ("tiny-llama", {"llama-lora": "LORA", "llama-prompt": "PROMPT_TUNING"}),
    "mha": ("tiny-llama-mha", {"mha-prefix": "PREFIX_TUNING", "mha-lora": "LORA",
                               "mha-lora-prefix": "PREFIX_TUNING"}),
    "qwen2": ("tiny-qwen2", {"qwen2-lora": "LORA"}),
    "mistral": ("tiny-mistral", {"mistral-lora": "LORA", "mistral-prompt": "PROMPT_TUNING"}),
}


def eos_of(folder):
    """The EOS scion reads from a folder: tokenizer_config.json's eos_token (these
    tokenizers' post-processors add no closing token; docs/hugging-face.md)."""
    code = r"""
import json, sys
from tokenizers import Tokenizer
folder = sys.argv[1]
eos = json.load(open(folder + "/tokenizer_config.json"))["eos_token"]
print(Tokenizer.from_file(folder + "/tokenizer.json").token_to_id(eos if isinstance(eos, str) else eos["content"]))
"""
    return int(run_python(PYTHON, code, folder))


compared = tokens = 0
for base, (folder, descendants) in FAMILIES.items():
    models = [base, *descendants]
    # Every model of the base in one call: one batch of mixed adapters at each step.
    ours = run_json("predict", *models, "--generate", *sum((["--text", p] for p in PROMPTS), []),
                    "--max-new-tokens", str(MAX_NEW), cwd=work)
    by_model = {m: [g for g in ours["generations"] if g["model"] == m] for m in models}
    framed = [g["prompt_token_ids"] for g in by_model[base]]
    pairs = [[os.path.join(work, folder), ""]]
    for model, peft_type in descendants.items():
        target = os.path.join(work, model + "-peft")
        exported = run_json("export", model, "--format", "peft", "-o", target, cwd=work)
        with open(os.path.join(target, "adapter_config.json")) as f:
            config = json.load(f)
        check(config["peft_type"] == peft_type and config["task_type"] == "CAUSAL_LM",
              f"{model}: {config}")
        # A descendant of a descendant is its own adapter over DIR/base, its parent merged.
        check(bool(exported.get("merged")) == (model == "mha-lora-prefix"), f"{model}: {exported}")
        pairs.append([config["base_model_name_or_path"] if exported.get("merged")
                      else os.path.join(work, folder), target])
    eos = eos_of(os.path.join(work, folder))
    theirs = json.loads(run_python(PYTHON, HF_GENERATE, json.dumps(pairs), json.dumps(framed),
                                   str(MAX_NEW), str(eos)))
    for m, model in enumerate(models):
        for q, prompt in enumerate(PROMPTS):
            g = by_model[model][q]
            check(g["prompt_token_ids"] == framed[q], f"{model}: one framing for every model")
            check(g["token_ids"] == theirs[m][q],
                  f"{model} on {prompt!r}: scion {g['token_ids']} vs transformers + PEFT "
                  f"{theirs[m][q]}")
            check(g["finish_reason"] == ("eos" if g["token_ids"][-1] == eos else "length"),
                  f"{model}: {g}")
            compared += 1
            tokens += len(g["token_ids"])
    # Training changed the descendants: their texts are not the base's.
    for model in descendants:
        check(by_model[model] != by_model[base], f"{model} generates as its base")
    print(f"{base}: {', '.join(models)} in one batch: greedy tokens equal to transformers + "
          f"PEFT generate on {len(PROMPTS)} prompts each")
print(f"{compared} completions, {tokens} generated tokens, every one equal")
print("ok")
