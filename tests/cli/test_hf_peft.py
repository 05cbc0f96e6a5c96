#!/usr/bin/env python3
"""`scion export MODEL --format peft` against PEFT itself: a LoRA + head descendant of
the tiny BERT fixture, trained by scion and exported, loads with
PeftModel.from_pretrained(AutoModelForSequenceClassification.from_pretrained(BASE,
num_labels=K), DIR) with no missing or unexpected adapter keys, and its probabilities
equal `scion predict --json` within 1e-4. A prefix-tuned classifier (PREFIX_TUNING, the
text's positions after the virtual tokens as transformers numbers them) does too, each text
alone and in one padded batch, and answers alike co-batched with its siblings. Then `--format huggingface` (a LoRA model, a
LoRA on a LoRA, a BitFit model) loads with AutoModelForSequenceClassification.from_pretrained
with nothing missing and the same probabilities; what PEFT cannot hold is refused naming
the format that can; and `scion import --peft` brings an exported adapter back as a new
descendant with identical predictions, refusing adapters that do not fit. A descendant of
a descendant exports as its own adapter over DIR/base, its ancestors merged (a LoRA on a
LoRA + head; a LoRA + head on a BitFit model), with the same contract, and one over a prefix
model is refused. rsLoRA (use_rslora: B·A scaled by alpha/sqrt(r)) and DoRA (use_dora:
each module's lora_magnitude_vector, the weight norm per output row) export, load in PEFT
with the same probabilities, merge under a descendant, and come back with import --peft;
an adapter whose use_rslora or use_dora differs from the declaration is refused. Skips (77)
without the interop venv."""
import hashlib
import json
import os
import shutil

from harness import SOURCE_ROOT, check, run, run_json, temp_dir
from interop_python import (HF_CLASSIFIER, PEFT_CLASSIFIER, PEFT_PREFIX_CLASSIFIER, interop_python,
                             run_python)

PYTHON = interop_python(SOURCE_ROOT)
FIXTURE = os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf", "tiny-bert")
TOLERANCE = 1e-4  # fp32 both sides; the bound

TEXTS = ["the movie was great", "i hated the plot", "a really terrible film!",
         "the acting was not bad, i loved it"]

SPEC = """datasets:
  reviews: {path: reviews.jsonl, labels: [neg, pos, meh]}
models:
  bert:
    import: tiny-bert
  qv:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {}}
    train: &recipe {data: reviews, steps: 15, batch_size: 6, optimizer: {type: adamw, lr: 2.0e-2}, seed: 3}
  scattered:
    from: bert
    adapt: {lora: {rank: 2, alpha: 3, targets: [k, o, ffn_in, ffn_out], layers: [1]}, head: {}}
    train: *recipe
  qv-rs:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v], use_rslora: true}, head: {}}
    train: *recipe
  dora:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, dropout: 0.1, targets: [q, v, ffn_out], use_dora: true}, head: {}}
    train: *recipe
  dora-stacked:
    from: dora
    adapt: {lora: {rank: 2, alpha: 4, targets: [k]}}
    train: *recipe
  prefixed:
    from: bert
    adapt: {prefix: {virtual_tokens: 2}, head: {}}
    train: &shifted {data: reviews, steps: 15, batch_size: 6, max_length: 24, optimizer: {type: adamw, lr: 2.0e-2}, seed: 3}
  prefix-top:
    from: bert
    adapt: {prefix: {virtual_tokens: 2, layers: [1]}, head: {}}
    train: *shifted
  stacked:
    from: qv
    adapt: {lora: {rank: 2, alpha: 4, targets: [q, k, ffn_out]}}
    train: *recipe
  biased:
    from: bert
    adapt: {bitfit: {}, head: {}}
    train: *recipe
  rebiased:
    from: biased
    adapt: {lora: {rank: 2, alpha: 4, targets: [v, ffn_in]}, head: {}}
    train: *recipe
  on-prefix:
    from: prefixed
    adapt: {lora: {rank: 2, alpha: 4, targets: [q]}}
    train: *shifted
"""


work = temp_dir()
shutil.copytree(FIXTURE, os.path.join(work, "tiny-bert"))
rows = [("the movie was great", "pos"), ("i loved it", "pos"), ("really good acting", "pos"),
        ("the movie was terrible", "neg"), ("i hated it", "neg"), ("really bad acting", "neg"),
        ("the plot was a film", "meh"), ("it was a movie", "meh")]
with open(os.path.join(work, "reviews.jsonl"), "w") as f:
    for text, label in rows:
        f.write(json.dumps({"text": text, "label": label}) + "\n")
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(SPEC)

rc, out, err = run("import", "tiny-bert", "--as", "bert", cwd=work)
check(rc == 0, f"import failed: {err}")
rc, out, err = run("adapt", cwd=work, timeout=900)
check(rc == 0, f"adapt failed: {out}{err}")

for model in ("qv", "scattered", "qv-rs", "dora"):
    folder = os.path.join(work, model + "-peft")
    exported = run_json("export", model, "--format", "peft", "-o", folder, cwd=work)
    check(os.path.exists(os.path.join(folder, "adapter_config.json")), f"{model}: no adapter_config.json")
    with open(os.path.join(folder, "adapter_config.json")) as f:
        config = json.load(f)
    if model == "qv":
        check(config["target_modules"] == ["query", "value"], f"qv targets: {config['target_modules']}")
    # rsLoRA: PEFT scales B·A by lora_alpha / sqrt(r) (8 / 2 here, not 8 / 4).
    check(config["use_rslora"] == (model == "qv-rs") and config["use_dora"] == (model == "dora"),
          f"{model}: use_rslora {config['use_rslora']} use_dora {config['use_dora']}")
    ours = run_json("predict", model, *sum((["--text", t] for t in TEXTS), []), cwd=work)
    scion_probs = [[p["probabilities"][label] for label in ("neg", "pos", "meh")]
                   for p in ours["predictions"]]
    theirs = json.loads(run_python(PYTHON, PEFT_CLASSIFIER, os.path.join(work, "tiny-bert"), folder, "3",
                                   json.dumps(TEXTS)))
    check(not theirs["unexpected"], f"{model}: PEFT found unexpected keys {theirs['unexpected']}")
    check(not theirs["missing"], f"{model}: PEFT misses adapter keys {theirs['missing']}")
    worst = max(abs(a - b) for s, p in zip(scion_probs, theirs["probs"]) for a, b in zip(s, p))
    print(f"{model}: largest probability difference scion vs PEFT = {worst:.2e}")
    check(worst < TOLERANCE, f"{model}: scion {scion_probs} vs PEFT {theirs['probs']} differ by {worst}")
    # The trained adapter matters: the probabilities are not the untrained head's uniform ones.
    check(max(max(p) for p in scion_probs) > 0.4, f"{model}: probabilities look untrained: {scion_probs}")

# ---- prefix tuning: PEFT's past_key_values, the text's positions after them -----------
folder = os.path.join(work, "prefixed-peft")
run_json("export", "prefixed", "--format", "peft", "-o", folder, cwd=work)
with open(os.path.join(folder, "adapter_config.json")) as f:
    config = json.load(f)
check(config["peft_type"] == "PREFIX_TUNING" and config["task_type"] == "SEQ_CLS"
      and config["num_virtual_tokens"] == 2 and not config["prefix_projection"], f"prefixed: {config}")
ours = run_json("predict", "prefixed", *sum((["--text", t] for t in TEXTS), []), cwd=work)
prefix_probs = [[p["probabilities"][label] for label in ("neg", "pos", "meh")] for p in ours["predictions"]]
theirs = json.loads(run_python(PYTHON, PEFT_PREFIX_CLASSIFIER, os.path.join(work, "tiny-bert"), folder, "3",
                               json.dumps(TEXTS)))
check(not theirs["unexpected"], f"prefixed: PEFT found unexpected keys {theirs['unexpected']}")
check(not theirs["missing"], f"prefixed: PEFT misses head keys {theirs['missing']}")
for mode in ("probs", "batched"):
    worst = max(abs(a - b) for s, p in zip(prefix_probs, theirs[mode]) for a, b in zip(s, p))
    print(f"prefixed: largest probability difference scion vs PEFT ({mode}) = {worst:.2e}")
    check(worst < TOLERANCE, f"prefixed ({mode}): scion {prefix_probs} vs PEFT {theirs[mode]}")
check(max(max(p) for p in prefix_probs) > 0.4, f"prefixed: probabilities look untrained: {prefix_probs}")
# Co-batched with siblings that do not shift their positions (and share the embeddings
# among themselves), each model answers as it does alone.
together = run_json("predict", "qv", "prefixed", "scattered", *sum((["--text", t] for t in TEXTS), []),
                    cwd=work)
alone = {m: run_json("predict", m, *sum((["--text", t] for t in TEXTS), []), cwd=work)["predictions"]
         for m in ("qv", "scattered")}
alone["prefixed"] = ours["predictions"]
for p in together["predictions"]:
    mine = next(q for q in alone[p["model"]] if q["text"] == p["text"])
    worst = max(abs(p["probabilities"][k] - mine["probabilities"][k]) for k in mine["probabilities"])
    check(worst < 1e-5, f"{p['model']} co-batched differs from alone by {worst}: {p} vs {mine}")
rc, out, err = run("export", "prefix-top", "--format", "peft", "-o", os.path.join(work, "p"), cwd=work)
check(rc == 2 and "some layers only" in err and "PEFT" in err, f"prefix on one layer: {rc} {err}")
rc, out, err = run("export", "biased", "--format", "peft", "-o", os.path.join(work, "b"), cwd=work)
check(rc == 2 and "BitFit" in err and "--format huggingface" in err, f"bitfit export: {rc} {err}")

# ---- a descendant of a descendant: its own adapter over DIR/base, the ancestors merged ----
# stacked (LoRA, no head) classifies with qv's head over qv's merged LoRA; rebiased (LoRA and
# its own head) runs over biased's trained biases.
for model, merged in (("stacked", ["qv"]), ("rebiased", ["biased"]), ("dora-stacked", ["dora"])):
    folder = os.path.join(work, model + "-peft")
    exported = run_json("export", model, "--format", "peft", "-o", folder, cwd=work)
    base = os.path.join(folder, "base")
    check(exported["merged"] == merged and exported["base"] == os.path.abspath(base)
          and exported["task_type"] == "SEQ_CLS", f"{model}: {exported}")
    with open(os.path.join(folder, "adapter_config.json")) as f:
        config = json.load(f)
    check(config["base_model_name_or_path"] == os.path.abspath(base)
          and config["modules_to_save"] == ["classifier"], f"{model}: {config}")
    ours = run_json("predict", model, *sum((["--text", t] for t in TEXTS), []), cwd=work)
    scion_probs = [[p["probabilities"][label] for label in ("neg", "pos", "meh")]
                   for p in ours["predictions"]]
    theirs = json.loads(run_python(PYTHON, PEFT_CLASSIFIER, config["base_model_name_or_path"], folder,
                                   "3", json.dumps(TEXTS)))
    check(not theirs["unexpected"], f"{model}: PEFT found unexpected keys {theirs['unexpected']}")
    check(not theirs["missing"], f"{model}: PEFT misses adapter keys {theirs['missing']}")
    worst = max(abs(a - b) for s, p in zip(scion_probs, theirs["probs"]) for a, b in zip(s, p))
    print(f"{model} (PEFT over merged {merged}): largest probability difference = {worst:.2e}")
    check(worst < TOLERANCE, f"{model}: scion {scion_probs} vs PEFT {theirs['probs']} differ by {worst}")
    # The base folder alone is the model without its own adapter: for stacked, that is qv.
    alone = json.loads(run_python(PYTHON, HF_CLASSIFIER, base, json.dumps(TEXTS)))
    check(not alone["missing"] and not alone["unexpected"], f"{model}: base folder keys {alone}")
    own_effect = max(abs(a - b) for s, p in zip(scion_probs, alone["probs"]) for a, b in zip(s, p))
    check(own_effect > 1e-3, f"{model}: its own adapter changes nothing over the base: {own_effect}")
    if model == "stacked":
        parent = run_json("predict", "qv", *sum((["--text", t] for t in TEXTS), []), cwd=work)
        parent_probs = [[p["probabilities"][label] for label in ("neg", "pos", "meh")]
                        for p in parent["predictions"]]
        worst = max(abs(a - b) for s, p in zip(parent_probs, alone["probs"]) for a, b in zip(s, p))
        check(worst < TOLERANCE, f"stacked's base folder is not qv: {parent_probs} vs {alone['probs']}")
rc, out, err = run("export", "on-prefix", "--format", "peft", "-o", os.path.join(work, "op"), cwd=work)
check(rc == 2 and "'prefixed' has prefix tuning" in err and "merged" in err,
      f"a descendant of a prefix model as PEFT: {rc} {err}")

# ---- --format huggingface: a whole model folder, adapters merged ----------------------
hf_probs = {}
for model in ("qv", "stacked", "biased"):
    folder = os.path.join(work, model + "-hf")
    exported = run_json("export", model, "--format", "huggingface", "-o", folder, cwd=work)
    check(exported["architecture"] == "BertForSequenceClassification", f"{model}: {exported}")
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        check(os.path.exists(os.path.join(folder, name)), f"{model}: no {name} in the folder")
    theirs = json.loads(run_python(PYTHON, HF_CLASSIFIER, folder, json.dumps(TEXTS)))
    check(not theirs["missing"] and not theirs["unexpected"],
          f"{model}: transformers found missing {theirs['missing']} / unexpected {theirs['unexpected']}")
    check(theirs["labels"] == ["neg", "pos", "meh"], f"{model}: id2label {theirs['labels']}")
    ours = run_json("predict", model, *sum((["--text", t] for t in TEXTS), []), cwd=work)
    scion_probs = [[p["probabilities"][label] for label in ("neg", "pos", "meh")]
                   for p in ours["predictions"]]
    worst = max(abs(a - b) for s, p in zip(scion_probs, theirs["probs"]) for a, b in zip(s, p))
    print(f"{model} (huggingface): largest probability difference scion vs transformers = {worst:.2e}")
    check(worst < TOLERANCE, f"{model}: scion {scion_probs} vs transformers {theirs['probs']} differ by {worst}")
    hf_probs[model] = theirs["probs"]
# The merged LoRA of the descendant matters: stacked's probabilities differ from its parent's.
check(max(abs(a - b) for s, p in zip(hf_probs["qv"], hf_probs["stacked"]) for a, b in zip(s, p)) > 1e-3,
      f"stacked equals qv: {hf_probs}")
rc, out, err = run("export", "prefixed", "--format", "huggingface", "-o", os.path.join(work, "ph"), cwd=work)
check(rc == 2 and "prefix tuning" in err, f"prefix as huggingface: {rc} {err}")
rc, out, err = run("export", "qv", "--format", "huggingface", "-o", os.path.join(work, "qv-hf"), cwd=work)
check(rc != 0 and "--force" in err, f"existing folder without --force: {rc} {err}")

# ---- scion import --peft: the exported adapter back as a new descendant ----------------
with open(os.path.join(work, "scion.yaml"), "a") as f:
    f.write("""  qv-back:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {}}
    train: *recipe
  qv-narrow:
    from: bert
    adapt: {lora: {rank: 2, alpha: 8, targets: [q, v]}, head: {}}
    train: *recipe
  stacked-back:
    from: qv
    adapt: {lora: {rank: 2, alpha: 4, targets: [q, k, ffn_out]}}
    train: *recipe
  qv-rs-back:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v], use_rslora: true}, head: {}}
    train: *recipe
  dora-back:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, dropout: 0.1, targets: [q, v, ffn_out], use_dora: true}, head: {}}
    train: *recipe
""")
imported = run_json("import", "--peft", os.path.join(work, "qv-peft"), "--as", "qv-back", cwd=work)
check(imported["tensors"] == 2 * 2 * 2 + 2, f"qv-back: {imported}")  # 2 layers x (q, v) x (A, B) + head
back = run_json("predict", "qv-back", *sum((["--text", t] for t in TEXTS), []), cwd=work)
orig = run_json("predict", "qv", *sum((["--text", t] for t in TEXTS), []), cwd=work)
check([p["probabilities"] for p in back["predictions"]] == [p["probabilities"] for p in orig["predictions"]],
      f"export then import changed the predictions: {back} vs {orig}")
# rsLoRA back under a declaration with use_rslora; refused where the declaration has none.
run_json("import", "--peft", os.path.join(work, "qv-rs-peft"), "--as", "qv-rs-back", cwd=work)
back_rs = run_json("predict", "qv-rs-back", *sum((["--text", t] for t in TEXTS), []), cwd=work)
orig_rs = run_json("predict", "qv-rs", *sum((["--text", t] for t in TEXTS), []), cwd=work)
check([p["probabilities"] for p in back_rs["predictions"]]
      == [p["probabilities"] for p in orig_rs["predictions"]],
      f"rsLoRA export then import changed the predictions: {back_rs} vs {orig_rs}")
# DoRA back with its magnitudes (2 layers x 3 modules x (A, B, m) + head).
imported_dora = run_json("import", "--peft", os.path.join(work, "dora-peft"), "--as", "dora-back",
                         cwd=work)
check(imported_dora["tensors"] == 2 * 3 * 3 + 2, f"dora-back: {imported_dora}")
back_dora = run_json("predict", "dora-back", *sum((["--text", t] for t in TEXTS), []), cwd=work)
orig_dora = run_json("predict", "dora", *sum((["--text", t] for t in TEXTS), []), cwd=work)
check([p["probabilities"] for p in back_dora["predictions"]]
      == [p["probabilities"] for p in orig_dora["predictions"]],
      f"DoRA export then import changed the predictions: {back_dora} vs {orig_dora}")
rc, out, err = run("import", "--peft", os.path.join(work, "dora-peft"), "--as", "qv-narrow", cwd=work)
check(rc == 2 and "use_dora is true" in err, f"a DoRA adapter into a plain LoRA declaration: {rc} {err}")
rc, out, err = run("import", "--peft", os.path.join(work, "qv-rs-peft"), "--as", "qv-narrow", cwd=work)
check(rc == 2 and "use_rslora is true" in err and "use_rslora: true" in err,
      f"an rsLoRA adapter into a plain LoRA declaration: {rc} {err}")
show = run_json("lineage", "show", "qv-back", cwd=work)
run_record = show["runs"][0]
with open(os.path.join(work, "qv-peft", "adapter_model.safetensors"), "rb") as f:
    digest = hashlib.sha256(f.read()).hexdigest()
check(run_record["kind"] == "import" and run_record["run"] == imported["run"]
      and run_record["hyperparameters"]["adapter_digest"] == digest, f"qv-back's import run: {run_record}")
check(show["ancestry"][1]["model"] == "bert", f"qv-back descends from bert: {show['ancestry']}")
rc, out, err = run("import", "--peft", os.path.join(work, "qv-peft"), "--as", "qv-narrow", cwd=work)
check(rc == 2 and "r is 4" in err and "lora_A" in err, f"a misfit adapter: {rc} {err}")
rc, out, err = run("import", "--peft", os.path.join(work, "scattered-peft"), "--as", "qv-narrow", cwd=work)
check(rc == 2 and "target_modules" in err, f"other targets: {rc} {err}")
rc, out, err = run("import", "--peft", os.path.join(work, "stacked-peft"), "--as", "stacked-back", cwd=work)
check(rc == 2 and "direct descendants" in err, f"importing a descendant of a descendant: {rc} {err}")
rc, out, err = run("import", "--peft", work, "--as", "qv-back", cwd=work)
check(rc == 2 and "adapter_config.json" in err, f"not an adapter folder: {rc} {err}")
with open(os.path.join(work, "qv-peft", "adapter_config.json")) as f:
    config = json.load(f)
config["base_model_name_or_path"] = "someone/roberta-base"
os.makedirs(os.path.join(work, "elsewhere"))
shutil.copy(os.path.join(work, "qv-peft", "adapter_model.safetensors"), os.path.join(work, "elsewhere"))
with open(os.path.join(work, "elsewhere", "adapter_config.json"), "w") as f:
    json.dump(config, f)
rc, out, err = run("import", "--peft", os.path.join(work, "elsewhere"), "--as", "qv-back", cwd=work)
check(rc == 2 and "another base" in err, f"an adapter of another base: {rc} {err}")
rc, out, err = run("fsck", cwd=work)
check(rc == 0, f"fsck after import --peft: {out}{err}")

# The prefix's positions come before the text's on this base, so a recipe must leave them
# room in max_length (40 here): without train.max_length it does not.
with open(os.path.join(work, "scion.yaml"), "a") as f:
    f.write("""  prefix-long:
    from: bert
    adapt: {prefix: {virtual_tokens: 2}, head: {}}
    train: *recipe
""")
rc, out, err = run("validate", cwd=work)
check(rc == 2 and "2 prompt and prefix virtual tokens plus train.max_length 40" in out + err
      and "set train.max_length to at most 38" in out + err, f"a prefix without room: {rc} {out}{err}")
print("ok")
