"""History stays readable (issue 12, part 3): `lineage show`/`diff` give the training
recipe in the spec's words after test runs, runs of killed processes become abandoned,
stale checkpoints are noted by fsck and removed by gc, --resume after a recipe edit
starts over and says why, damaged checkpoints and stores are reported clearly, a model
whose objects are gone is retrained, a read-only store stays readable, and a file size
limit ends training with exit 3 and a consistent store."""
import calendar
import glob
import json
import os
import resource
import shutil
import signal
import sqlite3
import struct
import subprocess
import time

from harness import EXAMPLES, SCION, check, edit_spec, run, run_json, temp_dir

SPEC = """datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
models:
  base:
    architecture: {type: encoder, layers: 1, width: 64, heads: 2, ffn_width: 64, max_length: 32}
    train:
      data: reviews
      objective: classification
      steps: STEPS
      batch_size: 8
      validation_split: 0.1
      optimizer: {type: adamw, lr: 1.0e-3, betas: [0.9, 0.999]}
      schedule: {type: cosine, warmup_steps: 2}
      seed: 4
  child:
    from: base
    adapt:
      lora: {rank: 2, alpha: 4, targets: [q, v]}
    train: {data: reviews, steps: 6, batch_size: 8, optimizer: {type: sgd, lr: 2.0e-3, momentum: 0.9}, seed: 5}
lexicons:
  adj: [great, lovely]
tests:
  praise:
    type: mft
    capability: Vocabulary
    template: "it was {adj}."
    expect: {label: positive}
    max_failure_rate: 1.0
"""


def workspace(steps=12):
    work = temp_dir()
    os.makedirs(os.path.join(work, "data"))
    shutil.copy(os.path.join(EXAMPLES, "sentiment", "data", "reviews.jsonl"), os.path.join(work, "data"))
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(SPEC.replace("STEPS", str(steps)))
    return work


def db(work):
    return sqlite3.connect(os.path.join(work, ".scion", "lineage.db"))


def copy_of(work):
    copy = os.path.join(temp_dir(), "copy")
    shutil.copytree(work, copy)
    return copy


def wait_for_running_run(work, proc, timeout=120):
    """Waits until `proc` has recorded a running run with a few metrics."""
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            check(False, f"training ended early: {proc.communicate()}")
        if os.path.exists(os.path.join(work, ".scion", "lineage.db")):
            try:
                with db(work) as conn:
                    rows = conn.execute("SELECT count(*) FROM runs r JOIN run_metrics m ON m.run_id = r.id "
                                        "WHERE r.status = 'running'").fetchone()[0]
                if rows >= 3:
                    return
            except sqlite3.OperationalError:
                pass
        time.sleep(0.5)
    check(False, "training never got going")


# ---- lineage show / diff after test runs ------------------------------------------------
work = workspace()
rc, _, err = run("run", cwd=work)
check(rc == 0, f"run trains and tests the family: {err}")
rc, _, err = run("test", "--rerun", cwd=work)  # judged again: the newest finished run is a test run
check(rc == 0, f"test: {err}")

show = run_json("lineage", "show", "base", cwd=work)
base = show["ancestry"][0]
training = base["training"]
check(training.get("objective") == "classification" and training["optimizer"]["type"] == "adamw"
      and training["schedule"]["type"] == "cosine", f"enums in the spec's words: {training}")
check(training["optimizer"]["lr"] == 0.001 and training["optimizer"]["betas"] == [0.9, 0.999]
      and training["validation_split"] == 0.1, f"floats as written in the spec: {training}")
check(training["seed"] == 4 and training["steps"] == 12, f"integers: {training}")
check(all(r["kind"] != "test" for r in show["runs"]) and len(show["test_runs"]) == 2
      and all(r["kind"] == "test" for r in show["test_runs"]), f"test runs listed apart: {show}")
check(base["recipe_run"] == show["runs"][0]["run"] and show["runs"][0]["kind"] == "train",
      f"the recipe comes from the training run: {base['recipe_run']} {show['runs']}")
rc, out, err = run("lineage", "show", "base", cwd=work)
check(rc == 0 and "type: adamw" in out and "lr: 0.001" in out and "betas: [0.9, 0.999]" in out
      and "0.89999" not in out and "test runs (newest first):" in out, f"show's text:\n{out}{err}")

diff = run_json("lineage", "diff", "base", "child", cwd=work)
fields = {d["field"]: (d["a"], d["b"]) for d in diff["recipe"]}
check(fields.get("training.optimizer.type") == ("adamw", "sgd"), f"diff in the spec's words: {fields}")
check(fields.get("training.optimizer.lr") == (0.001, 0.002), f"diff of floats as written: {fields}")
rc, out, _ = run("lineage", "diff", "base", "child", cwd=work)
check("training.optimizer.type: adamw -> sgd" in out, f"diff's text:\n{out}")

# ---- fsck: what the store alone and the spec can tell --------------------------------------
rc, out, err = run("fsck", cwd=work)
check(rc == 0, f"fsck passes a trained family: {out}{err}")

damaged = copy_of(work)
with db(damaged) as conn:
    conn.execute("DELETE FROM version_parameters WHERE version_id = "
                 "(SELECT version_id FROM models WHERE name = 'child') "
                 "AND name = (SELECT min(p.name) FROM parameters p JOIN models m ON m.id = p.model_id "
                 "WHERE m.name = 'child' AND p.introduced_by = 'child')")
rc, out, _ = run("fsck", cwd=damaged)
check(rc == 1 and "model 'child'" in out and "lacks 1 parameter(s) its spec defines" in out,
      f"fsck names a parameter the spec defines but the store lacks: {rc}\n{out}")

damaged = copy_of(work)
with db(damaged) as conn:
    conn.execute("UPDATE models SET parent_id = id WHERE name = 'base'")
rc, out, _ = run("fsck", cwd=damaged)
check(rc == 1 and "cycle (base -> base)" in out, f"fsck finds a model that is its own parent: {out}")

damaged = copy_of(work)
with db(damaged) as conn:
    conn.execute("DROP TABLE assertion_violations")
rc, out, _ = run("fsck", cwd=damaged)
check(rc == 1 and "table assertion_violations: is missing from the schema" in out,
      f"fsck finds a dropped table: {out}")

# A model whose object file is gone is not up to date: run says so and trains it again.
damaged = copy_of(work)
files = glob.glob(os.path.join(damaged, ".scion", "objects", "*", "*"))
check(len(files) >= 1, f"the family has object files: {files}")
for path in files:
    os.remove(path)
rc, out, _ = run("fsck", cwd=damaged)
check(rc == 1, "fsck reports the missing objects")
rc, out, err = run("--json", "run", cwd=damaged)
check(rc == 0, f"run retrains: {err}")
check("'base' is not up to date" in err and "stored objects are missing" in err,
      f"run says which model lost objects: {err}")
statuses = {m["model"]: m["status"] for m in json.loads(out)["models"]}
check(statuses.get("base") == "trained", f"base trains again: {statuses}")
rc, out, err = run("fsck", cwd=damaged)
check(rc == 0, f"fsck passes after retraining: {out}{err}")

# ---- a read-only store stays readable --------------------------------------------------------
readonly_root = temp_dir()
os.chmod(readonly_root, 0o755)
readonly = os.path.join(readonly_root, "ro")
shutil.copytree(work, readonly)
for root, dirs, names in os.walk(readonly):
    for d in dirs:
        os.chmod(os.path.join(root, d), 0o555)
    for n in names:
        os.chmod(os.path.join(root, n), 0o444)
os.chmod(readonly, 0o555)
as_other_user = {"user": 65534, "group": 65534, "extra_groups": []} if os.geteuid() == 0 else {}


def run_read_only(*args):
    proc = subprocess.run([SCION, *args], cwd=readonly, capture_output=True, text=True, timeout=300,
                          **as_other_user)
    return proc.returncode, proc.stdout, proc.stderr


for command in (["lineage", "show", "base"], ["lineage", "log"], ["lineage", "tree"],
                ["lineage", "diff", "base", "child"], ["fsck"], ["predict", "child", "--text", "great"],
                ["test", "--no-record"]):
    rc, out, err = run_read_only(*command)
    check(rc == 0, f"{' '.join(command)} reads a read-only store: {rc}\n{out}{err}")
exports = temp_dir()
os.chmod(exports, 0o777)
rc, out, err = run_read_only("export", "child", "-o", os.path.join(exports, "child.safetensors"))
check(rc == 0 and os.path.getsize(os.path.join(exports, "child.safetensors")) > 0,
      f"export reads a read-only store: {rc}\n{out}{err}")
rc, _, err = run_read_only("test", "--rerun")  # something to record
check(rc == 3 and "lineage.db" in err, f"recording into a read-only store fails clearly: {rc} {err}")

# ---- kill -9 leaves an abandoned run, not one running forever -------------------------------
killed = workspace(steps=100000)
proc = subprocess.Popen([SCION, "train"], cwd=killed, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wait_for_running_run(killed, proc)
proc.send_signal(signal.SIGKILL)
proc.wait()
log = run_json("lineage", "log", cwd=killed)
check(log["runs"][0]["status"] == "running", f"a reader leaves the run alone: {log['runs'][0]}")
rc, _, err = run("gc", cwd=killed)
check(rc == 0 and "marked abandoned" in err, f"a writing command notes the abandoned run: {err}")
run_record = run_json("lineage", "log", cwd=killed)["runs"][0]
check(run_record["status"] == "abandoned" and run_record["pid"] == proc.pid
      and f"pid {proc.pid}" in run_record["message"], f"the run is abandoned: {run_record}")
rc, out, err = run("fsck", cwd=killed)
check(rc == 0, f"fsck passes after kill -9: {out}{err}")

# ---- checkpoints: damaged, stale after a recipe edit, removed by gc ---------------------------
stopped = workspace(steps=100000)
proc = subprocess.Popen([SCION, "train"], cwd=stopped, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wait_for_running_run(stopped, proc)
proc.send_signal(signal.SIGINT)
_, err = proc.communicate(timeout=120)
check(proc.returncode == 130, f"Ctrl-C: {proc.returncode} {err}")
checkpoints = glob.glob(os.path.join(stopped, ".scion", "checkpoints", "*"))
check(len(checkpoints) == 1, f"one checkpoint: {checkpoints}")
checkpoint = checkpoints[0]
rc, out, _ = run("--json", "fsck", cwd=stopped)
check(rc == 0 and not any("checkpoint" in n["subject"] for n in json.loads(out)["notes"]),
      f"a resumable checkpoint is no finding: {out}")
gc = run_json("gc", cwd=stopped)
check(gc["removed_checkpoints"] == [] and os.path.exists(checkpoint), f"gc keeps a resumable checkpoint: {gc}")


def rewrite_metadata(path, **changes):
    with open(path, "rb") as f:
        data = f.read()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    header["__metadata__"].update(changes)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data[8 + length:])
    return data


original = rewrite_metadata(checkpoint, step="x1")
rc, _, err = run("train", "--resume", cwd=stopped)
check(rc == 3 and "is damaged" in err and "'step' is 'x1'" in err and "internal error" not in err,
      f"a damaged checkpoint is a clear error: {rc} {err}")
with open(checkpoint, "wb") as f:
    f.write(original)

edit_spec(stopped, "steps: 100000", "steps: 5")
rc, out, _ = run("--json", "fsck", cwd=stopped)
notes = [n for n in json.loads(out)["notes"] if "checkpoint" in n["subject"]]
check(rc == 0 and len(notes) == 1 and "recipe of 'base' changed" in notes[0]["message"],
      f"fsck notes the stale checkpoint: {out}")
rc, _, err = run("train", "--resume", cwd=stopped)
check(rc == 0 and "'base' starts over instead of resuming: the recipe of 'base' changed" in err,
      f"--resume after a recipe edit says it starts over and why: {rc} {err}")
gc = run_json("gc", cwd=stopped)
check([os.path.basename(c["path"]) for c in gc["removed_checkpoints"]] == [os.path.basename(checkpoint)]
      and not os.path.exists(checkpoint),
      f"gc removes the checkpoint of the old recipe: {gc}")

# A checkpoint of the recipe whose parameters are stored after it was written (its job
# finished) is stale too.
with db(stopped) as conn:
    stored_recipe, made = conn.execute(
        "SELECT v.recipe_hash, v.created_at FROM models m JOIN versions v ON v.id = m.version_id "
        "WHERE m.name = 'base'").fetchone()
made = calendar.timegm(time.strptime(made[:19], "%Y-%m-%dT%H:%M:%S"))
with open(checkpoint, "wb") as f:
    f.write(original)
rewrite_metadata(checkpoint, recipe_hash=stored_recipe)
os.utime(checkpoint, (made - 60, made - 60))
gc = run_json("gc", cwd=stopped)
check(len(gc["removed_checkpoints"]) == 1 and "finished training" in gc["removed_checkpoints"][0]["reason"],
      f"gc removes the checkpoint of an up-to-date model: {gc}")

# One written after that version is a later run of the same recipe (`run --force`, stopped),
# which said to --resume it: gc keeps it and fsck finds nothing (issue 37, item 9).
with open(checkpoint, "wb") as f:
    f.write(original)
rewrite_metadata(checkpoint, recipe_hash=stored_recipe)
os.utime(checkpoint, (made + 60, made + 60))
gc = run_json("gc", "--keep", "0", cwd=stopped)
check(gc["removed_checkpoints"] == [] and os.path.exists(checkpoint),
      f"gc keeps the checkpoint of an interrupted --force run: {gc}")
rc, out, _ = run("--json", "fsck", cwd=stopped)
check(rc == 0 and not any("checkpoint" in n["subject"] for n in json.loads(out)["notes"]),
      f"the checkpoint of an interrupted --force run is no finding: {out}")
os.remove(checkpoint)

# ---- a file size limit ends training with exit 3, the store consistent ------------------------
limited = workspace(steps=40)
rc, _, err = run("train", "base", cwd=limited)
check(rc == 0, f"train: {err}")
edit_spec(limited, "seed: 4", "seed: 40")
LIMIT = 60000


def small_files():
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


proc = subprocess.run([SCION, "train", "base"], cwd=limited, capture_output=True, text=True, timeout=300,
                      preexec_fn=small_files)
check(proc.returncode == 3, f"a file size limit exits 3, got {proc.returncode}: {proc.stderr}")
check(f"file size limit (ulimit -f) is {LIMIT} bytes" in proc.stderr
      and (".scion" in proc.stderr), f"the message names the file and the limit: {proc.stderr}")
rc, out, err = run("fsck", cwd=limited)
check(rc == 0, f"fsck passes after hitting the file size limit: {out}{err}")
print("ok")
