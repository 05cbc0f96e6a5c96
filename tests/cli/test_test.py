"""scion test, scion lineage blame and scion predict on the example family.

Trains examples/sentiment once into a temporary copy (with `scion run`, which ends by
testing), then checks the reports, what the store recorded, the exit codes, blame and
predict against it.
"""
import json
import math
import os
import re
import xml.etree.ElementTree as ET

from harness import check, copy_example, run, run_json, temp_dir

work = os.path.join(temp_dir(), "sentiment")
copy_example("sentiment", work)

# Before training: a clear error that says what to run.
rc, out, err = run("-C", work, "test")
check(rc != 0 and "scion run" in err, f"untrained test should say to run `scion run`:\n{err}")

# `scion run` trains and ends with the family matrix.
rc, out, err = run("-C", work, "run")
check(rc in (0, 1), f"scion run exited {rc}\n{err}")
check("family matrix" in out, f"scion run should end with the family matrix:\n{out}")
header = out.split("family matrix")[1].splitlines()[1]
for model in ("base", "review-lora", "review-prefix", "review-bottleneck", "review-bitfit",
              "product-lora"):
    check(model in header, f"matrix lacks column {model}:\n{out}")

# --json, --junit and --export-violations in one run.


def wilson(k, n):
    """The Wilson score 95% interval of k/n (statsmodels' proportion_confint, 'wilson')."""
    z = 1.959963984540054
    p, denominator = k / n, 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return [max(0.0, centre - half), min(1.0, centre + half)]


junit = os.path.join(work, "report.xml")
violations = os.path.join(work, "violations.jsonl")
# --rerun: every result is judged again (without it, each is read back from the store).
rc, out, err = run("--json", "-C", work, "test", "--rerun", "--junit", junit, "--export-violations",
                   violations)
report = json.loads(out)
exceeded = [t for t in report["tests"] if t["exceeded"]]
check(rc == (1 if exceeded else 0), f"exit {rc} but {len(exceeded)} tests exceed their rate\n{err}")
pairs = {(t["test"], t["model"]) for t in report["tests"]}
check(("intensifier-direction", "review-lora") in pairs, "intensifier-direction runs on review-lora")
check(("intensifier-direction", "review-prefix") not in pairs, "models: restricts a test")
for t in report["tests"]:
    check(t["cases"] > 0, f"{t['test']} on {t['model']} judged no case")
    check(abs(t["failure_rate"] - t["failures"] / t["cases"]) < 1e-9, f"rate of {t}")
    check(all(abs(x - y) < 1e-9 for x, y in zip(t["failure_rate_wilson_95"],
                                                wilson(t["failures"], t["cases"]))),
          f"the Wilson interval of {t}: expected {wilson(t['failures'], t['cases'])}")
    # The previous run was the one `scion run` ended with: every cell has a change.
    check(t["previous_failure_rate"] is not None, f"no previous rate for {t['test']}/{t['model']}")
    check(len(t["examples"]) <= 3 and (t["failures"] == 0 or t["examples"]),
          f"examples of {t['test']}/{t['model']}")
typo = next(t for t in report["tests"] if t["test"] == "typo-invariance")
check(typo["type"] == "inv" and typo["capability"] == "Robustness", f"typo-invariance: {typo}")

tree = ET.parse(junit)
behavioural = tree.getroot().find("testsuite[@name='behavioural tests']")
cases = behavioural.iter("testcase")
names = {(c.get("classname"), c.get("name")) for c in cases}
check(names == {(m, t) for t, m in pairs}, f"JUnit testcases {names} differ from {pairs}")
failures = [c for c in behavioural.iter("testcase") if c.find("failure") is not None]
check(len(failures) == len(exceeded), f"JUnit has {len(failures)} failures, expected {len(exceeded)}")

with open(violations) as f:
    rows = [json.loads(line) for line in f]
check(len(rows) == report["violations"]["total"], "every violation is exported")
check(all(r["model"] == "product-lora" for r in rows if r["assertion"] == "agrees-with-parent"),
      "models: restricts an assertion")
check(all(r["severity"] > 0 for r in rows), "violations have a positive severity")
check([r["severity"] for r in rows] == sorted((r["severity"] for r in rows), reverse=True),
      "violations are exported most severe first")

# Every case result is stored against the model version, under a run of kind test.
log = run_json("-C", work, "lineage", "log", "product-lora", "--all")
test_runs = [r for r in (log["runs"] if isinstance(log, dict) else log) if r.get("kind") == "test"]
check(len(test_runs) >= 2, f"two test runs of product-lora expected in the log: {log}")
check(str(report["runs"]["product-lora"]) in {str(r.get("id", r.get("run"))) for r in test_runs},
      "the reported run id is in the log")

# A spec variant whose two tests cannot both pass: exit code 1, and the text report says FAIL.
with open(os.path.join(work, "scion.yaml")) as f:
    spec = f.read()
spec = spec.replace("tests:\n", """tests:
  all-positive:
    type: mft
    capability: Vocabulary
    inputs: ["the film was fine.", "the plot was thin.", "it was a film."]
    expect: {label: positive}
    max_failure_rate: 0
  all-negative:
    type: mft
    capability: Vocabulary
    inputs: ["the film was fine.", "the plot was thin.", "it was a film."]
    expect: {label: negative}
    max_failure_rate: 0
  product-negation:
    type: mft
    capability: Negation
    models: [product-lora]
    template: "the {movie_noun} was {negative_adj}."
    expect: {label: negative}
    regression: parent
    max_failure_rate: 0.2
""", 1)
with open(os.path.join(work, "strict.yaml"), "w") as f:
    f.write(spec)
rc, out, err = run("-C", work, "-f", "strict.yaml", "test", "review-lora")
check(rc == 1, f"a test over its max_failure_rate must exit 1, got {rc}\n{out}\n{err}")
check("FAIL" in out, f"the report marks the failing test:\n{out}")
# Each test's line gives its rate with the Wilson 95% interval of its counts.
lines = re.findall(r"(\d+) cases, (\d+) failures \([\d.]+%, 95% interval ([\d.]+)-([\d.]+)%,", out)
check(lines, f"the report gives each rate's interval:\n{out}")
for cases, failures, low, high in lines:
    expected = wilson(int(failures), int(cases))
    check((low, high) == (f"{100 * expected[0]:.1f}", f"{100 * expected[1]:.1f}"),
          f"{failures} of {cases}: interval {low}-{high}%, expected {expected}")
rc, out, err = run("--json", "-C", work, "-f", "strict.yaml", "test", "product-lora")
strict = json.loads(out)
neg = [t for t in strict["tests"] if t["test"] == "product-negation"]
check(len(neg) == 1 and neg[0]["model"] == "product-lora", f"product-negation on product-lora only: {neg}")
# regression: parent compares with review-lora: failures it shares count as inherited.
check(neg[0]["failures"] + neg[0]["inherited"] <= neg[0]["cases"] and "note" not in neg[0], f"{neg}")

# Blame: product-lora's failures traced up through review-lora to the base classifier.
blame = run_json("-C", work, "lineage", "blame", "product-lora")
check([c["model"] for c in blame["chain"]] == ["product-lora", "review-lora", "base"],
      f"chain: {blame['chain']}")
check(blame["headless_ancestor"] is None, "every model of the chain has a classifier")
check(blame["chain"][0]["run"] is not None and blame["chain"][0]["method"], "chain links name their run")
by_test = {t["test"]: t for t in blame["tests"]}
check("intensifier-direction" not in by_test, "blame covers only the model's tests")
for t in blame["tests"]:
    check(sum(t["origins"].values()) == t["failures"] == len(t["failing"]), f"origins of {t['test']}")
    for c in t["failing"]:
        check(c["origin"] in ("product-lora", "review-lora", "base"), f"origin {c}")
        check(c["kind"] == ("inherited" if c["origin"] == "base" else "introduced"), f"kind {c}")

# What the example is built to show (examples/README.md). Its recipes are seeded and the
# effects are large (confidences near 0.99), so these hold on every machine:
cells = {(t["test"], t["model"]): t for t in report["tests"]}
# the base never saw negation: it fails negated-positive, and product-lora inherits some;
check(cells[("negated-positive", "base")]["failure_rate"] > 0.5, f"{cells[('negated-positive', 'base')]}")
check(by_test["negated-positive"]["origins"].get("base", 0) > 0,
      f"negation failures inherited from base: {by_test['negated-positive']}")
# product-lora's labelling bug is a regression against its parent, introduced by it;
praise = cells[("product-praise", "product-lora")]
check(praise["failures"] > 0 and praise["exceeded"], f"product-praise regressions: {praise}")
check(by_test["product-praise"]["origins"].get("product-lora", 0) > 0,
      f"blame finds the bug introduced by product-lora: {by_test['product-praise']}")
# and the praise-is-positive assertion catches its confident errors.
confident = [r for r in rows if r["assertion"] == "praise-is-positive" and r["model"] == "product-lora"]
check(confident and confident[0]["severity"] > 0.9, f"confident errors flagged: {confident[:3]}")

rc, out, err = run("-C", work, "lineage", "blame", "product-lora", "--test", "typo-invariance", "--case", "0")
check(rc == 0 and "typo-invariance" in out, f"blame --test --case:\n{out}\n{err}")
check("1 cases" in out or "of 1 cases" in out or "(1 cases)" in out, f"--case keeps one case:\n{out}")
rc, out, err = run("-C", work, "lineage", "blame", "product-lora", "--test", "no-such-test")
check(rc == 2 and "no-such-test" in err, f"unknown test: {rc}\n{err}")

# Predict: labels with probabilities, assertions on request.
pred = run_json("-C", work, "predict", "review-lora", "--text", "a lovely film", "--text", "dull and awful")
check(len(pred["predictions"]) == 2, f"two predictions: {pred}")
for p in pred["predictions"]:
    check(set(p["probabilities"]) == {"negative", "positive"}, f"labels: {p}")
    check(abs(sum(p["probabilities"].values()) - 1) < 1e-4, f"probabilities sum to 1: {p}")
    check(p["label"] == max(p["probabilities"], key=p["probabilities"].get), f"label is the argmax: {p}")
texts = os.path.join(work, "texts.txt")
with open(texts, "w") as f:
    f.write("a lovely film\n\nthe plot was dull\n")
rc, out, err = run("-C", work, "predict", "product-lora", "--file", texts, "--assert")
check(rc == 0, f"predict --file --assert exited {rc}\n{err}")
check(len([l for l in out.splitlines() if "lovely" in l or "dull" in l]) == 2, f"one line per text:\n{out}")
check("2 assertions checked" in out, f"product-lora has two assertions:\n{out}")
# The same text co-batched with others in `test` and alone in `predict` gives one answer.
one = run_json("-C", work, "predict", "review-lora", "--text", "a lovely film")["predictions"][0]
check(abs(one["confidence"] - pred["predictions"][0]["confidence"]) < 1e-5, "predictions do not depend on batching")
# Several models answer in one shared pass, each as it answers alone; a repeat answers once.
many = run_json("-C", work, "predict", "base", "review-lora", "product-lora", "review-lora",
                "--text", "a lovely film", "--text", "dull and awful")
check(many["models"] == ["base", "review-lora", "product-lora"], f"models: {many['models']}")
check(len(many["predictions"]) == 6, f"a prediction per text and model: {many}")
for p in many["predictions"]:
    alone = run_json("-C", work, "predict", p["model"], "--text", p["text"])["predictions"][0]
    check(alone["model"] == p["model"] and alone["label"] == p["label"]
          and abs(alone["confidence"] - p["confidence"]) < 1e-5,
          f"{p['model']} on {p['text']!r}: together {p['confidence']}, alone {alone['confidence']}")
rc, out, err = run("-C", work, "predict", "review-lora", "product-lora", "--text", "a lovely film")
check(rc == 0 and out.splitlines()[0] == "a lovely film" and len(out.splitlines()) == 3,
      f"several models: the text, then a line per model:\n{out}")
rc, out, err = run("-C", work, "predict", "base", "--text", "a lovely film")
check(rc == 0 and "positive" in out, f"the base is a classifier too: {rc}\n{out}\n{err}")
# A language model has no labels to predict: a usage error that says what to do.
with open(os.path.join(work, "lm.yaml"), "w") as f:
    f.write(spec.replace("models:\n", """models:
  lm:
    architecture: {type: encoder, layers: 1, width: 32, heads: 2, ffn_width: 64, max_length: 32}
    train: {data: reviews, objective: mlm, steps: 10, batch_size: 4, seed: 5}
""", 1))
rc, out, err = run("-C", work, "-f", "lm.yaml", "predict", "lm", "--text", "x")
check(rc == 2 and "classifier" in err, f"predict on a masked-LM model: {rc}\n{err}")
print("ok")
