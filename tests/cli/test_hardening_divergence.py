"""Nothing bad is stored as good (issue #12): a model whose training diverges stops with
exit 3 and stores nothing while its co-batched sibling is stored; an import with NaN or
Inf is refused unless --allow-nonfinite; `predict` refuses to print a non-finite
probability; a job planned to need more memory than the machine has is refused before
anything is written, and an allocation that fails is a clean exit 3."""
import json
import os
import re
import shutil
import struct

from harness import EXAMPLES, check, run, run_json, temp_dir

FAMILY = """datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
models:
  base:
    architecture: {type: encoder, layers: 1, width: 32, heads: 2, ffn_width: 64, max_length: 48}
    train: {data: reviews, steps: 10, batch_size: 8, seed: 1}
"""
SPEC = FAMILY + """  calm:
    from: base
    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}
    train: {data: reviews, steps: 30, batch_size: 8, seed: 2}
  hot:
    from: base
    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}
    train: {data: reviews, steps: 30, batch_size: 8, seed: 3, optimizer: {type: sgd, lr: 10, weight_decay: 1}}
"""
# hot's SGD at lr 10 alone wanders at losses in the hundreds in 30 steps of this tiny
# model; with weight decay 1 each step multiplies its parameters by about 1 - lr x wd = -9,
# so its loss passes 1e17 by step 21 and is NaN at step 22 (checked with `adapt -v`).


def workspace(spec):
    work = temp_dir()
    os.makedirs(os.path.join(work, "data"))
    shutil.copy(os.path.join(EXAMPLES, "sentiment", "data", "reviews.jsonl"), os.path.join(work, "data"))
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(spec)
    return work


def runs_of(work, model):
    return [r for r in run_json("lineage", "log", cwd=work)["runs"] if r["model"] == model]


# ---- Divergence in a co-batched group ----------------------------------------------------
work = workspace(SPEC)
run_json("train", "base", cwd=work)
rc, out, err = run("--json", "adapt", cwd=work)
check(rc == 3, f"a diverged model makes adapt exit 3, got {rc}\n{err}")
check("'hot'" in err and "diverged at step" in err and "try a lower learning rate" in err,
      f"the error names the model, the step and what to do:\n{err}")
check(re.search(r"diverged at step \d+: loss is (NaN|infinite)", err),
      f"the error says when and what was not finite:\n{err}")
summary = {m["model"]: m for m in json.loads(out)["models"]}
check(summary["hot"]["status"] == "diverged" and summary["calm"]["status"] == "trained",
      f"the sibling of the co-batched group trains on: {summary}")
check(len(json.loads(out)["groups"]) == 1, f"calm and hot trained as one co-batched group: {out}")

hot_runs = runs_of(work, "hot")
check([r["status"] for r in hot_runs] == ["diverged"], f"the run is recorded as diverged: {hot_runs}")
check([r["status"] for r in runs_of(work, "calm")] == ["finished"], "calm's run finished")
tree = {m["model"]: m for m in run_json("lineage", "tree", cwd=work)["models"]}
check(tree["hot"]["status"] == "not trained", f"nothing of hot is stored: {tree['hot']}")
check(tree["calm"]["status"] == "trained", f"calm is stored: {tree['calm']}")
rc, _, err = run("predict", "hot", "--text", "great", cwd=work)
check(rc != 0 and "not trained" in err, f"hot has no parameters to predict with: {rc} {err}")
rc, out, err = run("predict", "calm", "--text", "a great film", cwd=work)
check(rc == 0 and "nan" not in out, f"calm predicts: {rc} {out} {err}")
rc, out, err = run("fsck", cwd=work)
check(rc == 0, f"fsck passes after a divergence: {out} {err}")

# Training again retries the diverged model only, and it diverges again.
rc, out, err = run("--json", "adapt", cwd=work)
again = {m["model"]: m["status"] for m in json.loads(out)["models"]}
check(rc == 3 and again == {"calm": "up to date", "hot": "diverged"}, f"hot retried alone: {again} {err}")

# An explicit --memory-budget is a limit too; --ignore-memory-limit lifts it.
runs_before = run_json("lineage", "log", cwd=work)["runs"]
rc, _, err = run("adapt", "--memory-budget", "1", cwd=work)
check(rc == 3 and "'hot' needs" in err and "1.0 MiB allowed by --memory-budget" in err,
      f"a group over an explicit budget is refused: {rc} {err}")
check(run_json("lineage", "log", cwd=work)["runs"] == runs_before, "a refused adapt writes no run")
rc, _, err = run("adapt", "--memory-budget", "1", "--ignore-memory-limit", cwd=work)
check(rc == 3 and "diverged at step" in err, f"--ignore-memory-limit trains anyway: {rc} {err}")

# ---- The last good checkpoint survives a divergence -----------------------------------------
# Checkpoints are written every 100 steps. With weight decay 0.39 this model's parameters
# grow by about |1 - 10 x 0.39| = 2.9 per step only once its gradient steps push them out:
# on this machine (AMD EPYC, 2 threads) it diverges at step 142, after the checkpoint of step 100.
LATE_SPEC = FAMILY + """  late:
    from: base
    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}
    train: {data: reviews, steps: 400, batch_size: 8, seed: 3, optimizer: {type: sgd, lr: 10, weight_decay: 0.39}}
"""


def checkpoint_floats(path):
    """The metadata and every F32 value of a safetensors checkpoint."""
    with open(path, "rb") as f:
        data = f.read()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + size])
    values = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        check(entry["dtype"] == "F32", f"checkpoint tensors are F32: {name} {entry['dtype']}")
        begin, end = entry["data_offsets"]
        chunk = data[8 + size + begin:8 + size + end]
        values.extend(struct.unpack(f"<{len(chunk) // 4}f", chunk))
    return header.get("__metadata__", {}), values


work = workspace(LATE_SPEC)
run_json("train", "base", cwd=work)
rc, _, err = run("adapt", cwd=work)
step = re.search(r"diverged at step (\d+)", err)
check(rc == 3 and step, f"late diverges: {rc}\n{err}")
checkpoints = os.path.join(work, ".scion", "checkpoints")
kept = sorted(os.listdir(checkpoints)) if os.path.isdir(checkpoints) else []
print("late diverged at step", step.group(1), "checkpoints kept:", kept)
if int(step.group(1)) > 100:
    check(len(kept) == 1, f"the checkpoint of step 100 is kept after a divergence at step {step.group(1)}: {kept}")
    metadata, values = checkpoint_floats(os.path.join(checkpoints, kept[0]))
    check(metadata.get("step") == "100", f"the kept checkpoint is the last good one: {metadata}")
    check(values and all(v == v and abs(v) != float("inf") for v in values),
          "the kept checkpoint holds only finite values")
else:  # another CPU's arithmetic diverged earlier: then no checkpoint may hold its NaNs
    check(kept == [], f"no checkpoint is written before step 100: {kept}")

# ---- Import refuses non-finite tensors ---------------------------------------------------
exported = os.path.join(work, "base.safetensors")
rc, _, err = run("export", "base", "-o", exported, cwd=work)
check(rc == 0, f"export base: {err}")
with open(exported, "rb") as f:
    data = bytearray(f.read())
header_length = int.from_bytes(data[:8], "little")
header = json.loads(data[8:8 + header_length])
start = 8 + header_length
# Every token embedding of a non-ASCII byte (ids 128..255: a byte is its own id) becomes
# infinite: the reviews are ASCII, so training never reads them, while a prediction on
# "é" does.
emb = header["tok_emb.weight"]
rows, width = emb["shape"]
first = start + emb["data_offsets"][0]
for row in range(128, 256):
    for col in range(width):
        struct.pack_into("<f", data, first + 4 * (row * width + col), float("inf"))
unread_inf = os.path.join(work, "unread-inf.safetensors")
with open(unread_inf, "wb") as f:
    f.write(bytes(data))
struct.pack_into("<f", data, start + header["ln_f.bias"]["data_offsets"][0], float("nan"))
poisoned = os.path.join(work, "poisoned.safetensors")
with open(poisoned, "wb") as f:
    f.write(bytes(data))

BASE_TRAINING = "train: {data: reviews, steps: 10, batch_size: 8, seed: 1}"


def declare_import(spec, checkpoint):
    """`spec` with base imported from `checkpoint` instead of trained: a stored version is
    never rewritten, so other parameters for base need a recipe that names them."""
    check(BASE_TRAINING in spec, "the spec trains base")
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(spec.replace(BASE_TRAINING, f"import: {os.path.basename(checkpoint)}"))


declare_import(LATE_SPEC, poisoned)
runs_before = run_json("lineage", "log", cwd=work)["runs"]
rc, _, err = run("import", poisoned, "--as", "base", cwd=work)
check(rc == 3, f"an import with Inf/NaN exits 3, got {rc}: {err}")
check(f"tensor 'tok_emb.weight' has {128 * width} NaN or infinite values" in err and
      "tensor 'ln_f.bias' has 1 NaN or infinite value" in err and "--allow-nonfinite" in err,
      f"the refusal names each tensor, its count and the way out:\n{err}")
check(run_json("lineage", "log", cwd=work)["runs"] == runs_before, "a refused import writes nothing")
declare_import(LATE_SPEC, unread_inf)
rc, _, err = run("import", unread_inf, "--as", "base", cwd=work)
check(rc == 3, f"one tensor with Inf is enough to refuse: {rc} {err}")
rc, _, err = run("import", unread_inf, "--as", "base", "--allow-nonfinite", cwd=work)
check(rc == 0 and "tok_emb.weight" in err, f"--allow-nonfinite imports it, with a warning: {rc} {err}")

# ---- predict never prints a non-finite probability ---------------------------------------
declare_import(SPEC.replace("optimizer: {type: sgd, lr: 10, weight_decay: 1}", "optimizer: {type: adamw, lr: 1.0e-3}"),
               unread_inf)
rc, _, err = run("adapt", "calm", "--force", cwd=work)
check(rc == 0, f"calm trains on the imported base (ASCII data never reads the Inf rows): {err}")
rc, out, err = run("predict", "calm", "--text", "a great film", cwd=work)
check(rc == 0 and "nan" not in out, f"an ASCII text predicts: {rc} {out} {err}")
rc, out, err = run("predict", "calm", "--text", "caf\u00e9", cwd=work)
check(rc == 3, f"a non-finite probability makes predict exit 3, got {rc}: {out} {err}")
check("model 'calm' gave p(" in err and "not finite" in err and "nan" not in out,
      f"predict says why and prints no probability: {out} {err}")

# ---- Memory: planned memory over what is available is refused before any work -------------
HUGE = SPEC.replace("layers: 1, width: 32, heads: 2, ffn_width: 64", "layers: 2, width: 65536, heads: 2, ffn_width: 65536")
big = workspace(HUGE)
rc, out, err = run("plan", cwd=big)
check(rc == 0 and "GiB" in out, f"plan still estimates the memory: {rc} {out} {err}")
for command in ("train", "run"):
    rc, out, err = run(command, cwd=big)
    check(rc == 3, f"{command} of a model too big for this machine exits 3, got {rc}: {err}")
    check("'base' needs" in err and "GiB available" in err and "--ignore-memory-limit" in err
          and "batch_size" in err, f"{command} says what it needs, what there is and what to do: {err}")
    check(run_json("lineage", "log", cwd=big)["runs"] == [], f"{command} wrote no run")

# Past the check, the allocation itself fails cleanly where the kernel refuses requests
# larger than RAM and swap (overcommit modes 0 and 2; mode 1 would hand the memory out
# and let the kernel kill whoever touches it, so this part is skipped there).
with open("/proc/sys/vm/overcommit_memory") as f:
    overcommit = f.read().strip()
if overcommit in ("0", "2"):
    rc, out, err = run("train", "--ignore-memory-limit", cwd=big)
    check(rc == 3 and "out of memory: needs" in err and "for the parameters of 'base'" in err,
          f"a failed allocation is a clean exit 3: {rc} {err}")
    check(run_json("lineage", "log", cwd=big)["runs"] == [], "a failed allocation wrote no run")
print("ok")
