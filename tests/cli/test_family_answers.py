#!/usr/bin/env python3
"""Answers about a family that were wrong or unhelpful (issue #40), on a tiny byte-level
family: a masked-LM base, a classifier on it, a descendant of the classifier, and a second
classifier that one test alone is for. Assertions judge a model only on the inputs of the
tests that apply to it; the report's blame is lineage blame's answer; blame refuses a test
that does not apply to the model; a stored failing case reads back naming its prediction
once."""
import html
import json
import os
import re

from harness import check, run, run_json, temp_dir

DISHES = ["soup", "pasta", "coffee", "bread", "salad", "cake"]
GOOD = ["great", "tasty", "lovely", "fresh"]
BAD = ["awful", "bland", "stale", "cold"]
RECIPE = "{data: reviews, steps: %d, batch_size: 16, optimizer: {type: adamw, lr: 1.0e-2}, seed: %d}"
SPEC = f"""datasets:
  corpus: {{path: corpus.txt}}
  reviews: {{path: reviews.jsonl, labels: [negative, positive]}}
models:
  base:
    architecture: {{type: encoder, layers: 1, width: 32, heads: 2, ffn_width: 64, max_length: 32, tokenizer: byte}}
    train: {{data: corpus, objective: mlm, steps: 10, batch_size: 8, seed: 1}}
  clf:
    from: base
    adapt: {{lora: {{rank: 4, alpha: 8, targets: [q, v]}}, head: {{}}}}
    train: {RECIPE % (60, 2)}
  clf-child:
    from: clf
    adapt: {{lora: {{rank: 2, alpha: 4, targets: [q]}}}}
    train: {RECIPE % (10, 3)}
  cities:
    from: base
    adapt: {{head: {{}}}}
    train: {RECIPE % (10, 4)}
lexicons:
  dish: [{", ".join(DISHES)}]
  bad: [{", ".join(BAD)}]
  city: [Lisbon, Oslo, Quito]
tests:
  bad-is-positive:               # wrong on purpose: trained classifiers fail it
    type: mft
    capability: Vocabulary
    template: "the {{dish}} was {{bad}}."
    expect: {{label: positive}}
    models: [clf, clf-child]
  city-names:                    # for `cities` alone
    type: mft
    capability: Vocabulary
    template: "{{city}} moved to {{city}} ."
    expect: {{label: negative}}
    models: [cities]
assertions:
  always:                        # every prediction violates it
    kind: low_confidence
    threshold: 1.0
"""

work = temp_dir()
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(SPEC)
with open(os.path.join(work, "corpus.txt"), "w") as f:
    f.write("\n".join(f"the {d} was {w}." for d in DISHES for w in GOOD + BAD) + "\n")
with open(os.path.join(work, "reviews.jsonl"), "w") as f:
    for d in DISHES:
        for good, bad in zip(GOOD, BAD):
            f.write(json.dumps({"text": f"the {d} was {good}.", "label": "positive"}) + "\n")
            f.write(json.dumps({"text": f"the {d} was {bad}.", "label": "negative"}) + "\n")
rc, out, err = run("--json", "run", cwd=work)  # with --json, run trains and does not test
check(rc == 0, f"run: {rc} {out} {err}")

# ---- 1. an assertion judges a model on the inputs of the tests for that model ----------------
violations = os.path.join(work, "violations.jsonl")
rc, out, err = run("test", "--export-violations", violations, cwd=work)
check(rc in (0, 1), f"test: {rc} {err}")
inputs = {}
with open(violations) as f:
    for line in f:
        v = json.loads(line)
        inputs.setdefault(v["model"], set()).add(v["input"])
bad_inputs = {f"the {d} was {b}." for d in DISHES for b in BAD}
check(inputs.get("clf") == bad_inputs and inputs.get("clf-child") == bad_inputs,
      f"clf and clf-child are judged on bad-is-positive's inputs alone: {inputs}")
check(inputs.get("cities") and all("moved to" in i for i in inputs["cities"]),
      f"cities is judged on city-names' inputs alone: {inputs.get('cities')}")

# ---- 9. a stored failing case names its prediction once ---------------------------------------
fresh = [line for line in run("test", "--rerun", cwd=work)[1].splitlines()
         if line.startswith("    bad-is-positive/")]
stored = [line for line in run("test", cwd=work)[1].splitlines()
          if line.startswith("    bad-is-positive/")]
check(fresh and stored == fresh, f"a stored result reads as judged:\n{fresh}\n{stored}")
for line in stored:
    label = re.search(r"predicted (\w+) \(", line)
    check(label and line.count(label.group(1)) == 1 + line.count("expected label " + label.group(1)),
          f"the prediction is named once: {line}")

# ---- 2. the report's blame is lineage blame's -------------------------------------------------
blamed = run_json("lineage", "blame", "clf-child", "--test", "bad-is-positive", cwd=work)
origins = blamed["tests"][0]["origins"]
check(blamed["headless_ancestor"] == "base" and origins, f"blame traces up to clf: {blamed}")
report = os.path.join(work, "family.html")
rc, out, err = run("report", "-o", report, cwd=work)
check(rc == 0, f"report: {rc} {err}")
with open(report) as f:
    page = f.read()
section = page[page.index('<section id="blame">'):]
row = re.search(r"<tr><td>clf-child</td><td>bad-is-positive</td><td class=\"num\">\d+</td><td>(.*?)</td></tr>",
                section)
check(row, f"the report has a blame row for clf-child: {section[:2000]}")
said = html.unescape(row.group(1))
expected = ", ".join(f"{model} ({n})" for model, n in sorted(origins.items()))
check(said == expected and "unknown" not in said,
      f"the report says {said!r}, lineage blame says {expected!r}")

# ---- 3. blame refuses a test that does not apply to the model ---------------------------------
rc, out, err = run("lineage", "blame", "cities", "--test", "bad-is-positive", cwd=work)
check(rc == 2 and not out and "does not apply to 'cities'" in err
      and "it applies to: clf, clf-child" in err, f"blame of a test not for the model: {rc} {out} {err}")
print("ok")
