"""`scion test --compare A B`: the cases whose outcome differs between two stored test runs,
of two models and of two versions of one (named MODEL@N), checked against the store's own
rows."""
import json
import math
import os
import re
import sqlite3

from harness import check, run, run_json, temp_dir

work = os.path.join(temp_dir(), "family")
rc, _, err = run("init", work)
check(rc == 0, f"init: {err}")
for args in (["run"], ["test"]):
    rc, out, err = run(*args, cwd=work)
    check(rc in (0, 1), f"{args} exited {rc}: {err}")


def stored_outcomes(model, run_id):
    """{(test, case, input): (passed, output)} of one test run, read from the store."""
    db = sqlite3.connect(os.path.join(work, ".scion", "lineage.db"))
    rows = db.execute(
        "SELECT t.test, t.case_index, t.input, t.passed, t.output FROM test_results t "
        "JOIN models m ON m.id = t.model_id WHERE m.name = ? AND t.run_id = ?",
        (model, run_id)).fetchall()
    db.close()
    return {(t, c, i): (bool(p), o) for t, c, i, p, o in rows}


def test_runs(model, recipe_hash=None):
    """The model's finished test runs, newest first; of one version when recipe_hash."""
    return [r["run"] for r in run_json("lineage", "log", model, cwd=work)["runs"]
            if r["kind"] == "test" and r["status"] == "finished"
            and recipe_hash in (None, r["recipe_hash"])]


def current_recipe(model):
    return next(m["recipe_hash"] for m in run_json("lineage", "tree", cwd=work)["models"]
                if m["model"] == model)


def wilson(k, n):
    """The Wilson score 95% interval of k/n (statsmodels' proportion_confint, 'wilson')."""
    if n == 0:
        return [0.0, 1.0]
    z = 1.959963984540054
    p, denominator = k / n, 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return [max(0.0, centre - half), min(1.0, centre + half)]


def mcnemar(b, c):
    """McNemar's exact two-sided p-value: 2 P(X <= min(b, c)), X ~ Binomial(b + c, 1/2)."""
    n = b + c
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n)


def check_statistics(doc, out, cases_a, cases_b, both):
    """The statistics block against the pass/fail counts the store holds."""
    stats = doc["statistics"]
    fails_a = sum(not cases_a[k][0] for k in both)
    fails_b = sum(not cases_b[k][0] for k in both)
    only_a = sum(cases_a[k][0] and not cases_b[k][0] for k in both)
    only_b = sum(cases_b[k][0] and not cases_a[k][0] for k in both)
    check(stats["a"]["failures"] == fails_a and stats["b"]["failures"] == fails_b
          and stats["pass_only_a"] == only_a and stats["pass_only_b"] == only_b,
          f"counts {stats}: the store says {fails_a}, {fails_b} failures, {only_a}/{only_b}")
    for side, fails in (("a", fails_a), ("b", fails_b)):
        check(abs(stats[side]["failure_rate"] - fails / len(both)) < 1e-12
              and all(abs(x - y) < 1e-9 for x, y in zip(stats[side]["wilson_95"],
                                                         wilson(fails, len(both)))),
              f"side {side}: {stats[side]}, expected {wilson(fails, len(both))}")
    p = mcnemar(only_a, only_b)
    check(abs(stats["mcnemar_p"] - p) <= 1e-9 * p and stats["significant"] == (p < 0.05),
          f"McNemar: {stats}, expected p = {p}")
    verdict = "a significant difference" if p < 0.05 else "not significant"
    check(re.search(rf"^McNemar's exact test on the {only_a + only_b} cases that differ "
                    rf"\({only_a} pass only on a, {only_b} only on b\): p = [^,]+, {verdict}",
                    out, re.M), f"the text's test line:\n{out}")
    low, high = wilson(fails_a, len(both))
    check(f"a {fails_a} of {len(both)} fail ({100 * fails_a / len(both):.1f}%, 95% interval "
          f"{100 * low:.1f}-{100 * high:.1f}%)" in out, f"the text's rate of a:\n{out}")


def check_comparison(a, b, run_a, run_b, model_a, model_b):
    doc = run_json("test", "--compare", a, b, cwd=work)
    check([s["model"] for s in doc["models"]] == [model_a, model_b]
          and [s["run"] for s in doc["models"]] == [run_a, run_b], f"sides: {doc['models']}")
    cases_a, cases_b = stored_outcomes(model_a, run_a), stored_outcomes(model_b, run_b)
    both = cases_a.keys() & cases_b.keys()
    expected = sorted(k for k in both if cases_a[k][0] != cases_b[k][0])
    listed = sorted((d["test"], d["case"], d["input"]) for d in doc["differ"])
    check(listed == expected, f"{a} vs {b}: lists {listed}, the store says {expected}")
    check(doc["compared"] == len(both) and doc["only_in_a"] == len(cases_a) - len(both)
          and doc["only_in_b"] == len(cases_b) - len(both), f"counts: {doc}")
    for d in doc["differ"]:
        key = (d["test"], d["case"], d["input"])
        check((d["a"]["passed"], d["a"]["output"]) == cases_a[key]
              and (d["b"]["passed"], d["b"]["output"]) == cases_b[key], f"outcomes of {key}: {d}")
    rc, out, err = run("test", "--compare", a, b, cwd=work)
    check(rc == 0, f"--compare {a} {b} exited {rc}: {err}")
    check(re.search(rf"^{len(expected)} of {len(both)} cases differ", out, re.M),
          f"the text summary:\n{out}")
    check_statistics(doc, out, cases_a, cases_b, both)
    return doc


# Two models.
check(test_runs("trunk") and test_runs("trunk-lora"), "every model has a test run")
check_comparison("trunk", "trunk-lora", test_runs("trunk")[0], test_runs("trunk-lora")[0],
                 "trunk", "trunk-lora")

# Two versions of one model: trunk-lora adapted to labels flipped on purpose, then as
# scaffolded. The flipped one fails praise the scaffolded one gets right.
with open(os.path.join(work, "data", "reviews.jsonl")) as f:
    rows = [json.loads(line) for line in f]
with open(os.path.join(work, "data", "flipped.jsonl"), "w") as f:
    for row in rows:
        row["label"] = "negative" if row["label"] == "positive" else "positive"
        f.write(json.dumps(row) + "\n")
with open(os.path.join(work, "scion.yaml")) as f:
    spec = f.read()
weak = spec.replace("datasets:\n", "datasets:\n  flipped:\n    path: data/flipped.jsonl\n"
                    "    labels: [negative, positive]\n", 1)
weak = re.sub(r"(    train: &adapt[^\n]*\n)      data: reviews\n      epochs: 2\n",
              r"\1      data: flipped\n      epochs: 12\n", weak, count=1)
weak = weak.replace("    max_failure_rate: 0.25", "    max_failure_rate: 0.25\n"
                    "  blame-is-negative:\n    type: mft\n    capability: Vocabulary\n"
                    "    template: \"the {dish} was bland.\"\n    expect: {label: negative}\n", 1)
check("data: flipped" in weak and "blame-is-negative" in weak, "the flipped recipe is written")
newest = {}
for version, text in (("weak", weak), ("trained", spec)):
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(text)
    # Trains what changed (the scaffolded recipe comes back: restored), then tests what the
    # store holds no result of.
    rc, out, err = run("run", cwd=work)
    check(rc in (0, 1), f"run of the {version} version exited {rc}: {err}")
    newest[version] = test_runs("trunk-lora", current_recipe("trunk-lora"))[0]
check("restored" in out, f"the scaffolded version comes back restored:\n{out}")
check(newest["weak"] != newest["trained"], f"each version has its test run: {newest}")
doc = check_comparison(f"trunk-lora@{newest['weak']}", "trunk-lora", newest["weak"],
                       newest["trained"], "trunk-lora", "trunk-lora")
check(doc["differ"], f"the barely trained version differs from the trained one: {doc}")
check(doc["only_in_a"] > 0, "the weak version's extra test is counted, not compared")
# Named by its version, as `lineage versions` lists it, the text says what the user typed
# and the version numbers they see, not only the test runs read (#40).
weak_version = doc["models"][0]["version"]
current_version = doc["models"][1]["version"]
listed = [v["run"] for v in run_json("lineage", "versions", "trunk-lora", cwd=work)["versions"]]
check(weak_version in listed and current_version in listed and weak_version != newest["weak"],
      f"sides name versions {weak_version}, {current_version} of {listed}")
doc = check_comparison(f"trunk-lora@{weak_version}", "trunk-lora", newest["weak"],
                       newest["trained"], "trunk-lora", "trunk-lora")
rc, out, err = run("test", "--compare", f"trunk-lora@{weak_version}", "trunk-lora", cwd=work)
first = out.splitlines()[0]
check(first == f"comparing trunk-lora@{weak_version} (version @{weak_version}; test run "
      f"{newest['weak']}) (a) with trunk-lora (version @{current_version}, the current one; test "
      f"run {newest['trained']}) (b)", f"the heading names the sides as typed: {first}")
check(f"only on trunk-lora (b)" in out and f"only on trunk-lora@{weak_version} (a)" in out
      and f"@{newest['weak']} (a)" not in out, f"the summary names the sides as typed:\n{out}")
# 0 failures of 1 case still allows a failure rate up to 79%; no difference gives p = 1.
check(wilson(0, 1)[0] == 0.0 and abs(wilson(0, 1)[1] - 0.7934506856227627) < 1e-12
      and mcnemar(0, 0) == 1.0
      and mcnemar(0, 5) == 0.0625, "the test's own reference formulas")

# Bad sides: exit 2 with a clear message.
for args, words in ((["trunk-lora@x", "trunk"], "neither a run number nor a recipe hash prefix"),
                    (["trunk-lroa", "trunk"], "did you mean 'trunk-lora'"),
                    ([f"trunk@{newest['trained']}", "trunk"], f"'trunk' has no run {newest['trained']}")):
    rc, out, err = run("test", "--compare", *args, cwd=work)
    check(rc == 2 and words in err, f"--compare {args}: exit {rc}, {err}")
rc, out, err = run("test", "--compare", "trunk", cwd=work)
check(rc == 2, f"--compare with one side exited {rc}")
print(f"ok: {len(doc['differ'])} cases differ between two versions of trunk-lora")
