"""Usability defects a new user found (issue 12, section 4), end to end on tiny families:

- Ctrl-C says how to resume; the interrupted group is not reported as trained; `train
  --resume` continues without --force (also after an interrupted --force run); the step
  counts of the summary and of `lineage log` agree; `lineage tree` says "interrupted at
  step N, resumable";
- `lineage blame`: a case out of range is an error, a base's failures are its own, the
  report is a summary unless --all;
- an imported base: `plan` says it trains nothing, `tree` says "imported", and `adapt`
  before the import points to `scion import`;
- `predict`: truncation warned, empty texts refused, `--file -` and JSONL with --text-field;
- `prefer` tests score per token by default (`score: mean`), or in total (`score: sum`).
"""
import json
import os
import re
import shutil
import signal
import subprocess

from harness import EXAMPLES, SCION, check, run, run_json, temp_dir

DETERMINERS = ["the", "a", "my", "one", "our", "that"]
SOUNDS = {"cat": "meow", "dog": "woof", "cow": "moo", "duck": "quack"}


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def write_jsonl(path, rows):
    write(path, "".join(json.dumps(row) + "\n" for row in rows))


# ---- A language-model family: a decoder base that learned which sound each animal
# makes, and a classifier head on it (as in test_language_models.py).
ARCHITECTURE = "{type: decoder, layers: 2, width: 32, heads: 2, ffn_width: 64, max_length: 32}"
LM_SPEC = """datasets:
  animals: {path: animals.jsonl}
  kinds: {path: kinds.jsonl, labels: [cat, dog]}

models:
  base:
    architecture: %s
    train: {data: animals, objective: clm, steps: 300, batch_size: 12,
            optimizer: {type: adamw, lr: 1.0e-2}, seed: 1}
  kind:
    from: base
    adapt:
      head: {labels: [cat, dog], pooling: last}
    train: {data: kinds, steps: 40, batch_size: 12, optimizer: {type: adamw, lr: 1.0e-2}, seed: 3}

lexicons:
  det: [the, a, my, one, our, that]

tests:
  dog-meows:
    type: mft
    capability: Knowledge
    template: "{det} dog says"
    expect: {prefer: " meow", over: " woof"}
  long-by-mean:
    type: mft
    capability: Knowledge
    template: "{det} cat says"
    expect: {prefer: " meow. the cat says meow.", over: "X"}
  long-by-sum:
    type: mft
    capability: Knowledge
    template: "{det} cat says"
    expect: {prefer: " meow. the cat says meow.", over: "X", score: sum}
""" % ARCHITECTURE

lm = temp_dir()
write_jsonl(os.path.join(lm, "animals.jsonl"),
            [{"text": f"{d} {a} says {s}."} for d in DETERMINERS for a, s in SOUNDS.items()])
write_jsonl(os.path.join(lm, "kinds.jsonl"),
            [{"text": f"{d} {a} says {SOUNDS[a]}.", "label": a} for d in DETERMINERS for a in ("cat", "dog")])
write(os.path.join(lm, "scion.yaml"), LM_SPEC)
trained = run_json("-C", lm, "run")
check({m["status"] for m in trained["models"]} == {"trained"}, f"the family trains: {trained}")

# ---- blame: a case out of range is a usage error that says the range.
rc, out, err = run("-C", lm, "lineage", "blame", "base", "--test", "dog-meows", "--case", "999")
check(rc == 2 and "case 999 is out of range: test dog-meows has 6 cases (0–5)" in err,
      f"blame --case out of range: {rc}\n{out}\n{err}")
rc, out, err = run("-C", lm, "lineage", "blame", "base", "--case", "2", "--test", "dog-meows")
check(rc == 0 and "dog-meows/2" in out, f"a case in range is blamed: {rc}\n{out}\n{err}")

# A base has no ancestor: its failures are its own, never "inherited from" itself.
rc, out, err = run("-C", lm, "lineage", "blame", "base", "--test", "dog-meows")
check(rc == 0, f"blame base: {rc}\n{err}")
check("6 of 6 cases of dog-meows fail on base: 6 are its own (base is a base: it has no ancestor)" in out,
      f"a base's failures are its own:\n{out}")
check("inherited" not in out, f"nothing is inherited by a base:\n{out}")
blame = run_json("-C", lm, "lineage", "blame", "base", "--test", "dog-meows")
failing = blame["tests"][0]["failing"]
check(len(failing) == 6 and {f["kind"] for f in failing} == {"own"}, f"--json: own failures: {failing}")

# The text report is a summary: a few example cases per origin, --all for every one.
listed = [line for line in out.splitlines() if re.match(r"\s+dog-meows/\d+", line)]
check(len(listed) == 3 and "... and 3 more (--all lists every case)" in out, f"blame summarises:\n{out}")
rc, out, _ = run("-C", lm, "lineage", "blame", "base", "--test", "dog-meows", "--all")
listed = [line for line in out.splitlines() if re.match(r"\s+dog-meows/\d+", line)]
check(rc == 0 and len(listed) == 6 and "more" not in out, f"blame --all lists every case:\n{out}")

# ---- prefer: per-token scores by default, totals with score: sum. The verdicts follow
# from the log-likelihoods and token counts that --json reports. The base never saw text
# after "meow.", so the long continuation costs about 5 nats per token, about 120 in all;
# "X" (a byte it never saw) costs about 21.
PREFER, OVER = " meow. the cat says meow.", "X"
report = run_json("-C", lm, "test", "base", expect_rc=1)
cells = {t["test"]: t for t in report["tests"]}
for test, by_mean in (("long-by-mean", True), ("long-by-sum", False)):
    for case in cells[test]["scores"]:
        ll, tokens = case["log_likelihoods"], case["tokens"]
        check(tokens == {PREFER: len(PREFER), OVER: len(OVER)}, f"byte tokens per continuation: {case}")
        if by_mean:
            wins = ll[PREFER] / tokens[PREFER] > ll[OVER] / tokens[OVER]
        else:
            wins = ll[PREFER] > ll[OVER]
        check(case["outcome"] == ("pass" if wins else "fail"), f"{test}: the verdict follows its score: {case}")
check(cells["long-by-mean"]["failures"] == 0 and cells["long-by-sum"]["failures"] == 6,
      f"the longer continuation wins per token and loses in total: {cells['long-by-mean']} {cells['long-by-sum']}")

# ---- predict: where the texts come from, and what is refused.
long_text = "the cat says meow. " * 4  # 76 bytes; the classifier reads 30
rc, out, err = run("-C", lm, "predict", "kind", "--text", "the dog says woof.", "--text", long_text)
check(rc == 0 and len(out.splitlines()) == 2, f"predict two texts: {rc}\n{out}\n{err}")
check(f"--text 2 is {len(long_text)} tokens, longer than the model reads: 'kind' reads its first 30" in err,
      f"a truncated text is warned about:\n{err}")
check("--text 1" not in err, f"a short text is not:\n{err}")
rc, out, err = run("-C", lm, "predict", "kind", "--text", "")
check(rc == 2 and "--text 1: the text is empty" in err and out == "", f"an empty text is refused: {rc}\n{out}\n{err}")
rc, out, err = run("-C", lm, "--json", "predict", "kind", "--file", "-", stdin="the cat says meow.\n\nthe dog says woof.\n")
check(rc == 0, f"--file - reads standard input: {rc}\n{err}")
check([p["text"] for p in json.loads(out)["predictions"]] == ["the cat says meow.", "the dog says woof."],
      f"one prediction per line of standard input: {out}")
write_jsonl(os.path.join(lm, "reviews.jsonl"), [{"review": "the cat says meow.", "stars": 5},
                                                {"review": "the dog says woof.", "stars": 1}])
rc, out, err = run("-C", lm, "--json", "predict", "kind", "--file", "reviews.jsonl", "--text-field", "review")
check(rc == 0 and [p["text"] for p in json.loads(out)["predictions"]] == ["the cat says meow.", "the dog says woof."],
      f"JSONL with --text-field: {rc}\n{out}\n{err}")
rc, out, err = run("-C", lm, "predict", "kind", "--file", "reviews.jsonl")
check(rc == 2 and "reviews.jsonl:1: no field 'text' (the record has: review, stars)" in err,
      f"a JSONL record without the text field: {rc}\n{err}")
rc, out, err = run("-C", lm, "predict", "kind", "--file", "-", "--format", "jsonl", "--text-field", "review",
                   stdin='{"review": "the cat says meow."}\n')
check(rc == 0 and "the cat says meow." in out, f"JSONL on standard input: {rc}\n{out}\n{err}")

# ---- An imported base: the language model's base, exported, is imported by a new family.
imported = temp_dir()
rc, _, err = run("-C", lm, "export", "base", "-o", os.path.join(imported, "trunk.safetensors"))
check(rc == 0, f"export the base: {err}")
shutil.copy(os.path.join(lm, "kinds.jsonl"), imported)
write(os.path.join(imported, "scion.yaml"), """datasets:
  kinds: {path: kinds.jsonl, labels: [cat, dog]}
models:
  trunk:
    architecture: %s
    import: trunk.safetensors
  kind:
    from: trunk
    adapt:
      head: {labels: [cat, dog], pooling: last}
    train: {data: kinds, steps: 5, batch_size: 12, seed: 3}
""" % ARCHITECTURE)
rc, out, err = run("-C", imported, "plan")
trunk_lines = out.split("kind")[0]
check(rc == 0 and "imported: " in trunk_lines and "trains none" in trunk_lines and "100" not in trunk_lines,
      f"plan says an imported base trains nothing:\n{out}")
plan = {m["model"]: m for m in run_json("-C", imported, "plan")["models"]}
check(plan["trunk"]["parameters"]["trainable"] == 0 and plan["trunk"]["parameters"]["total"] > 0,
      f"plan --json: an imported base has no trainable parameters: {plan['trunk']}")
rc, _, err = run("-C", imported, "adapt", "kind")
check(rc == 2 and "needs its parent 'trunk' imported first: run `scion run` (it imports it), or "
      "`scion import" in err and "--as trunk" in err and "scion train" not in err,
      f"adapt before the import points to scion run and scion import: {rc}\n{err}")
rc, _, err = run("import", "trunk.safetensors", "--as", "trunk", cwd=imported)
check(rc == 0, f"import: {err}")
tree = {m["model"]: m for m in run_json("-C", imported, "lineage", "tree")["models"]}
check(tree["trunk"]["status"] == "imported", f"the tree says imported: {tree['trunk']}")
rc, out, _ = run("-C", imported, "lineage", "tree")
check(re.search(r"trunk +\[base\] +imported", out), f"the text tree says imported:\n{out}")

# ---- Ctrl-C and --resume on a tiny masked-LM base.
TINY = """datasets:
  corpus: {path: corpus.txt}
models:
  tiny:
    architecture: {type: encoder, layers: 1, width: 16, heads: 2, ffn_width: 32, max_length: 16}
    train: {data: corpus, objective: mlm, steps: 1000, batch_size: 2,
            optimizer: {type: adamw, lr: 1.0e-3}, seed: 5}
"""
tiny = temp_dir()
with open(os.path.join(EXAMPLES, "sentiment", "data", "reviews.jsonl")) as f:
    write(os.path.join(tiny, "corpus.txt"), "".join(json.loads(line)["text"] + "\n" for line in f))
write(os.path.join(tiny, "scion.yaml"), TINY)


def interrupted_train(*args):
    """Runs `scion -v train ARGS` in tiny and sends SIGINT a few steps in; returns
    (exit code, stdout, stderr)."""
    proc = subprocess.Popen([SCION, "-v", "train", *args], cwd=tiny, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stderr:  # -v prints every step
        seen.append(line)
        if re.search(r"step +20/", line):
            proc.send_signal(signal.SIGINT)
            break
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, "".join(seen) + err


def newest_run():
    return run_json("lineage", "log", "tiny", cwd=tiny)["runs"][0]


rc, out, err = interrupted_train()
check(rc == 130, f"Ctrl-C exits 130, got {rc}\n{out}\n{err}")
stopped = newest_run()["steps"]
check(stopped >= 20 and stopped < 1000, f"the run stopped between steps: {stopped}")
check(f"run the same command with --resume to continue from step {stopped}" in err,
      f"the Ctrl-C message says how to continue:\n{err}")
check("trained tiny" not in out and re.search(r"interrupted tiny after", out) and
      re.search(rf"tiny +interrupted +run \d+, {stopped} steps", out), f"the summary says interrupted:\n{out}")
tree = run_json("lineage", "tree", cwd=tiny)["models"][0]
check(tree["status"] == f"interrupted at step {stopped}, resumable" and tree["resumable"],
      f"the tree says where the run stopped: {tree}")

resumed = run_json("train", "--resume", cwd=tiny)
model = resumed["models"][0]
check(model["status"] == "trained" and model["resumed_from"] == stopped and model["steps"] == 1000,
      f"--resume continues from the checkpoint without --force: {resumed}")
logged = newest_run()
check(logged["status"] == "finished" and logged["steps"] == model["steps"],
      f"lineage log and the summary agree on the steps: {logged['steps']} vs {model['steps']}")
check(run_json("lineage", "tree", cwd=tiny)["models"][0]["status"] == "trained", "trained after resuming")

# An interrupted --force retraining leaves the model up to date with its earlier
# parameters; --resume still finishes the interrupted run.
rc, out, err = interrupted_train("--force")
check(rc == 130, f"Ctrl-C of --force exits 130, got {rc}\n{err}")
stopped = newest_run()["steps"]
resumed = run_json("train", "--resume", cwd=tiny)
model = resumed["models"][0]
check(model["status"] == "trained" and model["resumed_from"] == stopped,
      f"--resume finishes an interrupted --force run instead of saying up to date: {resumed}")
check(newest_run()["steps"] == model["steps"] == 1000, "the resumed run reached the last step")
check(os.listdir(os.path.join(tiny, ".scion", "checkpoints")) == [], "no checkpoint is left")
print("ok")
