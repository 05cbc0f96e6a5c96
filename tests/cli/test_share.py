"""Shared modules (`share`) end to end: the unit trains as one co-batched group, its members
are stored with one value of each shared tensor, a change to one member retrains the unit,
and an interrupted unit resumes to exactly the parameters of an uninterrupted run."""
import json
import os
import re
import signal
import subprocess

from harness import SCION, check, exported_tensor_bytes, run, run_json, spec_workspace

SPEC = """datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
  critics: {path: data/critics.jsonl, labels: [negative, positive]}
models:
  base:
    architecture: {type: encoder, layers: 1, width: 32, heads: 2, ffn_width: 64, max_length: 48}
    train: {data: reviews, objective: classification, steps: 30, batch_size: 8, seed: 1}
  a:
    from: base
    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}
    train: {data: reviews, steps: 40, batch_size: 8, seed: 2}
  b:
    from: base
    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}
    train: {data: critics, steps: 25, batch_size: 8, seed: 3}
  c:
    from: base
    adapt: {prefix: {virtual_tokens: 4}, head: {}}
    train: {data: critics, steps: 30, batch_size: 8, seed: 4}
share:
  tasks: {models: [a, b], modules: ['head.$model.*', 'blk.*.attn_q.lora.$model.*']}
"""


def workspace(spec=SPEC):
    return spec_workspace(spec)


def statuses(result):
    return {m["model"]: m["status"] for m in result["models"]}


work = workspace()
rc, out, err = run("plan", cwd=work)
check(rc == 0 and "(share 'tasks': trained together)" in out, f"plan names the unit:\n{out}{err}")
plan = run_json("plan", cwd=work)
unit = [g for g in plan["training_groups"] if "a" in g["models"]]
check(unit and "b" in unit[0]["models"] and unit[0]["shares"] == ["tasks"],
      f"a and b are planned in one group: {plan['training_groups']}")

first = run_json("run", cwd=work)
check(set(statuses(first).values()) == {"trained"}, f"everything trains: {first}")
uptodate = run_json("plan", cwd=work)
check({m["state"] for m in uptodate["models"]} == {"up to date"} and uptodate["training_groups"] == [],
      f"after run, the plan has nothing to train: {uptodate}")
check(any({"a", "b"} <= set(g["models"]) for g in first["groups"]), f"a and b train together: {first}")

# One value of every shared tensor: a and b hold the same digests for them, and only them.
show = run_json("lineage", "show", "a", cwd=work)
check(show["shares"].get("b") == 22 + 4,
      f"a shares the trunk (22 tensors) and head + q LoRA (4) with b: {show['shares']}")
check(show["shares"].get("c") == 22, f"a shares only the trunk with c: {show['shares']}")

# A change to one member's recipe puts the whole unit out of date, and nothing else.
with open(os.path.join(work, "scion.yaml")) as f:
    spec = f.read()
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(spec.replace("seed: 3", "seed: 30"))
# The plan reads the store: after the change only the unit runs (a unit's recipe hashes
# cover every member's recipe), for the reason given.
replan = run_json("plan", cwd=work)
states = {m["model"]: (m["state"], m["reason"]) for m in replan["models"]}
check(states["base"] == ("up to date", "stored") and states["c"][0] == "up to date"
      and states["a"] == states["b"] == ("runs", "its recipe changed"),
      f"plan after b's recipe changed: {states}")
check([g["models"] for g in replan["training_groups"]] == [["a", "b"]] and replan["store"]["exists"],
      f"the plan trains the unit alone: {replan['training_groups']}")
second = run_json("run", cwd=work)
check(statuses(second) == {"base": "up to date", "c": "up to date", "a": "trained", "b": "trained"},
      f"b's new seed retrains a and b only: {statuses(second)}")

# Asking for one member trains its partners too, and says so.
rc, out, err = run("adapt", "b", "--force", cwd=work)
check(rc == 0 and "'a' trains too: it shares modules with 'b'" in err, f"adapt b brings a:\n{err}")

# Ctrl-C while a trains on after b finished: the unit resumes as one, exactly.
straight = workspace()
run_json("run", cwd=straight)
interrupted = workspace()
proc = subprocess.Popen([SCION, "-v", "run"], cwd=interrupted, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
for line in proc.stderr:  # -v prints every step; b stopped at 25, stop a at 30
    if re.search(r"^\s+a\s+step\s+30/", line):
        proc.send_signal(signal.SIGINT)
        break
proc.communicate(timeout=120)
check(proc.returncode == 130, f"the run was interrupted, exit {proc.returncode}")
log = run_json("lineage", "log", cwd=interrupted)
ended = {r["model"]: r["status"] for r in log["runs"]}
check(ended.get("b") == "interrupted",
      f"b finished its steps but is stored only with a, so its run is interrupted too: {ended}")
rc, out, err = run("--json", "run", "--resume", cwd=interrupted)
# With --json the progress is JSON events (docs/json.md).
check(rc == 0 and '{"event":"resuming","model":"a","step":30}' in err
      and '{"event":"resuming","model":"b","step":25}' in err,
      f"--resume continues both members from their checkpoints:\n{err}")
resumed = json.loads(out)
check(statuses(resumed)["a"] == "trained" and statuses(resumed)["b"] == "trained", f"{resumed}")
for model in ("a", "b"):
    check(exported_tensor_bytes(straight, model) == exported_tensor_bytes(interrupted, model),
          f"{model}: an interrupted and resumed unit ends as an uninterrupted one")
rc, _, err = run("fsck", cwd=interrupted)
check(rc == 0, f"fsck passes: {err}")
print("ok")
