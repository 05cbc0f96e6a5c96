"""Every version kept and reachable (issue 26): a recipe that comes back is restored, not
trained (for the model and its descendants), bit for bit; MODEL@N and MODEL@<hash> name any
stored version in every command that reads a model; `lineage log` shows recipe hashes and
what each version changed; tests are judged once per (version, test) and a no-op `run`
records no test run; co-batched groups report progress per step; `gc --keep N` keeps what
tags and recent spec versions name."""
import json
import os
import time

from harness import check, run, run_json, spec_workspace

SPEC = """datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
  critics: {path: data/critics.jsonl, labels: [negative, positive]}
models:
  base:
    architecture: {type: encoder, layers: 1, width: 32, heads: 2, ffn_width: 64, max_length: 48}
    train: {data: reviews, objective: classification, steps: 30, batch_size: 8, seed: 1}
  a:
    from: base
    adapt: {lora: {rank: 2, alpha: 4, targets: [q, v]}}
    train: {data: critics, steps: 20, batch_size: 8, seed: 2}
  b:
    from: base
    adapt: {prefix: {virtual_tokens: 2}}
    train: {data: critics, steps: 16, batch_size: 8, seed: 3}
  c:
    from: a
    adapt: {lora: {rank: 2, alpha: 4, targets: [k]}}
    train: {data: reviews, steps: 12, batch_size: 8, seed: 4}
lexicons:
  noun: [plot, film, movie]
  good: [great, wonderful, lovely]
tests:
  praise:
    type: mft
    capability: Vocabulary
    template: "the {noun} was {good}."
    expect: {label: positive}
    max_failure_rate: 0.1
  negation:
    type: mft
    capability: Negation
    template: "the {noun} was not {good}."
    expect: {label: negative}
    max_failure_rate: 0.2
assertions:
  praise-is-positive:
    kind: allowed_outputs
    pattern: "^the .* was (great|wonderful|lovely)\\\\.$"
    labels: [positive]
"""
TEXTS = ["the plot was great", "a dull film", "i loved it"]

work = spec_workspace(SPEC)
spec_path = os.path.join(work, "scion.yaml")


def runs():
    return run_json("lineage", "log", "--all", cwd=work)["runs"]


def predictions(*models):
    args = [arg for t in TEXTS for arg in ("--text", t)]
    return run_json("predict", *models, *args, cwd=work)["predictions"]


def edit(old, new):
    with open(spec_path) as f:
        text = f.read()
    check(old in text, f"the spec holds {old!r}")
    with open(spec_path, "w") as f:
        f.write(text.replace(old, new, 1))


# 1. First run: trains, co-batches a and b with one progress line per group step, tests.
rc, out, err = run("run", "-v", cwd=work)
check(rc in (0, 1), f"first run exited {rc}\n{err}")
check("group of 2 (2 running) step" in err and "tokens/s" in err and "ETA" in err,
      f"the co-batched group reports its steps:\n{err}")
group_lines = [line for line in err.splitlines() if "group of 2" in line]
check(len(group_lines) >= 16, f"one line per group step with -v: {len(group_lines)}")
rc, out, err = run("--json", "adapt", "--force", "a", "b", cwd=work)
events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
steps = [e for e in events if e["event"] == "group_step"]
check(rc == 0 and len(steps) == 20 and steps[-1]["step"] == 20 and steps[-1]["total_steps"] == 20
      and set(steps[-1]["losses"]) == {"a", "b"} and steps[-1]["tokens_per_second"] > 0
      and steps[1]["eta_s"] is not None, f"--json: one group_step event per step: {steps[-1:]}")
# The runs that made the versions: adapt --force reproduced a and b bit for bit, so their
# versions stay those of the first runs (a stored version is never rewritten).
first = {r["model"]: r for r in runs() if r["kind"] in ("train", "adapt")}  # oldest
check(all(v["run"] == first[m]["run"] for m in ("a", "b")
          for v in run_json("lineage", "versions", m, cwd=work)["versions"]),
      "a reproduced version keeps the run that made it")
tests_first = [r for r in runs() if r["kind"] == "test"]
check(len(tests_first) == 4 and all(r["cases"] and r["cases"] > 0 and r["duration_s"] > 0
                                    for r in tests_first),
      f"test runs record their cases and wall time: {tests_first}")
before = predictions("a", "c")

# 2. A no-op run trains nothing, judges nothing and records no run.
count = len(runs())
started = time.monotonic()
rc, out, err = run("run", cwd=work)
noop_seconds = time.monotonic() - started
check(rc in (0, 1) and "results read from the store" in out, f"no-op run:\n{out}\n{err}")
check(len(runs()) == count, f"a no-op run records no run: {len(runs())} != {count}")
print(f"no-op run: {noop_seconds:.2f} s")

# 3. max_failure_rate is applied when reporting: changing it re-judges nothing; a changed
#    template re-judges that test alone.
edit("max_failure_rate: 0.2", "max_failure_rate: 0.3")
rc, out, err = run("test", cwd=work)
check(rc in (0, 1) and len(runs()) == count, f"a changed max_failure_rate re-judged: {err}")
edit('template: "the {noun} was {good}."', 'template: "the {noun} was really {good}."')
rc, out, err = run("--json", "test", cwd=work)
report = json.loads(out)
new_runs = [r for r in runs() if r["kind"] == "test"][:4]
check(all(r["cases"] == 9 for r in new_runs), f"only praise (9 cases) judged again: {new_runs}")
reused = {(t["test"], t["model"]): t["reused"] for t in report["tests"]}
check(all(reused[("negation", m)] and not reused[("praise", m)] for m in ("base", "a", "b", "c")),
      f"negation read back, praise judged: {reused}")
rc, out, err = run("--json", "test", "--rerun", "a", cwd=work)
check(all(not t["reused"] for t in json.loads(out)["tests"]), "--rerun judges everything")

# 4. A changed recipe makes a and its descendant c new versions; log says what changed.
edit("lora: {rank: 2, alpha: 4, targets: [q, v]}", "lora: {rank: 2, alpha: 8, targets: [q, v]}")
states = {m["model"]: m["state"] for m in run_json("plan", cwd=work)["models"]}
check(states == {"base": "up to date", "a": "runs", "b": "up to date", "c": "runs"}, f"{states}")
rc, out, err = run("run", cwd=work)
check(rc in (0, 1), f"run after the change: {err}")
second = {r["model"]: r for r in reversed(runs()) if r["kind"] in ("train", "adapt")}  # newest
check(second["a"]["run"] != first["a"]["run"] and second["c"]["run"] != first["c"]["run"],
      "a and c trained again")
logged = next(r for r in run_json("lineage", "log", "a", cwd=work)["runs"] if r["run"] == second["a"]["run"])
check(logged["recipe_hash"] == second["a"]["recipe_hash"] and
      logged["changed"] == [{"field": "adapt.lora.alpha", "from": 4.0, "to": 8.0}],
      f"lineage log names the changed hyperparameter: {logged.get('changed')}")
rc, out, err = run("lineage", "log", "a", cwd=work)
check("changed adapt.lora.alpha 4.0 -> 8.0" in out and second["a"]["recipe_hash"][:12] in out,
      f"lineage log text:\n{out}")
rc, out, err = run("tag", "alpha8", cwd=work)
check(rc == 0, f"tag: {err}")

# 5. Reverting restores both versions: no training, no test run, the same predictions.
edit("lora: {rank: 2, alpha: 8, targets: [q, v]}", "lora: {rank: 2, alpha: 4, targets: [q, v]}")
plan = {m["model"]: m for m in run_json("plan", cwd=work)["models"]}
check(plan["a"]["state"] == "restores" and plan["a"]["restores_run"] == first["a"]["run"] and
      plan["c"]["state"] == "restores" and plan["c"]["restores_run"] == first["c"]["run"],
      f"plan restores a and c: {plan['a']}, {plan['c']}")
rc, out, err = run("plan", cwd=work)
check("restores: the version of run" in out and "(0 steps: no training)" in out, out)
count = len(runs())
started = time.monotonic()
rc, out, err = run("run", cwd=work)
revert_seconds = time.monotonic() - started
check(rc in (0, 1) and "restored" in out, f"revert run:\n{out}\n{err}")
added = runs()[:len(runs()) - count]
check(sorted((r["model"], r["kind"]) for r in added) == [("a", "restore"), ("c", "restore")],
      f"a revert records two restore runs and nothing else: {added}")
check(predictions("a", "c") == before, "the restored versions predict bit for bit as before")
print(f"revert run: {revert_seconds:.2f} s")

# 6. Versions and how every command names them.
versions = run_json("lineage", "versions", "a", cwd=work)["versions"]
restore_of_a = next(r["run"] for r in added if r["model"] == "a")
check([v["run"] for v in versions] == [second["a"]["run"], first["a"]["run"]] and
      versions[1]["current"] and versions[0]["restored_by"] == [] and
      versions[1]["restored_by"] == [restore_of_a], f"lineage versions: {versions}")
old = f"a@{second['a']['run']}"
prefix = "a@" + second["a"]["recipe_hash"][:8]
diff = run_json("lineage", "diff", old, "a", cwd=work)
check({"field": "adaptation.lora.alpha", "a": 8.0, "b": 4.0} in diff["recipe"] and diff["differ"],
      f"diff of the old version: {diff}")
by_prefix = run_json("lineage", "diff", prefix, "a", cwd=work)
check({**by_prefix, "models": None} == {**diff, "models": None}, "a hash prefix names it too")
show = run_json("lineage", "show", old, cwd=work)
check(show["current"] is False and show["ancestry"][0]["recipe_hash"] == second["a"]["recipe_hash"],
      f"show of the old version: {show['ancestry'][0]}")
rc, _, err = run("lineage", "show", "a@999", cwd=work)
check(rc == 2 and "has no run 999" in err and "a@" in err, f"an unknown run: {rc} {err}")
rc, _, err = run("lineage", "show", "a@xyz", cwd=work)
check(rc == 2 and "neither a run number nor a recipe hash prefix" in err, f"{rc} {err}")
older = predictions(old, "c@" + str(second["c"]["run"]))
check(older != before and [p["model"] for p in older[:2]] == [old, "c@" + str(second["c"]["run"])],
      f"the older versions run: {older}")
evaluated = run_json("eval", old, "a", "--data", "critics", cwd=work)["results"]
check([r["model_version"] for r in evaluated] == [second["a"]["recipe_hash"], first["a"]["recipe_hash"]],
      f"eval of two versions: {evaluated}")
exported = os.path.join(work, "old.safetensors")
rc, _, err = run("export", old, "-o", exported, cwd=work)
with open(exported, "rb") as f:
    raw = f.read()
meta = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])["__metadata__"]
check(rc == 0 and meta["scion.recipe_hash"] == second["a"]["recipe_hash"], f"export: {err} {meta}")
rc, out, err = run("--json", "lineage", "blame", f"c@{second['c']['run']}", cwd=work)
check(rc == 0 and json.loads(out)["model"] == "c", f"blame of an older version: {rc} {err}")
compared = run_json("test", "--compare", old, "a", cwd=work)
check(compared["compared"] > 0, f"test --compare of two versions: {compared}")
rc, out, err = run("report", "-o", os.path.join(work, "old.html"), old, cwd=work)
check(rc == 0, f"report of an older version: {err}")

# 7. gc: every version kept without --keep; a tag keeps its versions; untagged, they go.
gc = run_json("gc", "--keep", "0", "--dry-run", cwd=work)
check(gc["removed_versions"] == [], f"the tagged versions are kept: {gc['removed_versions']}")
rc, _, err = run("tag", "--delete", "alpha8", cwd=work)
check(rc == 0, err)
check(run_json("gc", cwd=work)["removed_versions"] == [], "plain gc keeps every version")
# The spec edited back to alpha 8 and not run yet: gc keeps the versions `run` would restore,
# and `tag` names that spec version, stored though not current (issue 37, item 10).
edit("lora: {rank: 2, alpha: 4, targets: [q, v]}", "lora: {rank: 2, alpha: 8, targets: [q, v]}")
states = {m["model"]: m["state"] for m in run_json("plan", cwd=work)["models"]}
check(states["a"] == "restores" and states["c"] == "restores", f"plan restores alpha 8: {states}")
gc = run_json("gc", "--keep", "0", cwd=work)
check(gc["removed_versions"] == [], f"gc keeps what the spec on disk names: {gc['removed_versions']}")
rc, _, err = run("tag", "back-to-8", cwd=work)
check(rc == 0, f"tag a spec whose versions are stored but not current: {rc} {err}")
rc, _, err = run("tag", "--delete", "back-to-8", cwd=work)
check(rc == 0, err)
edit("lora: {rank: 2, alpha: 8, targets: [q, v]}", "lora: {rank: 2, alpha: 4, targets: [q, v]}")
gc = run_json("gc", "--keep", "0", cwd=work)
check(sorted((v["model"], v["run"]) for v in gc["removed_versions"]) ==
      [("a", second["a"]["run"]), ("c", second["c"]["run"])] and gc["removed_objects"],
      f"gc --keep 0 removes the untagged, not current versions: {gc}")
check(len(run_json("lineage", "versions", "a", cwd=work)["versions"]) == 1, "one version left")
rc, out, err = run("fsck", cwd=work)
check(rc == 0, f"fsck after gc: {out}{err}")
check(predictions("a", "c") == before, "the current versions survive gc")
print("ok: versions restored, named, compared and collected")
