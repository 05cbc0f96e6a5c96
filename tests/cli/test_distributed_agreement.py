"""Ranks agree before any work (issue #29, item 2): `mpirun -np 2` where each rank reads
its own scion.yaml (another learning rate, seed and LoRA rank on rank 1) ends both ranks
with exit 2 naming what differs, before a step and with the store unchanged; the same
with only a data file differing. And every collective refuses ranks that pass different
sizes or types (tests/unit/comm_collective_check.cpp). Skips (77) without mpirun or MPI."""
import os
import subprocess
import sys

from harness import SCION, check, run, spec_workspace
from mpi_support import MPI_ENV, MPI_OPTIONS, require_mpirun

MPIRUN = require_mpirun()
COLLECTIVE_CHECK = os.path.abspath(sys.argv[3])

SPEC = """datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
models:
  base:
    architecture: {type: encoder, layers: 1, width: 16, heads: 2, ffn_width: 32, max_length: 32}
    train: {data: reviews, objective: classification, steps: 3, batch_size: 4, seed: 1}
  lora:
    from: base
    adapt: {lora: {rank: 2}}
    train: {data: reviews, steps: 3, batch_size: 4, seed: 2, optimizer: {type: adamw, lr: 1.0e-3}}
"""
OTHER = SPEC.replace("seed: 2", "seed: 9").replace("lr: 1.0e-3", "lr: 5.0e-3").replace(
    "rank: 2", "rank: 4")


def listing(folder):
    out = {}
    for base, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(base, name)
            if name.endswith(("-wal", "-shm")):
                continue  # SQLite's side files may be opened (and emptied) by readers
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = f.read()
    return out


def mpirun_per_rank_spec(work, *args):
    """Each rank runs scion with its own spec, spec-<rank>.yaml, as a wrapper script would."""
    command = f'exec "{SCION}" -f spec-$OMPI_COMM_WORLD_RANK.yaml {" ".join(args)}'
    proc = subprocess.run([MPIRUN, "-np", "2", *MPI_OPTIONS, "sh", "-c", command], cwd=work,
                          capture_output=True, text=True, timeout=300, env=MPI_ENV)
    return proc.returncode, proc.stdout, proc.stderr


work = spec_workspace(SPEC, data=("reviews.jsonl",))
for rank in (0, 1):
    with open(os.path.join(work, f"spec-{rank}.yaml"), "w") as f:
        f.write(SPEC)
rc, out, err = run("-f", "spec-0.yaml", "run", "base", cwd=work)
check(rc == 0, f"training the base alone: {err}")
store = os.path.join(work, ".scion")
before = listing(store)

# Another lr, seed and LoRA rank on rank 1.
with open(os.path.join(work, "spec-1.yaml"), "w") as f:
    f.write(OTHER)
rc, out, err = mpirun_per_rank_spec(work, "run")
check(rc == 2, f"ranks with different specs: mpirun exited {rc}\n{out}\n{err}")
check(err.count("the ranks disagree") == 2, f"both ranks say why:\n{err}")
check("the spec's canonical digest: rank 0 has" in err, f"the message names what differs:\n{err}")
check("step" not in out.lower(), f"no rank trained a step:\n{out}")
check(listing(store) == before, "the store is unchanged")

# The same spec, a different data file on rank 1.
with open(os.path.join(work, "spec-1.yaml"), "w") as f:
    f.write(SPEC.replace("data/reviews.jsonl", "data/other.jsonl"))
with open(os.path.join(work, "data", "reviews.jsonl")) as f:
    rows = f.readlines()
with open(os.path.join(work, "data", "other.jsonl"), "w") as f:
    f.writelines(rows[1:] + rows[:1])
rc, out, err = mpirun_per_rank_spec(work, "run")
check(rc == 2 and "dataset 'reviews': rank 0 has" in err, f"a different data file: {rc}\n{err}")
check(listing(store) == before, "the store is unchanged")
for command in (["test", "--no-record"], ["eval", "base", "--data", "reviews", "--no-record"]):
    rc, out, err = mpirun_per_rank_spec(work, *command)
    check(rc == 2 and "dataset 'reviews'" in err, f"{' '.join(command)}: {rc}\n{err}")

# Every collective checks the ranks' sizes and types.
proc = subprocess.run([MPIRUN, "-np", "2", *MPI_OPTIONS, COLLECTIVE_CHECK], capture_output=True,
                      text=True, timeout=120, env=MPI_ENV)
print(proc.stdout)
check(proc.returncode == 0 and "FAIL" not in proc.stdout,
      f"collective checks: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
print("ok")
