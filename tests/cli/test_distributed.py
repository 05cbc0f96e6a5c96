"""Data parallelism over MPI (docs/distributed.md): `mpirun -np N scion run` with 1, 2 and
3 ranks stores the parameters single-process training gives, within float tolerance, for
a mixed family (full training, LoRA, prefix, prompt, bottleneck, BitFit, heads, a `share`
unit, an odd batch size so that the ranks' row counts differ). Only rank 0 writes the
store. A rank that fails stops every rank with its error (exit 3), and a killed rank ends
the job with the store consistent. With dropout on, 2 ranks draw the masks one process
draws. Task parallelism (`--parallel task`) on a family of two trunks stores exactly one
process's tensors, and `scion test`, `scion eval` and `scion run`'s tests, sharded over 2
and 3 ranks, print and store what one process does. Skips (77) without mpirun or
without MPI in the build."""
import json
import os
import re
import signal
import sqlite3
import struct
import subprocess
import time

from harness import SCION, check, run, run_json, spec_workspace
from mpi_support import (MPI_ENV, MPI_OPTIONS, TWO_TRUNKS_MODELS, TWO_TRUNKS_SPEC, require_mpirun,
                         stored_tensors)

MPIRUN = require_mpirun()

SPEC = """datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
  critics: {path: data/critics.jsonl, labels: [negative, positive]}
models:
  base:
    architecture: {type: encoder, layers: 2, width: 32, heads: 2, ffn_width: 64, max_length: 48}
    train: {data: reviews, objective: classification, steps: 6, batch_size: 7, seed: 1}
  lora-a:
    from: base
    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}
    train: {data: reviews, steps: 5, batch_size: 7, seed: 2}
  lora-b:
    from: base
    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}
    train: {data: critics, steps: 5, batch_size: 7, seed: 3}
  prefix:
    from: base
    adapt: {prefix: {virtual_tokens: 3}, head: {}}
    train: {data: critics, steps: 4, batch_size: 5, seed: 4, grad_accumulation: 2}
  prompt:
    from: base
    adapt: {prompt: {virtual_tokens: 2}, head: {}}
    train: {data: reviews, steps: 4, batch_size: 2, seed: 5, max_length: 46}
  bottleneck:
    from: base
    adapt: {bottleneck: {reduction: 8}, head: {}}
    train: {data: reviews, steps: 4, batch_size: 7, seed: 6}
  bitfit:
    from: base
    adapt: {bitfit: true, head: {}}
    train: {data: critics, steps: 3, batch_size: 7, seed: 7}
share:
  tasks: {models: [lora-a, lora-b], modules: ['head.$model.*', 'blk.*.attn_q.lora.$model.*']}
"""
MODELS = ["base", "lora-a", "lora-b", "prefix", "prompt", "bottleneck", "bitfit"]


def workspace(spec=SPEC):
    return spec_workspace(spec)


def mpirun(ranks, *args, cwd, timeout=600):
    command = [MPIRUN, "-np", str(ranks), *MPI_OPTIONS, SCION, *args]
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=MPI_ENV)
    return proc.returncode, proc.stdout.replace("\r\n", "\n"), proc.stderr  # (a terminal's line ends)


def tensors(work, model):
    """name -> list of floats."""
    out = {}
    for name, (dtype, raw) in stored_tensors(work, model).items():
        check(dtype == "F32", f"{model}.{name} is {dtype}")
        out[name] = struct.unpack(f"<{len(raw) // 4}f", raw)
    return out


def compare(reference, work, label, models=MODELS):
    worst = 0.0
    for model in models:
        want, got = reference[model], tensors(work, model)
        check(want.keys() == got.keys(), f"{label}: {model} stores other tensors")
        for name in want:
            for a, b in zip(want[name], got[name]):
                # Summing the ranks' partial gradients adds in another order than one
                # process does: rounding of about 1e-7 relative per step, which AdamW's
                # normalised steps (lr 1e-3 scale) keep far below this bound.
                diff = abs(a - b) / max(1.0, abs(a))
                worst = max(worst, diff)
                check(diff <= 2e-4, f"{label}: {model} {name} differs: {a} vs {b}")
    print(f"{label}: largest relative difference {worst:.2e}")


single = workspace()
result = run_json("run", cwd=single)
check({m["status"] for m in result["models"]} == {"trained"}, f"single process trains all: {result}")
reference = {model: tensors(single, model) for model in MODELS}

for ranks in (1, 2, 3):
    work = workspace()
    rc, out, err = mpirun(ranks, "--json", "run", cwd=work)
    check(rc == 0, f"mpirun -np {ranks} scion run exited {rc}:\n{out}\n{err}")
    summary = json.loads(out)  # rank 0 alone prints the summary
    check({m["status"] for m in summary["models"]} == {"trained"}, f"{ranks} ranks: {summary}")
    compare(reference, work, f"{ranks} ranks")
    # One run per model: rank 0 alone records them.
    log = run_json("lineage", "log", cwd=work)
    runs = log["runs"] if isinstance(log, dict) else log
    check(len(runs) == len(MODELS), f"{ranks} ranks record one run per model: {len(runs)} runs")
    rc, out, err = run("fsck", cwd=work)
    check(rc == 0, f"{ranks} ranks leave a consistent store: {out}{err}")

# Dropout: a rank draws the masks one process draws for the same rows of the batch
# (Segment::first_row), so 2 ranks agree with one process with dropout on too.
DROPOUT_SPEC = """datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
models:
  base:
    architecture: {type: encoder, layers: 2, width: 32, heads: 2, ffn_width: 64, max_length: 48,
                   dropout: 0.1}
    train: {data: reviews, objective: classification, steps: 6, batch_size: 7, seed: 1}
  lora-a:
    from: base
    adapt: {lora: {rank: 2, targets: [q, v], dropout: 0.1}, head: {}}
    train: {data: reviews, steps: 5, batch_size: 7, seed: 2}
"""
single = workspace(DROPOUT_SPEC)
result = run_json("run", cwd=single)
check({m["status"] for m in result["models"]} == {"trained"}, f"single process, dropout: {result}")
reference = {model: tensors(single, model) for model in ["base", "lora-a"]}
work = workspace(DROPOUT_SPEC)
rc, out, err = mpirun(2, "--json", "run", cwd=work)
check(rc == 0, f"mpirun -np 2 scion run with dropout exited {rc}:\n{out}\n{err}")
compare(reference, work, "2 ranks, dropout", models=["base", "lora-a"])

# A rank that fails: a file size limit on rank 0 alone (which alone writes the store)
# fails its store writes; every rank stops with that error, exit 3, and the store stays
# consistent.
work = workspace()
rc, out, err = mpirun(2, "run", cwd=work)
check(rc == 0, f"a first run: {err}")
with open(os.path.join(work, "scion.yaml")) as f:
    spec = f.read()
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(spec.replace("seed: 2}", "seed: 20}"))
limit_rank_0 = 'if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then ulimit -f 64; fi; exec "$0" "$@"'
proc = subprocess.run([MPIRUN, "-np", "2", *MPI_OPTIONS, "sh", "-c", limit_rank_0, SCION, "adapt", "lora-a"],
                      cwd=work, capture_output=True, text=True, timeout=600, env=MPI_ENV)
check(proc.returncode == 3, f"a failing rank ends the job with exit 3, got {proc.returncode}:\n{proc.stderr}")
check("rank 0 failed:" in proc.stderr, f"the other rank names the failing rank:\n{proc.stderr}")
rc, out, err = run("fsck", cwd=work)
check(rc == 0, f"the store is consistent after a failed rank: {out}{err}")

# Task parallelism and sharded evaluation, on a family of two trunks: each trunk's groups
# train on one rank (`--parallel task`), so every stored tensor equals the one a single
# process stores, bit for bit (both with one thread). `scion test` and `scion eval` shard
# their cases over the ranks and rank 0 gathers them: what they print and store equals
# one process's run, with 2 and 3 ranks, and so does `scion run`'s test phase.
TRUNKS_SPEC = TWO_TRUNKS_SPEC + """lexicons:
  noun: [movie, film, plot, story, script, ending]
  good: [great, wonderful, lovely, excellent, solid]
  bad: [awful, boring, terrible, dull, dreadful]
tests:
  praise:
    type: mft
    capability: Vocabulary
    template: "the {noun} was {good}."
    expect: {label: positive}
    max_failure_rate: 1.0
  typos:
    type: inv
    capability: Robustness
    template: "the {noun} was {bad}."
    perturb: {kind: typos}
    max_failure_rate: 1.0
assertions:
  praise-is-positive:
    kind: allowed_outputs
    pattern: "^the \\\\w+ was (great|wonderful|lovely|excellent|solid)\\\\.$"
    labels: [positive]
"""
TRUNK_MODELS = TWO_TRUNKS_MODELS
ONE_THREAD = dict(MPI_ENV)


def solo(*args, cwd):
    """scion as one process, with the ranks' one thread, so that results can match bits."""
    proc = subprocess.run([SCION, *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=ONE_THREAD)
    return proc.returncode, proc.stdout, proc.stderr


def test_rows(work):
    """The newest test run's stored results of each model, without run ids."""
    with sqlite3.connect(os.path.join(work, ".scion", "lineage.db")) as conn:
        return conn.execute(
            "SELECT m.name, t.model_version, t.test, t.case_index, t.input, t.expected, t.output, "
            "t.passed FROM test_results t JOIN models m ON m.id = t.model_id "
            "WHERE t.run_id IN (SELECT max(r.id) FROM runs r WHERE r.kind = 'test' GROUP BY r.model_id) "
            "ORDER BY m.name, t.test, t.case_index").fetchall()


def eval_rows(work):
    with sqlite3.connect(os.path.join(work, ".scion", "lineage.db")) as conn:
        return conn.execute(
            "SELECT m.name, e.model_version, e.dataset, e.dataset_digest, e.rows, e.kind, e.metrics "
            "FROM eval_results e JOIN models m ON m.id = e.model_id ORDER BY e.id").fetchall()


def close(a, b, tolerance=1e-6):
    """JSON values equal, numbers within `tolerance` (relative, at least absolute): metrics
    of probabilities (ECE, ROC-AUC) sum values a sharded pass computed in other batches,
    a few ulps apart; counts and labels must match exactly."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], tolerance) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, tolerance) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))
    return a == b


def same_evals(rows, expected):
    """eval_rows' rows equal, their metrics JSON within close()."""
    rows, expected = sorted(rows), sorted(expected)
    return len(rows) == len(expected) and all(
        r[:6] == e[:6] and close(json.loads(r[6]), json.loads(e[6])) for r, e in zip(rows, expected))


def test_report(stdout):
    """`scion run`'s output from its test report on (the training summary has timings)."""
    return stdout[stdout.index("\n\n"):]


section_start = time.time()
single = workspace(TRUNKS_SPEC)
rc, single_run, err = solo("run", cwd=single)
check(rc == 0, f"one process runs the two-trunk family: {single_run}{err}")
rc, plan_out, err = solo("plan", "--ranks", "2", cwd=workspace(TRUNKS_SPEC))
check(rc == 0 and re.search(r"rank 0  left .*\n  rank 1  right ", plan_out),
      f"plan --ranks 2 puts the trunks on ranks 0 and 1: {plan_out}{err}")


def training_pids(work):
    """model -> the pid of the process that ran its training run."""
    with sqlite3.connect(os.path.join(work, ".scion", "lineage.db")) as conn:
        return dict(conn.execute("SELECT m.name, r.pid FROM runs r JOIN models m ON m.id = r.model_id "
                                 "WHERE r.kind IN ('train', 'adapt')").fetchall())


def check_task_parallel(work, label):
    for model in TRUNK_MODELS:
        check(tensors(work, model) == tensors(single, model),
              f"{label}: {model}'s stored tensors equal one process's exactly")
    pids = training_pids(work)
    check(pids["left"] == pids["left-lora"] != pids["right"] == pids["right-prefix"],
          f"{label}: each trunk trained on its own rank: {pids}")


# --parallel auto: each wave has groups on 2 trunks, so 2 ranks run it task parallel.
work = workspace(TRUNKS_SPEC)
rc, out, err = mpirun(2, "--json", "run", "--parallel", "auto", cwd=work)
check(rc == 0, f"mpirun -np 2 scion run --parallel auto exited {rc}:\n{out}\n{err}")
summary = json.loads(out)
check(sorted(m["model"] for m in summary["models"]) == sorted(TRUNK_MODELS)
      and {m["status"] for m in summary["models"]} == {"trained"},
      f"rank 0's summary lists every model, whichever rank trained it: {summary}")
check_task_parallel(work, "--parallel auto")

work = workspace(TRUNKS_SPEC)
start = time.time()
rc, task_run, err = mpirun(2, "run", "--parallel", "task", cwd=work)
check(rc == 0, f"mpirun -np 2 scion run --parallel task exited {rc}:\n{task_run}\n{err}")
print(f"task parallel run, 2 ranks: {time.time() - start:.1f} s")
check_task_parallel(work, "--parallel task")
check(test_report(task_run) == test_report(single_run),
      f"scion run's test phase prints what one process prints:\n{test_report(task_run)}\n"
      f"---\n{test_report(single_run)}")
check(test_rows(work) == test_rows(single), "scion run's test phase stores what one process stores")
log = run_json("lineage", "log", cwd=work)
runs = log["runs"] if isinstance(log, dict) else log
trained = [r for r in runs if r.get("kind") in ("train", "adapt")]
check(len(trained) == len(TRUNK_MODELS), f"one training run per model: {runs}")
rc, out, err = run("fsck", cwd=work)
check(rc == 0, f"task parallel leaves a consistent store: {out}{err}")

# --rerun: every case is judged again (else each is read back from the store), so that the
# ranks' shares are what is compared.
rc, single_test, err = solo("test", "--rerun", cwd=work)
check(rc == 0, f"scion test, one process: {err}")
single_rows = test_rows(work)
rc, single_eval, err = solo("eval", *TRUNK_MODELS, "--data", "critics", "--chunk-size", "16", cwd=work)
check(rc == 0, f"scion eval, one process: {err}")
single_evals = eval_rows(work)
for ranks in (2, 3):
    rc, out, err = mpirun(ranks, "test", "--rerun", cwd=work)
    check(rc == 0, f"mpirun -np {ranks} scion test exited {rc}: {err}")
    check(out == single_test, f"{ranks} ranks: scion test prints what one process prints:\n{out}\n---\n{single_test}")
    check(test_rows(work) == single_rows, f"{ranks} ranks: scion test stores what one process stores")
    rc, out, err = mpirun(ranks, "eval", *TRUNK_MODELS, "--data", "critics", "--chunk-size", "16", cwd=work)
    check(rc == 0, f"mpirun -np {ranks} scion eval exited {rc}: {err}")
    check(out == single_eval, f"{ranks} ranks: scion eval prints what one process prints:\n{out}\n---\n{single_eval}")
    evals = eval_rows(work)
    check(same_evals(evals[-len(TRUNK_MODELS):], single_evals),
          f"{ranks} ranks: scion eval stores what one process stores")
    print(f"{ranks} ranks: test and eval equal one process")
rc, out, err = run("fsck", cwd=work)
check(rc == 0, f"sharded test and eval leave a consistent store: {out}{err}")

# A failing rank in a sharded test: rank 0 cannot record (a file size limit); the job
# exits 3 and the store stays consistent.
proc = subprocess.run([MPIRUN, "-np", "2", *MPI_OPTIONS, "sh", "-c", limit_rank_0, SCION, "test", "--rerun"],
                      cwd=work, capture_output=True, text=True, timeout=600, env=MPI_ENV)
check(proc.returncode == 3, f"a sharded test whose rank 0 cannot write exits 3, got {proc.returncode}:\n{proc.stderr}")
rc, out, err = run("fsck", cwd=work)
check(rc == 0, f"the store is consistent after a failed sharded test: {out}{err}")

# A failing rank in a task-parallel wave: rank 1 cannot write the store; rank 0 finishes
# its trunk's group, then both stop with rank 1's error, exit 3, the store consistent,
# and the same command run again trains what is left.
work = workspace(TRUNKS_SPEC)
limit_rank_1 = 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then ulimit -f 64; fi; exec "$0" "$@"'
proc = subprocess.run([MPIRUN, "-np", "2", *MPI_OPTIONS, "sh", "-c", limit_rank_1, SCION, "train", "--parallel", "task"],
                      cwd=work, capture_output=True, text=True, timeout=600, env=MPI_ENV)
check(proc.returncode == 3, f"a failing rank in a task-parallel wave ends the job with exit 3, got {proc.returncode}:\n{proc.stderr}")
check("rank 1 failed:" in proc.stderr, f"rank 0 names the failing rank:\n{proc.stderr}")
rc, out, err = run("fsck", cwd=work)
check(rc == 0, f"the store is consistent after a failed task-parallel wave: {out}{err}")
rc, out, err = mpirun(2, "train", "--parallel", "task", cwd=work)
check(rc == 0, f"the work finishes when run again: {err}")
check_task_parallel_bases = [tensors(work, m) == tensors(single, m) for m in ("left", "right")]
check(all(check_task_parallel_bases), "the bases trained after the failure equal one process's")
print(f"task parallelism and sharded evaluation: {time.time() - section_start:.1f} s")

# A killed rank: mpirun ends the job, non-zero; the store stays consistent and the work
# can be run again to the end. The base trains far longer than the test waits, and the
# rank is killed once the store shows its run under way: on a fast, idle machine a short
# run would be over before the kill (a race this test once lost).
work = workspace(SPEC.replace("steps: 6,", "steps: 100000,"))
command = [MPIRUN, "-np", "2", *MPI_OPTIONS, SCION, "-v", "run"]
proc = subprocess.Popen(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        env=MPI_ENV)
victim = None
deadline = time.time() + 120
while victim is None and time.time() < deadline:
    ranks = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    database = os.path.join(work, ".scion", "lineage.db")
    if len(ranks) == 2 and os.path.exists(database):
        try:
            with sqlite3.connect(database) as conn:
                running = conn.execute("SELECT count(*) FROM runs WHERE status = 'running'").fetchone()[0]
        except sqlite3.Error:
            running = 0
        if running:
            victim = int(sorted(ranks, key=int)[-1])
    time.sleep(0.2)
check(victim is not None, "two ranks started and the base's run is under way")
time.sleep(1)
os.kill(victim, signal.SIGKILL)
out, err = proc.communicate(timeout=300)
check(proc.returncode != 0, f"a killed rank ends the job with an error, got {proc.returncode}")
# (Open MPI 4.1 prints "PID 0" here, so the rank, not the pid, is what it names.)
check(re.search(r"process rank \d+ .* exited on signal 9", err), f"mpirun names the killed rank:\n{err}")
print(f"killed rank: mpirun exited {proc.returncode}")
rc, out, err2 = run("fsck", cwd=work)
check(rc == 0, f"the store is consistent after a killed rank: {out}{err2}")
with open(os.path.join(work, "scion.yaml")) as f:
    spec = f.read()
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(spec.replace("steps: 100000,", "steps: 6,"))
rc, out, err2 = mpirun(2, "run", cwd=work)
check(rc == 0, f"the work finishes when run again: {err2}")
print("ok")
