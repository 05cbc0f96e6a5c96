"""What the MPI tests share (test_distributed.py, test_distributed_task_kill.py): finding
mpirun (or skipping), how ranks are launched, a family of two trunks for task
parallelism, and the tensors a model stores, read back through `scion export`."""
import json
import os
import shutil
import struct

from harness import check, run, run_json


def require_mpirun():
    """mpirun's path; exits 77 (skip) without mpirun or without MPI in the build."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        print("skip: mpirun not found (install openmpi-bin)")
        raise SystemExit(77)
    if not run_json("--version")["build"]["mpi"]:
        print("skip: this scion was built without MPI")
        raise SystemExit(77)
    return mpirun


# --oversubscribe: more ranks than this machine's cores; --allow-run-as-root: CI containers.
MPI_OPTIONS = ["--oversubscribe", "--allow-run-as-root"]
# PMIx's shared-memory store fails to lock in some containers ("PMIX ERROR ... ds21"),
# making MPI_Init fail now and then; its hash store does not.
# NO_COLOR: mpirun gives the ranks a terminal for stdout, where scion would paint.
MPI_ENV = dict(os.environ, PMIX_MCA_gds="hash", OMP_NUM_THREADS="1", NO_COLOR="1")
# Under `./bootstrap.sh sanitize`: Open MPI's libraries are built without frame pointers,
# so ASan's fast unwinder stops inside them and a leak MPI_Init leaves has a one-frame
# stack that tests/lsan.supp (which names Open MPI's libraries, never scion's code) cannot
# match. The slow unwinder records whole stacks: the suppressions then see MPI_Init.
if "ASAN_OPTIONS" in os.environ:
    MPI_ENV["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":fast_unwind_on_malloc=0"

# Two trunks, each with a descendant: `--parallel task` puts one trunk on each rank.
TWO_TRUNKS_SPEC = """datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
  critics: {path: data/critics.jsonl, labels: [negative, positive]}
models:
  left:
    architecture: {type: encoder, layers: 2, width: 32, heads: 2, ffn_width: 64, max_length: 48}
    train: {data: reviews, objective: classification, steps: 6, batch_size: 7, seed: 1}
  left-lora:
    from: left
    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}
    train: {data: critics, steps: 5, batch_size: 7, seed: 2}
  right:
    architecture: {type: encoder, layers: 1, width: 32, heads: 2, ffn_width: 64, max_length: 48}
    train: {data: critics, objective: classification, steps: 6, batch_size: 5, seed: 3}
  right-prefix:
    from: right
    adapt: {prefix: {virtual_tokens: 2}, head: {}}
    train: {data: reviews, steps: 4, batch_size: 5, seed: 4}
"""
TWO_TRUNKS_MODELS = ["left", "left-lora", "right", "right-prefix"]


def stored_tensors(work, model):
    """name -> (dtype, raw bytes) of every tensor `model` stores, from `scion export`."""
    path = os.path.join(work, model + ".safetensors")
    rc, _, err = run("export", model, "-o", path, "--force", cwd=work)
    check(rc == 0, f"export {model}: {err}")
    with open(path, "rb") as f:
        data = f.read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    body = data[8 + size:]
    return {name: (info["dtype"], body[info["data_offsets"][0]:info["data_offsets"][1]])
            for name, info in header.items() if name != "__metadata__"}
