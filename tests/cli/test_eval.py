#!/usr/bin/env python3
"""`scion eval` on a tiny family: a byte-level decoder `base` trained with causal LM on
animal sentences, and two classifiers on it (`kind`: a head; `kind-lora`: LoRA and a head).
Checks the classifiers' accuracy, macro-F1, per-class precision/recall and confusion
matrix against values recomputed here from `scion predict --json`'s labels, the decoder's
perplexity against its training corpus and a corpus it never saw, that every result is
recorded against the model's recipe hash and shown by `lineage show`, that fsck stays
clean, and the errors for bad data."""
import json
import math
import os
import re

from harness import check, run, run_json, temp_dir

DETERMINERS = ["the", "a", "my", "one", "our", "that"]
SOUNDS = {"cat": "meow", "dog": "woof", "cow": "moo", "duck": "quack"}


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


work = temp_dir()
write_jsonl(os.path.join(work, "animals.jsonl"),
            [{"text": f"{d} {a} says {s}."} for d in DETERMINERS for a, s in SOUNDS.items()])
write_jsonl(os.path.join(work, "kinds.jsonl"),
            [{"text": f"{d} {a} says {SOUNDS[a]}.", "label": a} for d in DETERMINERS
             for a in ("cat", "dog")])
# Held out: some rows the classifiers get wrong on purpose (a cat that barks), so the
# metrics are not all 1.
held_out = [("the cat says meow.", "cat"), ("a dog says woof.", "dog"),
            ("my cat says woof.", "cat"), ("one dog says meow.", "dog"),
            ("our cat purrs.", "cat"), ("that dog barks.", "dog"), ("the dog says woof.", "dog")]
write_jsonl(os.path.join(work, "held-out.jsonl"), [{"text": t, "label": l} for t, l in held_out])
write_jsonl(os.path.join(work, "unseen.jsonl"),
            [{"text": "zebras quietly eat green grass in kenya."}, {"text": "xylophones, jazz, quiz!"}])

with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write("""datasets:
  animals: {path: animals.jsonl}
  kinds: {path: kinds.jsonl, labels: [cat, dog]}
models:
  base:
    architecture: {type: decoder, layers: 2, width: 32, heads: 2, ffn_width: 64, max_length: 48}
    train: {data: animals, objective: clm, steps: 200, batch_size: 12,
            optimizer: {type: adamw, lr: 1.0e-2}, seed: 1}
  kind:
    from: base
    adapt: {head: {labels: [cat, dog], pooling: last}}
    train: {data: kinds, steps: 30, batch_size: 12, optimizer: {type: adamw, lr: 1.0e-2}, seed: 3}
  kind-lora:
    from: base
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {labels: [cat, dog], pooling: last}}
    train: {data: kinds, steps: 30, batch_size: 12, optimizer: {type: adamw, lr: 1.0e-2}, seed: 4}
""")

rc, out, err = run("run", cwd=work, timeout=900)
check(rc == 0, f"run failed: {out}{err}")

# ---- classifiers: metrics against predict's labels -------------------------------------
doc = run_json("eval", "kind", "kind-lora", "--data", "held-out.jsonl", cwd=work)
check(doc["data"]["rows"] == len(held_out), f"rows: {doc['data']}")
check(len(doc["data"]["digest"]) == 64 and doc["recorded"] is True, f"data: {doc}")
texts = [t for t, _ in held_out]
predicted = run_json("predict", "kind", "kind-lora", *sum((["--text", t] for t in texts), []), cwd=work)
labels = ["cat", "dog"]
plan = run_json("plan", cwd=work)
versions = {m["model"]: m["recipe_hash"] for m in plan["models"]}
for result in doc["results"]:
    model, m = result["model"], result["metrics"]
    check(result["kind"] == "classifier", f"{model}: kind {result['kind']}")
    check(result["model_version"] == versions[model], f"{model}: version {result['model_version']}")
    said = {p["text"]: p["label"] for p in predicted["predictions"] if p["model"] == model}
    confusion = [[sum(1 for t, l in held_out if l == a and said[t] == b) for b in labels]
                 for a in labels]
    check(m["confusion"] == confusion, f"{model}: confusion {m['confusion']} != {confusion}")
    accuracy = sum(confusion[i][i] for i in range(2)) / len(held_out)
    check(abs(m["accuracy"] - accuracy) < 1e-12, f"{model}: accuracy {m['accuracy']} != {accuracy}")
    f1s = []
    for i, label in enumerate(labels):
        tp = confusion[i][i]
        predicted_n = sum(confusion[j][i] for j in range(2))
        support = sum(confusion[i])
        p = tp / predicted_n if predicted_n else 0.0
        r = tp / support if support else 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        f1s.append(f1)
        c = m["per_class"][i]
        check(c["label"] == label and c["support"] == support, f"{model}: {c}")
        check(abs(c["precision"] - p) < 1e-12 and abs(c["recall"] - r) < 1e-12,
              f"{model}: {label} P/R {c['precision']}/{c['recall']} != {p}/{r}")
    check(abs(m["macro_f1"] - sum(f1s) / 2) < 1e-12, f"{model}: macro-F1 {m['macro_f1']}")
    print(f"{model}: accuracy {m['accuracy']:.3f}, macro-F1 {m['macro_f1']:.3f}, confusion {confusion}")

# A spec dataset by name works too, and the trained classifiers do well on it.
by_name = run_json("eval", "kind-lora", "--data", "kinds", "--no-record", cwd=work)
check(by_name["data"]["name"] == "kinds" and by_name["recorded"] is False, f"{by_name['data']}")
check(by_name["results"][0]["metrics"]["accuracy"] > 0.9, f"kind-lora on its training data: {by_name}")

# ---- the language model: perplexity ----------------------------------------------------
lm = run_json("eval", "base", "--data", "animals", cwd=work)
seen = lm["results"][0]
check(seen["kind"] == "language model" and seen["metrics"]["pseudo"] is False, f"{seen}")
m = seen["metrics"]
check(abs(m["perplexity"] - math.exp(m["mean_nll"])) < 1e-9 * m["perplexity"], f"{m}")
check(m["tokens"] == sum(len(f"{d} {a} says {s}.".encode()) for d in DETERMINERS
                         for a, s in SOUNDS.items()), f"byte tokens: {m['tokens']}")
unseen = run_json("eval", "base", "--data", "unseen.jsonl", cwd=work)["results"][0]["metrics"]
print(f"base: perplexity {m['perplexity']:.3f} on its corpus, {unseen['perplexity']:.3f} on unseen text")
check(1.0 < m["perplexity"] < 4.0, f"perplexity on the training corpus: {m['perplexity']}")
check(unseen["perplexity"] > 4 * m["perplexity"], f"unseen text should be far less likely: {unseen}")

# ---- recorded and shown ----------------------------------------------------------------
show = run_json("lineage", "show", "kind-lora", cwd=work)
evaluations = show["evaluations"]
check(len(evaluations) == 1, f"kind-lora evaluations: {evaluations}")
e = evaluations[0]
check(e["dataset"] == "held-out.jsonl" and e["current"] is True
      and e["model_version"] == versions["kind-lora"] and e["metrics"]["confusion"]
      == doc["results"][1]["metrics"]["confusion"], f"stored: {e}")
check(len(run_json("lineage", "show", "kind", cwd=work)["evaluations"]) == 1, "kind: one evaluation")
check(len(run_json("lineage", "show", "kind-lora", cwd=work)["evaluations"]) == 1,
      "--no-record must not record")
check(len(run_json("lineage", "show", "base", cwd=work)["evaluations"]) == 2, "base: two evaluations")
rc, out, err = run("lineage", "show", "kind-lora", cwd=work)
check(rc == 0 and "evaluations" in out and "held-out.jsonl (7 rows)" in out and "macro-F1" in out,
      f"show text: {out}")
rc, out, err = run("fsck", cwd=work)
check(rc == 0, f"fsck after eval: {out}{err}")

# ---- shown in the family report --------------------------------------------------------
report_file = os.path.join(work, "report.html")
rc, out, err = run("report", "-o", report_file, cwd=work)
check(rc == 0, f"report: {rc} {err}")
with open(report_file, encoding="utf-8") as f:
    page = f.read()
section = page[page.index('<section id="evaluations">'):]
section = section[:section.index("</section>")]
rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in section.split("<tr>")[2:]]
lora_rows = [r for r in rows if r[:2] == ["kind-lora", "held-out.jsonl"]]
check(len(lora_rows) == 1, f"one report row for kind-lora on held-out.jsonl: {rows}")
check(lora_rows[0][2:4] == ["7", "classification"] and lora_rows[0][5] == "current"
      and f"accuracy {e['metrics']['accuracy']:.4f}" in lora_rows[0][4]
      and f"macro-F1 {e['metrics']['macro_f1']:.4f}" in lora_rows[0][4],
      f"the report's row holds kind-lora's stored metrics: {lora_rows[0]} vs {e['metrics']}")
confusion_cells = [f'<td class="num">{n}</td>' for row in e["metrics"]["confusion"] for n in row]
check(all(cell in section for cell in confusion_cells) and 'class="confusion"' in section,
      f"the report draws the confusion matrix: {section}")

# ---- errors ----------------------------------------------------------------------------
rc, out, err = run("eval", "kind", "--data", "animals", cwd=work)
check(rc == 2 and "no labels" in err, f"classifier on unlabelled data: {rc} {err}")
write_jsonl(os.path.join(work, "birds.jsonl"), [{"text": "a duck says quack.", "label": "duck"}])
rc, out, err = run("eval", "kind", "--data", "birds.jsonl", cwd=work)
check(rc == 2 and "duck" in err and "birds.jsonl:1" in err, f"unknown label: {rc} {err}")
rc, out, err = run("eval", "kind", "--data", "nothing", cwd=work)
check(rc == 3 or rc == 2, f"unknown data: {rc}")
check("animals, kinds" in err, f"unknown data lists the datasets: {err}")
rc, out, err = run("eval", "kidn", "--data", "kinds", cwd=work)
check(rc != 0 and "did you mean 'kind'" in err, f"unknown model: {rc} {err}")
print("ok")
