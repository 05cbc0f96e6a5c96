#!/usr/bin/env python3
"""`scion export --format peft` for RoBERTa, GPT-2 and Llama bases, and prompt and prefix
tuning, against peft 0.10 and transformers 4.40 themselves. Each exported adapter loads
with PeftModel.from_pretrained with no missing or unexpected adapter keys, and:
  - a RoBERTa LoRA classifier (SEQ_CLS; the base's pooler and scion's head as
    RobertaClassificationHead) gives `scion predict --json`'s probabilities within 1e-4;
  - causal-LM descendants (CAUSAL_LM) of GPT-2 and Llama give the mean log-probability per
    token of `scion eval --data` (its mean NLL) within 1e-4, over the same token count: GPT-2 LoRA on q, v (one c_attn LoRA of
    rank 2r), on q, v, o, ffn_out (rank_pattern for c_attn), prompt tuning on GPT-2 and
    Llama, LoRA on Llama's q_proj / v_proj, prefix tuning on GPT-2 (the text's learned
    positions after the virtual tokens, as GPT2Model numbers them behind past_key_values)
    and on a Llama without grouped-query attention (built here with transformers), the
    prefixes also scored in one right-padded batch;
  - a RoBERTa prefix classifier (PREFIX_TUNING, SEQ_CLS, the positions after
    padding_idx + 1 + the virtual tokens) gives `scion predict`'s probabilities, each
    text alone and in one padded batch;
  - the Llama bases themselves, from text through the CLI, give transformers' log-probs;
  - `scion import --peft` brings the Llama LoRA back with the same scores;
  - descendants of descendants (a RoBERTa LoRA on a LoRA classifier, GPT-2 prompt tuning
    on a LoRA, Llama prefix tuning on a LoRA) load as their own adapter over DIR/base,
    their parent merged, with the same contract;
and what PEFT would run otherwise than scion is refused with the reason. Skips (77)
without the interop Python."""
import json
import os
import shutil

from harness import SOURCE_ROOT, check, run, run_json, temp_dir
from interop_python import (CAUSAL_LM_LOGPROBS, HF_CLASSIFIER, PEFT_CLASSIFIER,
                             PEFT_PREFIX_CLASSIFIER, interop_python, run_python)

PYTHON = interop_python(SOURCE_ROOT)
FIXTURES = os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf")
TOLERANCE = 1e-4  # fp32 both sides; the bound

TEXTS = ["the movie was great", "I hated the plot", "a really terrible film!",
         "the acting was not bad, I loved it"]
ROWS = [("the movie was great", "pos"), ("I loved it", "pos"), ("really good acting", "pos"),
        ("the movie was terrible", "neg"), ("I hated it", "neg"), ("really bad acting", "neg")]

RECIPE = "{data: %s, steps: 8, batch_size: 6, max_length: 24, optimizer: {type: adamw, lr: 2.0e-2}, seed: 3%s}"
CLS = RECIPE % ("reviews", "")
LM = RECIPE % ("corpus", ", objective: clm")

SPEC = f"""datasets:
  reviews: {{path: reviews.jsonl, labels: [neg, pos]}}
  corpus: {{path: corpus.jsonl}}
models:
  roberta:
    import: tiny-roberta
  roberta-lora:
    from: roberta
    adapt: {{lora: {{rank: 4, alpha: 8, targets: [q, v]}}, head: {{}}}}
    train: {CLS}
  roberta-prefix:
    from: roberta
    adapt: {{prefix: {{virtual_tokens: 3}}, head: {{}}}}
    train: {CLS}
  roberta-prompt:
    from: roberta
    adapt: {{prompt: {{virtual_tokens: 2}}, head: {{}}}}
    train: {CLS}
  gpt2:
    import: tiny-gpt2
  gpt2-qv:
    from: gpt2
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, v]}}}}
    train: {LM}
  gpt2-mixed:
    from: gpt2
    adapt: {{lora: {{rank: 2, alpha: 3, targets: [q, v, o, ffn_out]}}}}
    train: {LM}
  gpt2-mixed-rs:
    from: gpt2
    adapt: {{lora: {{rank: 2, alpha: 3, targets: [q, v, o, ffn_out], use_rslora: true}}}}
    train: {LM}
  gpt2-prompt:
    from: gpt2
    adapt: {{prompt: {{virtual_tokens: 3}}}}
    train: {LM}
  gpt2-prefix:
    from: gpt2
    adapt: {{prefix: {{virtual_tokens: 2}}}}
    train: {LM}
  gpt2-classifier:
    from: gpt2
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, v]}}, head: {{pooling: last}}}}
    train: {CLS}
  llama:
    import: tiny-llama
  llama-head:
    from: llama
    adapt: {{head: {{pooling: last}}}}
    train: {CLS}
  llama-gqa-prefix:
    from: llama
    adapt: {{prefix: {{virtual_tokens: 2}}}}
    train: {LM}
  mha:
    import: tiny-llama-mha
  mha-lora:
    from: mha
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, v]}}}}
    train: {LM}
  mha-prompt:
    from: mha
    adapt: {{prompt: {{virtual_tokens: 3}}}}
    train: {LM}
  mha-prefix:
    from: mha
    adapt: {{prefix: {{virtual_tokens: 2, reparam_hidden: 8}}}}
    train: {LM}
  roberta-stacked:
    from: roberta-lora
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [k, ffn_out]}}}}
    train: {CLS}
  gpt2-qv-prompt:
    from: gpt2-qv
    adapt: {{prompt: {{virtual_tokens: 3}}}}
    train: {LM}
  mha-lora-prefix:
    from: mha-lora
    adapt: {{prefix: {{virtual_tokens: 2}}}}
    train: {LM}
"""

# A Llama with one key/value head per query head (prefix tuning needs it), from the tiny
# fixture's shapes and tokenizer, randomly initialised by transformers.
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




work = temp_dir()
for folder in ("tiny-roberta", "tiny-gpt2", "tiny-llama"):
    shutil.copytree(os.path.join(FIXTURES, folder), os.path.join(work, folder))
mha = os.path.join(work, "tiny-llama-mha")
run_python(PYTHON, MAKE_MHA, os.path.join(FIXTURES, "tiny-llama"), mha)
for name in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(os.path.join(FIXTURES, "tiny-llama", name), mha)
with open(os.path.join(work, "reviews.jsonl"), "w") as f:
    for text, label in ROWS:
        f.write(json.dumps({"text": text, "label": label}) + "\n")
with open(os.path.join(work, "corpus.jsonl"), "w") as f:
    for text, _ in ROWS:
        f.write(json.dumps({"text": text}) + "\n")
with open(os.path.join(work, "eval.jsonl"), "w") as f:
    for text in TEXTS:
        f.write(json.dumps({"text": text}) + "\n")
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(SPEC)

for folder, name in (("tiny-roberta", "roberta"), ("tiny-gpt2", "gpt2"), ("tiny-llama", "llama"),
                     ("tiny-llama-mha", "mha")):
    rc, out, err = run("import", folder, "--as", name, cwd=work)
    check(rc == 0, f"import {folder}: {err}")
rc, out, err = run("adapt", cwd=work, timeout=1200)
check(rc == 0, f"adapt failed: {out}{err}")


def bos_of(folder):
    """The token scion frames a causal LM's rows with: the post-processor's first token,
    else tokenizer_config.json's bos_token (docs/hugging-face.md, BPE framing)."""
    code = r"""
import json, os, sys
from tokenizers import Tokenizer
folder = sys.argv[1]
tok = Tokenizer.from_file(folder + "/tokenizer.json")
framed, plain = tok.encode("a").ids, tok.encode("a", add_special_tokens=False).ids
if framed != plain:
    print(framed[0])
else:
    bos = json.load(open(folder + "/tokenizer_config.json"))["bos_token"]
    print(tok.token_to_id(bos if isinstance(bos, str) else bos["content"]))
"""
    return int(run_python(PYTHON, code, folder))


def scion_logprob(model):
    """Mean log-probability per token of eval.jsonl by `scion eval --json`."""
    result = run_json("eval", model, "--data", "eval.jsonl", cwd=work)
    metrics = result["results"][0]["metrics"]
    return -metrics["mean_nll"], metrics


def compare_lm(model, base_folder, adapter):
    folder = base_folder if os.path.isabs(base_folder) else os.path.join(work, base_folder)
    theirs = json.loads(run_python(PYTHON, CAUSAL_LM_LOGPROBS, folder, adapter, str(bos_of(folder)),
                                   json.dumps(TEXTS)))
    check(not theirs["unexpected"], f"{model}: PEFT found unexpected keys {theirs['unexpected']}")
    check(not theirs["missing"], f"{model}: PEFT misses adapter keys {theirs['missing']}")
    ours, metrics = scion_logprob(model)
    mean = sum(theirs["sums"]) / sum(theirs["counts"])
    difference = abs(ours - mean)
    print(f"{model}: mean log-probability per token scion {ours:.6f} vs transformers "
          f"{mean:.6f}, difference {difference:.2e}")
    check(metrics["tokens"] == sum(theirs["counts"]),
          f"{model}: scion scored {metrics['tokens']} tokens, transformers {sum(theirs['counts'])}")
    check(difference < TOLERANCE, f"{model}: scion {ours} vs transformers {mean}")
    batched = sum(theirs["batched_sums"]) / sum(theirs["counts"])
    print(f"{model}: the same in one padded batch: transformers {batched:.6f}, "
          f"difference {abs(ours - batched):.2e}")
    check(abs(ours - batched) < TOLERANCE, f"{model}: scion {ours} vs transformers batched {batched}")
    return ours


def export(model):
    folder = os.path.join(work, model + "-peft")
    exported = run_json("export", model, "--format", "peft", "-o", folder, cwd=work)
    with open(os.path.join(folder, "adapter_config.json")) as f:
        return folder, exported, json.load(f)


# ---- RoBERTa: a LoRA classifier -----------------------------------------------------
folder, exported, config = export("roberta-lora")
check(config["task_type"] == "SEQ_CLS" and config["target_modules"] == ["query", "value"]
      and config["modules_to_save"] == ["classifier"], f"roberta-lora config: {config}")
ours = run_json("predict", "roberta-lora", *sum((["--text", t] for t in TEXTS), []), cwd=work)
scion_probs = [[p["probabilities"][label] for label in ("neg", "pos")] for p in ours["predictions"]]
theirs = json.loads(run_python(PYTHON, PEFT_CLASSIFIER, os.path.join(work, "tiny-roberta"), folder, "2",
                               json.dumps(TEXTS)))
check(not theirs["unexpected"] and not theirs["missing"], f"roberta-lora keys: {theirs}")
worst = max(abs(a - b) for s, p in zip(scion_probs, theirs["probs"]) for a, b in zip(s, p))
print(f"roberta-lora: largest probability difference scion vs PEFT = {worst:.2e}")
check(worst < TOLERANCE, f"roberta-lora: scion {scion_probs} vs PEFT {theirs['probs']}")

# ---- RoBERTa: a prefix classifier ---------------------------------------------------
folder, exported, config = export("roberta-prefix")
check(config["peft_type"] == "PREFIX_TUNING" and config["task_type"] == "SEQ_CLS"
      and config["num_virtual_tokens"] == 3, f"roberta-prefix config: {config}")
ours = run_json("predict", "roberta-prefix", *sum((["--text", t] for t in TEXTS), []), cwd=work)
prefix_probs = [[p["probabilities"][label] for label in ("neg", "pos")] for p in ours["predictions"]]
theirs = json.loads(run_python(PYTHON, PEFT_PREFIX_CLASSIFIER, os.path.join(work, "tiny-roberta"), folder,
                               "2", json.dumps(TEXTS)))
check(not theirs["unexpected"] and not theirs["missing"], f"roberta-prefix keys: {theirs}")
for mode in ("probs", "batched"):
    worst = max(abs(a - b) for s, p in zip(prefix_probs, theirs[mode]) for a, b in zip(s, p))
    print(f"roberta-prefix: largest probability difference scion vs PEFT ({mode}) = {worst:.2e}")
    check(worst < TOLERANCE, f"roberta-prefix ({mode}): scion {prefix_probs} vs PEFT {theirs[mode]}")

# ---- a Llama classifier from text: scion predict against transformers' LlamaModel ----------
# scion frames the text <s> text </s> (tokenizer_config.json) and its head reads the last
# real token's final hidden state; transformers' LlamaModel gives that state, and the head's
# weights come from `scion export --own-only`.
LLAMA_HEAD_SIDE = r"""
import json, sys, torch
from safetensors.torch import load_file
from tokenizers import Tokenizer
from transformers import LlamaModel
folder, head, texts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
model = LlamaModel.from_pretrained(folder).eval()
weights = load_file(head)
W, b = weights["head.llama-head.weight"], weights["head.llama-head.bias"]
tok = Tokenizer.from_file(folder + "/tokenizer.json")
bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
probs = []
with torch.no_grad():
    for text in texts:
        ids = torch.tensor([[bos] + tok.encode(text, add_special_tokens=False).ids + [eos]])
        hidden = model(input_ids=ids).last_hidden_state[0, -1]
        probs.append(torch.softmax(hidden @ W.T + b, -1).tolist())
print(json.dumps(probs))
"""
head_file = os.path.join(work, "llama-head.safetensors")
run_json("export", "llama-head", "--own-only", "-o", head_file, cwd=work)
ours = run_json("predict", "llama-head", *sum((["--text", t] for t in TEXTS), []), cwd=work)
llama_probs = [[p["probabilities"][label] for label in ("neg", "pos")] for p in ours["predictions"]]
theirs = json.loads(run_python(PYTHON, LLAMA_HEAD_SIDE, os.path.join(work, "tiny-llama"), head_file,
                               json.dumps(TEXTS)))
worst = max(abs(a - b) for s, p in zip(llama_probs, theirs) for a, b in zip(s, p))
print(f"llama-head: largest probability difference scion predict vs transformers = {worst:.2e}")
check(worst < TOLERANCE, f"llama-head: scion {llama_probs} vs transformers {theirs}")

# ---- GPT-2 and Llama causal LMs ---------------------------------------------------------
base_scores = {"gpt2": compare_lm("gpt2", "tiny-gpt2", ""),
               "llama": compare_lm("llama", "tiny-llama", ""),
               "mha": compare_lm("mha", "tiny-llama-mha", "")}
cases = [("gpt2-qv", "tiny-gpt2", "LORA"), ("gpt2-mixed", "tiny-gpt2", "LORA"),
         ("gpt2-mixed-rs", "tiny-gpt2", "LORA"),
         ("gpt2-prompt", "tiny-gpt2", "PROMPT_TUNING"), ("mha-lora", "tiny-llama-mha", "LORA"),
         ("mha-prompt", "tiny-llama-mha", "PROMPT_TUNING"),
         ("mha-prefix", "tiny-llama-mha", "PREFIX_TUNING"),
         ("gpt2-prefix", "tiny-gpt2", "PREFIX_TUNING")]
for model, base_folder, peft_type in cases:
    folder, exported, config = export(model)
    check(config["peft_type"] == peft_type and config["task_type"] == "CAUSAL_LM",
          f"{model}: {config}")
    score = compare_lm(model, base_folder, folder)
    base = "gpt2" if base_folder == "tiny-gpt2" else "mha"
    # Training changed the model: the adapter is not a no-op the comparison would miss.
    check(abs(score - base_scores[base]) > 1e-3, f"{model}: scores as its base ({score})")
    if model == "gpt2-qv":
        check(config["r"] == 4 and config["lora_alpha"] == 8 and config["target_modules"] == ["c_attn"]
              and config["fan_in_fan_out"], f"gpt2-qv: {config}")
    if model == "gpt2-mixed":
        check(config["r"] == 2 and config["rank_pattern"] == {"c_attn": 4}
              and config["alpha_pattern"] == {"c_attn": 6}, f"gpt2-mixed: {config}")
    if model == "gpt2-mixed-rs":
        # rsLoRA's scale is alpha / sqrt(r): c_attn's rank 2·2 keeps it with alpha sqrt(2)·3.
        check(config["use_rslora"] and config["r"] == 2 and config["rank_pattern"] == {"c_attn": 4}
              and abs(config["alpha_pattern"]["c_attn"] - 3 * 2 ** 0.5) < 1e-9,
              f"gpt2-mixed-rs: {config}")
    if model == "mha-lora":
        check(config["target_modules"] == ["q_proj", "v_proj"], f"mha-lora: {config}")

# ---- descendants of descendants: their own adapter over DIR/base, the parent merged -------
# roberta-stacked classifies with roberta-lora's head (with the pooler, in modules_to_save).
folder, exported, config = export("roberta-stacked")
base = os.path.join(os.path.abspath(folder), "base")
check(exported["merged"] == ["roberta-lora"] and config["base_model_name_or_path"] == base
      and config["task_type"] == "SEQ_CLS", f"roberta-stacked: {exported} {config}")
ours = run_json("predict", "roberta-stacked", *sum((["--text", t] for t in TEXTS), []), cwd=work)
stacked_probs = [[p["probabilities"][label] for label in ("neg", "pos")] for p in ours["predictions"]]
theirs = json.loads(run_python(PYTHON, PEFT_CLASSIFIER, base, folder, "2", json.dumps(TEXTS)))
check(not theirs["unexpected"] and not theirs["missing"], f"roberta-stacked keys: {theirs}")
worst = max(abs(a - b) for s, p in zip(stacked_probs, theirs["probs"]) for a, b in zip(s, p))
print(f"roberta-stacked (PEFT over merged roberta-lora): largest probability difference = {worst:.2e}")
check(worst < TOLERANCE, f"roberta-stacked: {stacked_probs} vs {theirs['probs']}")
for model, parent, peft_type in (("gpt2-qv-prompt", "gpt2-qv", "PROMPT_TUNING"),
                                 ("mha-lora-prefix", "mha-lora", "PREFIX_TUNING")):
    folder, exported, config = export(model)
    base = os.path.join(os.path.abspath(folder), "base")
    check(exported["merged"] == [parent] and config["base_model_name_or_path"] == base
          and config["peft_type"] == peft_type and config["task_type"] == "CAUSAL_LM",
          f"{model}: {exported} {config}")
    score = compare_lm(model, base, folder)
    # Its own adapter matters: it does not score as its parent (= the merged base alone).
    check(abs(score - scion_logprob(parent)[0]) > 1e-3, f"{model}: scores as {parent} ({score})")

# ---- import --peft on Llama: the same scores back ----------------------------------------
# Declared only now, so that `adapt` never trained it: an import of other parameters over a
# stored version of the same recipe is refused (a stored version is never rewritten).
with open(os.path.join(work, "scion.yaml"), "a") as f:
    f.write(f"""  mha-lora-back:
    from: mha
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q, v]}}}}
    train: {LM}
""")
imported = run_json("import", "--peft", os.path.join(work, "mha-lora-peft"), "--as", "mha-lora-back",
                    cwd=work)
check(imported["tensors"] == 2 * 2 * 2, f"mha-lora-back: {imported}")
check(scion_logprob("mha-lora-back")[0] == scion_logprob("mha-lora")[0], "import --peft changed scores")

# ---- --format huggingface: whole folders, LoRA merged ------------------------------------
folder = os.path.join(work, "roberta-lora-hf")
exported = run_json("export", "roberta-lora", "--format", "huggingface", "-o", folder, cwd=work)
theirs = json.loads(run_python(PYTHON, HF_CLASSIFIER, folder, json.dumps(TEXTS)))
check(theirs["class"] == "RobertaForSequenceClassification" and not theirs["missing"]
      and not theirs["unexpected"], f"roberta-lora (huggingface): {theirs}")
worst = max(abs(a - b) for s, p in zip(scion_probs, theirs["probs"]) for a, b in zip(s, p))
print(f"roberta-lora (huggingface): largest probability difference = {worst:.2e}")
check(worst < TOLERANCE, f"roberta-lora (huggingface): {scion_probs} vs {theirs['probs']}")
for model, base_folder in (("gpt2-mixed", "tiny-gpt2"), ("mha-lora", "tiny-llama-mha")):
    folder = os.path.join(work, model + "-hf")
    exported = run_json("export", model, "--format", "huggingface", "-o", folder, cwd=work)
    check(exported["architecture"] in ("GPT2LMHeadModel", "LlamaForCausalLM"), f"{model}: {exported}")
    compare_lm(model, folder, "")
rc, out, err = run("export", "gpt2-classifier", "--format", "huggingface", "-o",
                   os.path.join(work, "gc-hf"), cwd=work)
check(rc == 2 and "score" in err, f"gpt2-classifier as huggingface: {rc} {err}")

# ---- refused with the reason --------------------------------------------------------------
for model, words in (("gpt2-classifier", ["score", "bias"]),
                     ("llama-gqa-prefix", ["grouped-query", "4", "2"]),
                     ("roberta-prompt", ["first virtual token"])):
    rc, out, err = run("export", model, "--format", "peft", "-o", os.path.join(work, model + "-x"),
                       cwd=work)
    check(rc == 2 and all(w in err for w in words), f"{model}: {rc} {err}")
print("ok")
