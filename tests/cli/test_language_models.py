"""scion test and scion lineage blame on a family of language models.

Builds a tiny byte-level decoder family in a temporary folder: `base` learns with causal
LM which sound each animal makes ("the cat says meow."), `flip` adapts it with LoRA on a
corpus where the cat says woof, and `kind` puts a classifier head on the base. Trains it
with `scion run` (a few seconds), then checks `prefer` tests, `regression: parent`, model
assertions over lm.<name>, what the store records, blame, and the spec errors.
"""
import json
import os
import sqlite3
import xml.etree.ElementTree as ET

from harness import check, run, run_json, temp_dir

DETERMINERS = ["the", "a", "my", "one", "our", "that"]
SOUNDS = {"cat": "meow", "dog": "woof", "cow": "moo", "duck": "quack"}


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def corpus(sounds):
    return [{"text": f"{d} {animal} says {sound}."} for d in DETERMINERS
            for animal, sound in sounds.items()]


work = temp_dir()
write_jsonl(os.path.join(work, "animals.jsonl"), corpus(SOUNDS))
write_jsonl(os.path.join(work, "flipped.jsonl"), corpus(dict(SOUNDS, cat="woof")))
write_jsonl(os.path.join(work, "kinds.jsonl"),
            [{"text": f"{d} {a} says {SOUNDS[a]}.", "label": a} for d in DETERMINERS
             for a in ("cat", "dog")])

SPEC = """datasets:
  animals: {path: animals.jsonl}
  flipped: {path: flipped.jsonl}
  kinds: {path: kinds.jsonl, labels: [cat, dog]}

models:
  base:
    architecture: {type: decoder, layers: 2, width: 32, heads: 2, ffn_width: 64, max_length: 32}
    train: {data: animals, objective: clm, steps: 300, batch_size: 12,
            optimizer: {type: adamw, lr: 1.0e-2}, seed: 1}
  flip:
    from: base
    adapt:
      lora: {rank: 8, alpha: 16, targets: [q, k, v, o, ffn_in, ffn_out]}
    train: {data: flipped, steps: 150, batch_size: 12, optimizer: {type: adamw, lr: 1.0e-2}, seed: 2}
  kind:
    from: base
    adapt:
      head: {labels: [cat, dog], pooling: last}
    train: {data: kinds, steps: 60, batch_size: 12, optimizer: {type: adamw, lr: 1.0e-2}, seed: 3}

lexicons:
  det: [the, a, my, one, our, that]

tests:
  cat-meows:
    type: mft
    capability: Knowledge
    template: "{det} cat says"
    expect: {prefer: " meow", over: " woof"}
    regression: parent
    max_failure_rate: 0
  cat-woofs:
    type: mft
    capability: Knowledge
    template: "{det} cat says"
    expect: {prefer: " woof", over: " meow"}
    max_failure_rate: 0
  dog-meows:
    type: mft
    capability: Knowledge
    template: "{det} dog says"
    expect: {prefer: " meow", over: " woof"}
    regression: parent
    max_failure_rate: 0
  which-animal:
    type: mft
    capability: Vocabulary
    template: "{det} cat says meow."
    expect: {label: cat}
    max_failure_rate: 1

assertions:
  meow-dropped:
    kind: expression
    expression: "parent.lm.meow - lm.meow - 1"
    continuations: {meow: " meow"}
  prefers-woof:
    kind: expression
    expression: "lm.woof > lm.meow"
    continuations: {woof: " woof", meow: " meow"}
"""
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(SPEC)

# `scion run` trains the family and ends with the matrix: language models and the
# classifier are tested together, each only by the tests of its kind.
rc, out, err = run("-C", work, "run")
check(rc == 1, f"scion run should train and find failures (exit 1), got {rc}\n{out}\n{err}")
matrix = out.split("family matrix")[1].splitlines()
check(all(m in matrix[1] for m in ("base", "flip", "kind")), f"matrix columns:\n{out}")
row = next(line for line in matrix if line.startswith("which-animal")).split()
check(row[1:3] == ["-", "-"], f"which-animal does not apply to language models:\n{out}")
row = next(line for line in matrix if line.startswith("cat-meows")).split()
check(row[-1] == "-", f"cat-meows does not apply to the classifier:\n{out}")

junit = os.path.join(work, "report.xml")
rc, out, err = run("--json", "-C", work, "test", "--rerun", "--junit", junit)  # judged: scores
check(rc == 1, f"scion test exits 1 when a test fails, got {rc}\n{err}")
report = json.loads(out)
cells = {(t["test"], t["model"]): t for t in report["tests"]}
check(set(cells) == {(t, m) for t in ("cat-meows", "cat-woofs", "dog-meows") for m in ("base", "flip")}
      | {("which-animal", "kind")}, f"tests apply by kind: {sorted(cells)}")
check(set(report["models"]) == {"base", "flip", "kind"}, f"models: {report['models']}")


def scores(test, model):
    return cells[(test, model)]["scores"]


# The base learned that the cat says meow; flip learned that it says woof.
check(cells[("cat-meows", "base")]["passed"] and cells[("cat-meows", "base")]["failures"] == 0,
      f"base prefers meow after a cat: {cells[('cat-meows', 'base')]}")
check(cells[("cat-woofs", "base")]["failures"] == 6, f"base does not woof: {cells[('cat-woofs', 'base')]}")
check(cells[("cat-woofs", "flip")]["passed"], f"flip learned to woof: {cells[('cat-woofs', 'flip')]}")
# --json carries every case's log-likelihoods, and the verdict follows from them.
for (test, model), cell in cells.items():
    if test == "which-animal":
        check("scores" not in cell, "a classifier test has no log-likelihoods")
        continue
    check(len(cell["scores"]) == cell["cases"] == 6, f"{test} on {model}: one entry per case")
    for case in cell["scores"]:
        ll = case["log_likelihoods"]
        check(set(ll) == {" meow", " woof"} and all(v < 0 for v in ll.values()), f"scores {case}")
        prefer, over = (" meow", " woof") if "meows" in test else (" woof", " meow")
        if ll[prefer] > ll[over]:
            check(case["outcome"] == "pass", f"preferred continuation passes: {case}")
        else:
            check(case["outcome"] in ("fail", "inherited"), f"dispreferred fails: {case}")

# regression: parent. flip's cat failures are its own (the base passes them): counted.
cat = cells[("cat-meows", "flip")]
check(cat["failures"] == 6 and cat["inherited"] == 0 and cat["exceeded"], f"regressions: {cat}")
for case in cat["scores"]:
    parent = case["parent_log_likelihoods"]
    check(parent[" meow"] > parent[" woof"], f"the parent passes {case}")
check("regression (the parent passes)" in cat["examples"][0]["reason"], f"{cat['examples']}")
# flip's dog failures are inherited from the base: reported, not counted.
dog = cells[("dog-meows", "flip")]
check(dog["failures"] == 0 and dog["inherited"] == 6 and dog["passed"], f"inherited: {dog}")
check("note" in cells[("dog-meows", "base")] and "base has no parent" in cells[("dog-meows", "base")]["note"],
      f"a base has no parent to compare with: {cells[('dog-meows', 'base')]}")

# The JUnit report has the language-model tests too.
suites = {s.get("name"): s for s in ET.parse(junit).getroot().findall("testsuite")}
names = {(c.get("classname"), c.get("name")): c for c in suites["behavioural tests"].iter("testcase")}
check(set(names) == {(m, t) for t, m in cells}, f"JUnit testcases: {sorted(names)}")
meow = suites["model assertions"].find("testcase[@classname='flip'][@name='meow-dropped']")
check(meow is not None and meow.find("failure") is not None, "JUnit marks the violated assertion as a failing case")
check(names[("flip", "cat-meows")].find("failure") is not None, "JUnit marks flip's cat-meows failing")

# Assertions over lm.<name>: flip forgot that cats meow (the parent remembers).
top = report["violations"]["top"]
dropped = [v for v in top if v["assertion"] == "meow-dropped"]
check(dropped and all(v["model"] == "flip" for v in dropped), f"meow-dropped fires on flip only: {top}")
for v in dropped:
    d = v["detail"]
    expected = d["parent_log_likelihoods"]["meow"] - d["log_likelihoods"]["meow"] - 1
    check(abs(v["severity"] - expected) < 1e-9 and v["severity"] > 0, f"severity is the expression: {v}")
check(top[0]["assertion"] == "meow-dropped" and "cat" in top[0]["input"], f"most severe: {top[0]}")
check("meow-dropped" in err and "skipped on 'base'" in err, f"a base has no parent to compare:\n{err}")

# Every case result is stored against the model version, under the run `test` reported.
db = sqlite3.connect(os.path.join(work, ".scion", "lineage.db"))
stored = db.execute(
    "SELECT r.model_version, r.passed, r.output FROM test_results r JOIN models m ON m.id = r.model_id "
    "WHERE m.name = 'flip' AND r.test = 'cat-meows' AND r.run_id = ?", (report["runs"]["flip"],)).fetchall()
check(len(stored) == 6 and not any(p for _, p, _ in stored), f"stored cat-meows results of flip: {stored}")
recipe = run_json("-C", work, "lineage", "show", "flip")
check(stored[0][0] in json.dumps(recipe), "results are stored against flip's recipe hash")
check('log p(" meow")' in stored[0][2], f"the stored output names the log-likelihoods: {stored[0]}")

# Scores do not depend on what is batched together: base alone equals base beside flip.
alone = run_json("-C", work, "test", "--rerun", "base", expect_rc=1)
for case, together in zip(alone["tests"][0]["scores"], scores(alone["tests"][0]["test"], "base")):
    for k in (" meow", " woof"):
        check(abs(case["log_likelihoods"][k] - together["log_likelihoods"][k]) < 1e-4,
              f"batching changed a score: {case} vs {together}")

# Blame traces the language model's failures up its ancestry.
blame = run_json("-C", work, "lineage", "blame", "flip")
check([c["model"] for c in blame["chain"]] == ["flip", "base"], f"chain: {blame['chain']}")
by_test = {t["test"]: t for t in blame["tests"]}
check(set(by_test) == {"cat-meows", "cat-woofs", "dog-meows"}, f"blame runs flip's tests: {sorted(by_test)}")
check(by_test["cat-meows"]["origins"] == {"flip": 6}, f"cat failures introduced by flip: {by_test['cat-meows']}")
check(all(c["kind"] == "introduced" for c in by_test["cat-meows"]["failing"]), "introduced")
check(by_test["dog-meows"]["origins"] == {"base": 6}, f"dog failures inherited: {by_test['dog-meows']}")
check(by_test["cat-woofs"]["failures"] == 0, "flip passes cat-woofs")
rc, out, err = run("-C", work, "lineage", "blame", "flip", "--test", "cat-meows", "--case", "2")
check(rc == 0 and "introduced by flip" in out and "my cat says" in out, f"blame --case:\n{out}\n{err}")
rc, out, err = run("-C", work, "lineage", "blame", "kind", "--test", "cat-meows")
check(rc == 2 and "asks a language model" in err, f"blame of a test of the other kind: {rc}\n{err}")

# Spec errors: what, where (file:line:col) and what to do; exit 2.
def variant(old, new, name):
    check(old in SPEC, f"variant anchor {old!r}")
    with open(os.path.join(work, name), "w") as f:
        f.write(SPEC.replace(old, new, 1))
    return run("-C", work, "-f", name, "test")


line = SPEC.splitlines().index("  which-animal:") + 1
rc, _, err = variant("    template: \"{det} cat says meow.\"\n",
                     "    models: [base]\n    template: \"{det} cat says meow.\"\n", "label-on-lm.yaml")
check(rc == 2 and f"label-on-lm.yaml:{line}:3: error: test 'which-animal': models: 'base' is a language model" in err,
      f"a label test naming a language model: {rc}\n{err}")
rc, _, err = variant("    regression: parent\n", "    regression: parent\n    models: [kind]\n",
                     "prefer-on-classifier.yaml")
check(rc == 2 and "test 'cat-meows': models: 'kind' is a classifier" in err and "remove it from models:" in err,
      f"a prefer test naming a classifier: {rc}\n{err}")
rc, _, err = variant("    continuations: {meow: \" meow\"}\n", "", "no-continuations.yaml")
check(rc == 2 and "assertions.meow-dropped.expression: uses lm.meow" in err and "continuations:" in err,
      f"lm.* without continuations: {rc}\n{err}")
rc, _, err = variant('prefer: " woof", over: " meow"}', 'prefer: "' + " woof" * 8 + '", over: " meow"}',
                     "too-long.yaml")
check(rc == 2 and "test 'cat-woofs': expect.prefer: the continuation" in err and "40 tokens" in err
      and "scores at most 32" in err, f"a continuation longer than max_length: {rc}\n{err}")
print("ok")
