#!/usr/bin/env python3
"""The task heads against transformers and PEFT: on the tiny BERT fixture, a regression head
on sentence pairs (token types from the pair), a multi-label head and a token classifier,
each a LoRA descendant trained by scion in one co-batched group, exported with
`--format huggingface` (AutoModelForSequenceClassification with problem_type regression
and multi_label_classification, AutoModelForTokenClassification) and `--format peft`
(SEQ_CLS, TOKEN_CLS; the labels in config.json beside the adapter), each loading with
nothing missing or unexpected and answering as `scion predict` does within 1e-4: the
regression values, the sigmoid probabilities, and the tag probabilities at each word's
first sub-word. `scion import --peft` reads the labels back: the imported adapter predicts
as the original, and one whose config.json names other labels is refused. Skips (77)
without the interop venv."""
import json
import os
import shutil

from harness import SOURCE_ROOT, check, run, run_json, temp_dir
from interop_python import interop_python, run_python

PYTHON = interop_python(SOURCE_ROOT)
FIXTURE = os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf", "tiny-bert")
TOLERANCE = 1e-4  # fp32 both sides; the bound

GOOD, BAD = ["good", "great", "loved"], ["bad", "terrible", "hated"]

# The start of both scripts below: the exported folder loaded as `auto_class` (with the
# PEFT adapter over it when an adapter folder is given; its config.json carries the
# labels), what loading left missing or unexpected, and the folder's tokenizer.
# Arguments: model folder, adapter folder or "", the inputs as JSON.
def loading_script(auto_class):
    return r"""
import json, sys, torch
from tokenizers import Tokenizer
from transformers import AutoConfig, AUTO_CLASS
folder, adapter, inputs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
missing, unexpected = [], []
if adapter:
    from peft import PeftModel
    from peft.utils import set_peft_model_state_dict
    from safetensors.torch import load_file
    config = AutoConfig.from_pretrained(adapter)  # the labels travel beside the adapter
    model = AUTO_CLASS.from_pretrained(folder, config=config)
    model = PeftModel.from_pretrained(model, adapter)
    result = set_peft_model_state_dict(model, load_file(adapter + "/adapter_model.safetensors"))
    unexpected = result.unexpected_keys
    missing = [k for k in result.missing_keys if "lora_" in k or "modules_to_save" in k]
    config = model.base_model.model.config
else:
    model, info = AUTO_CLASS.from_pretrained(folder, output_loading_info=True)
    missing, unexpected, config = info["missing_keys"], info["unexpected_keys"], model.config
model.eval()
tok = Tokenizer.from_file(folder + "/tokenizer.json")
tok.no_padding(); tok.no_truncation()
""".replace("AUTO_CLASS", auto_class)


# Runs a sequence-classification folder (or a PEFT adapter over a base) on texts or pairs
# (inputs: a JSON list of [text, pair or null]). Prints the model's class, problem_type,
# labels, missing/unexpected keys and raw logits.
SEQUENCE = loading_script("AutoModelForSequenceClassification") + r"""
logits = []
with torch.no_grad():
    for text, pair in inputs:
        e = tok.encode(text, pair) if pair is not None else tok.encode(text)
        out = model(input_ids=torch.tensor([e.ids]), token_type_ids=torch.tensor([e.type_ids]))
        logits.append(out.logits[0].tolist())
print(json.dumps({"class": type(model.base_model.model if adapter else model).__name__,
                  "problem_type": config.problem_type,
                  "labels": [config.id2label[i] for i in range(config.num_labels)],
                  "missing": missing, "unexpected": unexpected, "logits": logits}))
"""

# A token classifier on sentences of words (inputs: a JSON list of word lists), each word
# encoded alone (is_split_into_words): per sentence, the softmax over the tags at each
# word's first sub-word.
TOKENS = loading_script("AutoModelForTokenClassification") + r"""
probs = []
with torch.no_grad():
    for words in inputs:
        e = tok.encode(words, is_pretokenized=True)
        p = torch.softmax(model(input_ids=torch.tensor([e.ids])).logits[0], -1)
        firsts, seen = [], set()
        for position, word in enumerate(e.word_ids):
            if word is not None and word not in seen:
                seen.add(word)
                firsts.append(p[position].tolist())
        probs.append(firsts)
print(json.dumps({"class": type(model.base_model.model if adapter else model).__name__,
                  "labels": [config.id2label[i] for i in range(config.num_labels)],
                  "missing": missing, "unexpected": unexpected, "probs": probs}))
"""


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def worst(a, b):
    return max(abs(x - y) for r, s in zip(a, b) for x, y in zip(r, s))


work = temp_dir()
shutil.copytree(FIXTURE, os.path.join(work, "tiny-bert"))
sentences = [f"the {n} was {w}" for n in ("movie", "film", "plot") for w in GOOD + BAD]
write_jsonl(os.path.join(work, "pairs.jsonl"),
            [{"text": a, "other": b, "label": float((a.split()[-1] in GOOD) == (b.split()[-1] in GOOD))}
             for a in sentences[:9] for b in sentences[9:12]])
write_jsonl(os.path.join(work, "topics.jsonl"),
            [{"text": s, "label": (["good"] if s.split()[-1] in GOOD else ["bad"]) +
              (["film"] if "film" in s or "movie" in s else [])} for s in sentences])
write_jsonl(os.path.join(work, "tagged.jsonl"),
            [{"words": s.split(), "tags": ["POS" if w in GOOD else "NEG" if w in BAD else "O"
                                           for w in s.split()]} for s in sentences])
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write("""datasets:
  pairs: {path: pairs.jsonl, text_pair_field: other, label_type: number}
  topics: {path: topics.jsonl, label_type: multi, labels: [good, bad, film]}
  tagged: {path: tagged.jsonl, text_field: words, label_field: tags, label_type: tags, labels: [O, POS, NEG]}
models:
  bert:
    import: tiny-bert
  sts:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {task: regression, labels: [same]}}
    train: {data: pairs, steps: 15, batch_size: 6, optimizer: {type: adamw, lr: 2.0e-2}, seed: 3}
  topics:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {task: multi_label}}
    train: {data: topics, steps: 15, batch_size: 6, optimizer: {type: adamw, lr: 2.0e-2}, seed: 4}
  ner:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, k, v]}, head: {task: token_classification}}
    train: {data: tagged, steps: 15, batch_size: 6, optimizer: {type: adamw, lr: 2.0e-2}, seed: 5}
  sts-back:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {task: regression, labels: [same]}}
    train: {data: pairs, steps: 15, batch_size: 6, optimizer: {type: adamw, lr: 2.0e-2}, seed: 3}
""")
rc, out, err = run("import", "tiny-bert", "--as", "bert", cwd=work)
check(rc == 0, f"import failed: {err}")
trained = run_json("adapt", "sts", "topics", "ner", cwd=work)
groups = [sorted(g["models"]) for g in trained["groups"]]
check(["ner", "sts", "topics"] in groups, f"the three heads trained co-batched: {groups}")

ROWS = [["the movie was great", "the film was bad"], ["i loved it", "it was terrible"],
        ["the plot was good", None]]
PAIRS = [r for r in ROWS if r[1] is not None]
TEXTS = ["the movie was great", "i hated the plot", "the film was good and the acting was bad"]

# ---- regression on pairs --------------------------------------------------------------
ours = run_json("predict", "sts", *sum((["--text", a, "--pair", b] for a, b in PAIRS), []), cwd=work)
scion_values = [[p["values"]["same"]] for p in ours["predictions"]]
for fmt in ("huggingface", "peft"):
    folder = os.path.join(work, f"sts-{fmt}")
    run_json("export", "sts", "--format", fmt, "-o", folder, cwd=work)
    model_dir, adapter = (folder, "") if fmt == "huggingface" else (os.path.join(work, "tiny-bert"), folder)
    theirs = json.loads(run_python(PYTHON, SEQUENCE, model_dir, adapter, json.dumps(PAIRS)))
    check(theirs["class"] == "BertForSequenceClassification" and theirs["problem_type"] == "regression"
          and theirs["labels"] == ["same"], f"sts ({fmt}): {theirs}")
    check(not theirs["missing"] and not theirs["unexpected"], f"sts ({fmt}) keys: {theirs}")
    difference = worst(scion_values, theirs["logits"])
    print(f"sts ({fmt}): largest value difference scion vs transformers = {difference:.2e}")
    check(difference < TOLERANCE, f"sts ({fmt}): {scion_values} vs {theirs['logits']}")
check(len({round(v[0], 4) for v in scion_values}) > 1, f"sts answers alike for every pair: {scion_values}")
with open(os.path.join(work, "sts-peft", "adapter_config.json")) as f:
    check(json.load(f)["task_type"] == "SEQ_CLS", "sts: task_type")

# ---- multi-label ----------------------------------------------------------------------
ours = run_json("predict", "topics", *sum((["--text", t] for t in TEXTS), []), cwd=work)
scion_probs = [[p["probabilities"][l] for l in ("good", "bad", "film")] for p in ours["predictions"]]
for fmt in ("huggingface", "peft"):
    folder = os.path.join(work, f"topics-{fmt}")
    run_json("export", "topics", "--format", fmt, "-o", folder, cwd=work)
    model_dir, adapter = (folder, "") if fmt == "huggingface" else (os.path.join(work, "tiny-bert"), folder)
    theirs = json.loads(run_python(PYTHON, SEQUENCE, model_dir, adapter, json.dumps([[t, None] for t in TEXTS])))
    check(theirs["problem_type"] == "multi_label_classification"
          and theirs["labels"] == ["good", "bad", "film"], f"topics ({fmt}): {theirs}")
    check(not theirs["missing"] and not theirs["unexpected"], f"topics ({fmt}) keys: {theirs}")
    sigmoid = [[1 / (1 + pow(2.718281828459045, -z)) for z in row] for row in theirs["logits"]]
    difference = worst(scion_probs, sigmoid)
    print(f"topics ({fmt}): largest probability difference scion vs transformers = {difference:.2e}")
    check(difference < TOLERANCE, f"topics ({fmt}): {scion_probs} vs {sigmoid}")

# ---- token classification -------------------------------------------------------------
ours = run_json("predict", "ner", *sum((["--text", t] for t in TEXTS), []), cwd=work)
words = [[w["word"] for w in p["words"]] for p in ours["predictions"]]
check(any(w["tag"] != "O" for p in ours["predictions"] for w in p["words"]),
      f"ner tags nothing: {ours['predictions']}")
for fmt in ("huggingface", "peft"):
    folder = os.path.join(work, f"ner-{fmt}")
    run_json("export", "ner", "--format", fmt, "-o", folder, cwd=work)
    model_dir, adapter = (folder, "") if fmt == "huggingface" else (os.path.join(work, "tiny-bert"), folder)
    theirs = json.loads(run_python(PYTHON, TOKENS, model_dir, adapter, json.dumps(words)))
    check(theirs["class"] == "BertForTokenClassification" and theirs["labels"] == ["O", "POS", "NEG"],
          f"ner ({fmt}): {theirs}")
    check(not theirs["missing"] and not theirs["unexpected"], f"ner ({fmt}) keys: {theirs}")
    # Each word's tag and its probability (predict gives the most probable tag's) against
    # transformers' softmax at the word's first sub-word.
    difference = 0.0
    for p, their in zip(ours["predictions"], theirs["probs"]):
        check(len(their) == len(p["words"]), f"ner ({fmt}): words {p['words']} vs {their}")
        for w, probs in zip(p["words"], their):
            best = max(range(3), key=lambda k: probs[k])
            check(theirs["labels"][best] == w["tag"], f"ner ({fmt}): {w} vs {probs}")
            difference = max(difference, abs(probs[best] - w["probability"]))
    print(f"ner ({fmt}): every word's tag equal; largest tag probability difference = {difference:.2e}")
    check(difference < TOLERANCE, f"ner ({fmt}): tag probabilities differ by {difference}")
with open(os.path.join(work, "ner-peft", "adapter_config.json")) as f:
    check(json.load(f)["task_type"] == "TOKEN_CLS", "ner: task_type")

# ---- labels come back with import --peft ----------------------------------------------
run_json("import", "--peft", os.path.join(work, "sts-peft"), "--as", "sts-back", cwd=work)
back = run_json("predict", "sts-back", *sum((["--text", a, "--pair", b] for a, b in PAIRS), []), cwd=work)
check([[p["values"]["same"]] for p in back["predictions"]] == scion_values,
      f"sts-back predicts as sts: {back}")
with open(os.path.join(work, "sts-peft", "config.json")) as f:
    config = json.load(f)
config["id2label"] = {"0": "different"}
with open(os.path.join(work, "sts-peft", "config.json"), "w") as f:
    json.dump(config, f)
rc, out, err = run("import", "--peft", os.path.join(work, "sts-peft"), "--as", "sts-back", cwd=work)
check(rc == 2 and "labels the outputs [different]" in err and "[same]" in err,
      f"an adapter labelled otherwise: {rc} {err}")
print("ok")
