#!/usr/bin/env python3
"""The tasks beyond single-label classification, end to end on a tiny byte-level family:
regression heads on sentence pairs and on texts, a multi-label head, a token classifier with balanced
class weights and a pair classifier with a named dev set and keep_best train co-batched
over one trunk; `validate` checks the data against each head; `predict` answers per task
(pairs with --pair); `eval` scores per task, on a spec dataset and on a CSV file read
with --text-field/--pair-field/--label-field; keep_best's choice is in the run's record;
behavioural tests judge each task as it can and are refused where they cannot."""
import csv
import json
import os

from harness import check, run, run_json, temp_dir

ANIMALS = ["cat", "dog", "cow", "duck"]
FOODS = ["bread", "soup", "rice", "cake"]
PLACES = ["park", "farm", "house", "river"]


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


work = temp_dir()
sentences = [f"the {a} ate {f} at the {p}" for a in ANIMALS for f in FOODS for p in PLACES]
write_jsonl(os.path.join(work, "corpus.jsonl"), [{"text": s} for s in sentences])
# Regression on pairs: how many of (animal, food, place) two sentences share, 0 to 3.
pairs = []
for i, a in enumerate(ANIMALS):
    for j, f in enumerate(FOODS):
        other = (ANIMALS[(i + j) % 4], FOODS[j], PLACES[(i * j) % 4])
        mine = (a, f, PLACES[(i + 1) % 4])
        pairs.append({"text": f"the {mine[0]} ate {mine[1]} at the {mine[2]}",
                      "other": f"the {other[0]} ate {other[1]} at the {other[2]}",
                      "label": float(sum(x == y for x, y in zip(mine, other)))})
write_jsonl(os.path.join(work, "pairs.jsonl"), pairs)
# Multi-label: which kinds of word a text names.
topics = []
for k in range(48):
    words, labels = [], []
    if k % 2 == 0:
        words.append(ANIMALS[k % 4]); labels.append("animal")
    if k % 3 == 0:
        words.append(FOODS[k % 4]); labels.append("food")
    if k % 4 != 1:
        words.append(PLACES[k % 4]); labels.append("place")
    topics.append({"text": " and ".join(words) if words else "nothing", "label": labels})
write_jsonl(os.path.join(work, "topics.jsonl"), topics)
# Regression on single texts: how many words a topics text names.
write_jsonl(os.path.join(work, "counts.jsonl"),
            [{"text": t["text"], "count": float(len(t["label"]))} for t in topics])
# Token classification: animals and foods tagged in their sentences.
tagged = []
for s in sentences[::2]:
    words = s.split()
    tagged.append({"words": words, "tags": ["B-ANI" if w in ANIMALS else "B-FOOD" if w in FOODS
                                            else "O" for w in words]})
write_jsonl(os.path.join(work, "tagged.jsonl"), tagged)
# Pair classification (NLI style): does the second text name the first one's animal?
nli = [{"text": f"the {a} ate {f}", "hypothesis": f"a {b} was fed", "label": "yes" if a == b else "no"}
       for a in ANIMALS for f in FOODS for b in ANIMALS]
write_jsonl(os.path.join(work, "nli.jsonl"), nli[::2])
write_jsonl(os.path.join(work, "nli-dev.jsonl"), nli[1::2])
with open(os.path.join(work, "scores.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["first", "second", "similarity"])
    for p in pairs[:6]:
        w.writerow([p["text"], p["other"], p["label"]])

SPEC = """datasets:
  corpus: {path: corpus.jsonl}
  pairs: {path: pairs.jsonl, text_pair_field: other, label_type: number}
  topics: {path: topics.jsonl, label_type: multi, labels: [animal, food, place]}
  counts: {path: counts.jsonl, label_field: count, label_type: number}
  tagged: {path: tagged.jsonl, text_field: words, label_field: tags, label_type: tags, labels: [O, B-ANI, B-FOOD]}
  nli: {path: nli.jsonl, text_pair_field: hypothesis, labels: ["no", "yes"]}
  nli-dev: {path: nli-dev.jsonl, text_pair_field: hypothesis, labels: ["no", "yes"]}
models:
  base:
    architecture: {layers: 2, width: 32, heads: 2, ffn_width: 64, max_length: 64}
    train: {data: corpus, objective: mlm, steps: 150, batch_size: 16, optimizer: {type: adamw, lr: 1.0e-2}, seed: 1}
  sts:
    from: base
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {task: regression, labels: [overlap], pooling: mean}}
    train: {data: pairs, steps: 120, batch_size: 8, optimizer: {type: adamw, lr: 1.0e-2}, seed: 2}
  topics:
    from: base
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {task: multi_label, threshold: 0.5, pooling: mean}}
    train: {data: topics, steps: 120, batch_size: 8, optimizer: {type: adamw, lr: 1.0e-2}, seed: 3}
  count:
    from: base
    adapt: {head: {task: regression, pooling: mean}}
    train: {data: counts, steps: 120, batch_size: 8, optimizer: {type: adamw, lr: 1.0e-2}, seed: 6}
  ner:
    from: base
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {task: token_classification}}
    train: {data: tagged, steps: 120, batch_size: 8, class_weights: balanced, optimizer: {type: adamw, lr: 1.0e-2}, seed: 4}
  nli:
    from: base
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {pooling: mean}}
    train: {data: nli, validation: nli-dev, keep_best: val_f1, eval_every: 20, steps: 120, batch_size: 8,
            early_stopping: {metric: val_mcc, patience: 50}, optimizer: {type: adamw, lr: 1.0e-2}, seed: 5}
tests:
  three-words:
    type: mft
    capability: Vocabulary
    models: [count]
    inputs: ["cat and bread and farm", "dog and soup and park"]
    expect: {predicate: "value > 2"}
    max_failure_rate: 0.5
  count-typos:
    type: inv
    capability: Robustness
    models: [count]
    inputs: ["cat and bread and farm", "dog and park"]
    perturb: {kind: typos}
    threshold: 1.5
    max_failure_rate: 0.5
  topics-animal:
    type: mft
    capability: Vocabulary
    models: [topics]
    inputs: ["cat", "dog and rice"]
    expect: {label: animal}
    max_failure_rate: 0.5
  tags-animal:
    type: mft
    capability: Vocabulary
    models: [ner]
    inputs: ["the cow ate soup at the park", "a duck ate cake"]
    expect: {label: B-ANI}
    max_failure_rate: 0.5
"""
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(SPEC)

doc = run_json("validate", cwd=work)
check(doc["ok"], f"validate: {doc}")
plan = run_json("plan", cwd=work)
groups = [sorted(g["models"]) for g in plan["training_groups"]]
check(["count", "ner", "nli", "sts", "topics"] in groups,
      f"the five heads co-batch over one trunk: {groups}")

trained = run_json("run", cwd=work)
by_model = {m["model"]: m for m in trained["models"]}
nli_model = by_model["nli"]
kept = nli_model["kept"]
check(kept is not None and kept["metric"] == "val_f1" and 0 < kept["step"] <= kept["last_step"],
      f"nli keeps its best validation: {nli_model}")
check("val_mcc" in nli_model["validation"] and "val_auc" in nli_model["validation"],
      f"nli's validation metrics: {nli_model['validation']}")
check(by_model["sts"]["kept"] is None, f"sts has no keep_best: {by_model['sts']}")
show = run_json("lineage", "show", "nli", cwd=work)
train_run = next(r for r in show["runs"] if r["kind"] == "adapt")
check(train_run["hyperparameters"]["kept"] == kept and "val_f1" in train_run["message"],
      f"the run records the kept step: {train_run}")
metrics = run_json("lineage", "metrics", "nli", cwd=work)
validated = [s for s in metrics["steps"] if s["validation"]]
check(any(abs(s["validation"]["val_f1"] - kept["value"]) < 1e-12 and s["step"] == kept["step"]
          for s in validated), f"the kept value is the stored validation's: {validated}")
best = max(s["validation"]["val_f1"] for s in validated)
check(abs(best - kept["value"]) < 1e-12, f"kept {kept['value']} is the best val_f1 {best}")

# lineage tree shows each model's main metric; --metrics all every one (#40).
rc, out, err = run("lineage", "tree", cwd=work)
nli_line = next((l for l in out.splitlines() if " nli  [" in l), "")
check(rc == 0 and "val_accuracy" in nli_line and "val_mcc" not in nli_line
      and "val_loss" not in nli_line, f"the tree's nli line: {nli_line}")
rc, out, err = run("lineage", "tree", "--metrics", "all", cwd=work)
nli_line = next((l for l in out.splitlines() if " nli  [" in l), "")
check(rc == 0 and "val_mcc" in nli_line and "val_auc" in nli_line, f"--metrics all: {nli_line}")

# ---- predict, per task -----------------------------------------------------------------
p = run_json("predict", "sts", "--text", pairs[0]["text"], "--pair", pairs[0]["other"], cwd=work)
one = p["predictions"][0]
check(one["task"] == "regression" and one["pair"] == pairs[0]["other"]
      and set(one["values"]) == {"overlap"} and one["value"] == one["values"]["overlap"], f"{one}")
p = run_json("predict", "topics", "ner", "--text", "the cat ate soup", cwd=work)
multi = next(x for x in p["predictions"] if x["model"] == "topics")
check(multi["task"] == "multi_label" and set(multi["probabilities"]) == {"animal", "food", "place"}
      and all(multi["probabilities"][l] >= 0.5 for l in multi["labels"]), f"{multi}")
tags = next(x for x in p["predictions"] if x["model"] == "ner")
check(tags["task"] == "token_classification" and [w["word"] for w in tags["words"]] == ["the", "cat", "ate", "soup"],
      f"{tags}")
rc, out, err = run("predict", "ner", "--text", "the dog ate rice", cwd=work)
check(rc == 0 and "dog" in out, f"predict text: {out}{err}")
rc, out, err = run("predict", "sts", "--text", "a", "--text", "b", "--pair", "c", cwd=work)
check(rc == 2 and "give each text of a sentence pair its --pair" in err, f"--pair count: {rc} {err}")
# A pair model without its second text, or a single-text model given one, is refused (#40).
rc, out, err = run("predict", "sts", "--text", "the cat ate soup", cwd=work)
check(rc == 2 and not out and "model 'sts' reads sentence pairs" in err and "--pair" in err
      and "--text 1" in err, f"sts without --pair: {rc} {out} {err}")
rc, out, err = run("predict", "topics", "--text", "the cat", "--pair", "the dog", cwd=work)
check(rc == 2 and not out and "model 'topics' reads single texts" in err and "--pair" in err,
      f"topics with --pair: {rc} {out} {err}")

# ---- eval, per task --------------------------------------------------------------------
doc = run_json("eval", "sts", "--data", "pairs", cwd=work)
m = doc["results"][0]["metrics"]
print(f"sts on pairs: RMSE {m['rmse']:.3f}, Spearman {m['spearman']}")
check(m["task"] == "regression" and m["rows"] == len(pairs) and m["rmse"] >= 0, f"{m}")
check(m["spearman"] is not None and m["spearman"] > 0.5, f"sts learned the overlap: {m}")
# The text names each head by its task, not "classifier" for all (#40).
rc, out, err = run("eval", "sts", "--data", "pairs", "--no-record", cwd=work)
check(rc == 0 and "sts  [regression head, version" in out and "classifier" not in out,
      f"eval names the regression head: {out}{err}")
rc, out, err = run("eval", "ner", "--data", "tagged", "--no-record", cwd=work)
check(rc == 0 and "ner  [token-classification head, version" in out, f"eval of ner: {out}{err}")
doc = run_json("eval", "topics", "--data", "topics", cwd=work)
m = doc["results"][0]["metrics"]
print(f"topics: micro-F1 {m['micro_f1']:.3f}, subset accuracy {m['subset_accuracy']:.3f}")
check(m["task"] == "multi_label" and m["micro_f1"] > 0.8, f"{m}")
doc = run_json("eval", "ner", "--data", "tagged", cwd=work)
m = doc["results"][0]["metrics"]
print(f"ner: entity F1 {m['f1']:.3f}, word accuracy {m['accuracy']:.3f}")
check(m["task"] == "token_classification" and m["f1"] > 0.8 and m["words"] == 7 * len(tagged), f"{m}")
doc = run_json("eval", "nli", "--data", "nli-dev", cwd=work)
m = doc["results"][0]["metrics"]
print(f"nli on its dev set: accuracy {m['accuracy']:.3f}, MCC {m['mcc']:.3f}, ROC-AUC {m['roc_auc']}")
check(m["task"] == "classification" and m["roc_auc"] is not None and "ece" in m, f"{m}")
doc = run_json("eval", "sts", "--data", "scores.csv", "--text-field", "first", "--pair-field", "second",
               "--label-field", "similarity", "--no-record", cwd=work)
check(doc["results"][0]["metrics"]["rows"] == 6, f"a CSV file with named columns: {doc}")
rc, out, err = run("eval", "sts", "topics", "--data", "scores.csv", cwd=work)
check(rc == 2 and "separate" in err, f"two tasks on one file: {rc} {err}")
rc, out, err = run("eval", "topics", "--data", "pairs", cwd=work)
check(rc == 2 and "label_type" in err, f"a multi-label head on numbers: {rc} {err}")

# ---- behavioural tests per task --------------------------------------------------------
tested = run_json("test", cwd=work)
results = {(t["test"], t["model"]): t for t in tested["tests"]}
check(set(results) == {("three-words", "count"), ("count-typos", "count"),
                       ("topics-animal", "topics"), ("tags-animal", "ner")},
      f"each test judges the models of its task: {sorted(results)}")
check(results[("three-words", "count")]["passed"], f"count says 3: {results[('three-words', 'count')]}")
with open(os.path.join(work, "scion.yaml"), "a") as f:
    f.write("""  wrong-task:
    type: mft
    capability: Vocabulary
    models: [sts]
    inputs: ["the cat"]
    expect: {label: animal}
""")
rc, out, err = run("validate", cwd=work)
check(rc == 2 and "regression head" in out + err and "wrong-task" in out + err,
      f"a label test on a regression head: {rc} {out}{err}")
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(SPEC.replace("head: {task: regression, pooling: mean}",
                         "head: {task: regression, labels: [low, high], pooling: mean}"))
rc, out, err = run("validate", cwd=work)
check(rc == 2 and "'count' has a regression head of 2 outputs ([low, high]), but the rows of "
      "dataset 'counts' hold 1 target value" in out + err, f"outputs against targets: {rc} {out}{err}")
print("ok")
