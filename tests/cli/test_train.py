"""scion train / adapt / run end to end on a shortened copy of the example family:
co-batched groups, skipping what is up to date, frozen parameters kept bit for bit,
determinism, retraining what a recipe change touches, Ctrl-C, and bad requests."""
import json
import os
import re
import signal
import subprocess
import time

from harness import EXAMPLES, SCION, check, copy_example, exported_tensor_bytes, run, run_json, temp_dir


def shortened_example(base_epochs=1, epochs=1):
    """A copy of examples/sentiment whose recipes take seconds instead of a minute."""
    work = os.path.join(temp_dir(), "sentiment")
    copy_example("sentiment", work)
    path = os.path.join(work, "scion.yaml")
    with open(path) as f:
        spec = f.read()
    spec = re.sub(r"epochs: \d+", f"epochs: {epochs}", spec)
    spec = spec.replace(f"epochs: {epochs}", f"epochs: {base_epochs}", 1)  # the base's
    with open(path, "w") as f:
        f.write(spec)
    return work


def statuses(result):
    return {m["model"]: m["status"] for m in result["models"]}


work = shortened_example()
first = run_json("run", cwd=work)
check(set(statuses(first).values()) == {"trained"}, f"first run trains everything: {first}")
groups = [sorted(g["models"]) for g in first["groups"]]
check(["review-bottleneck", "review-lora", "review-prefix"] in groups,
      f"descendants of one frozen trunk train as one co-batched group: {groups}")
check(["review-bitfit"] in groups, f"BitFit trains trunk biases, so it trains alone: {groups}")
check(groups.index(["product-lora"]) > groups.index(["review-bottleneck", "review-lora", "review-prefix"]),
      f"a descendant of a descendant trains after its parent: {groups}")

second = run_json("run", cwd=work)
check(set(statuses(second).values()) == {"up to date"}, f"second run skips everything: {second}")
check(second["groups"] == [], "nothing runs the second time")

rc, _, err = run("fsck", cwd=work)
check(rc == 0, f"fsck passes after training: {err}")

tree = {m["model"]: m for m in run_json("lineage", "tree", cwd=work)["models"]}
check("val_accuracy" in tree["review-lora"].get("validation", {}),
      f"the tree carries each model's last validation metrics: {tree['review-lora']}")
check("val_accuracy" in tree["base"].get("validation", {}),
      f"the base trains with a validation split too: {tree['base']}")

diff = run_json("lineage", "diff", "base", "review-lora", cwd=work)
check(diff["differ"] == [], f"adapt leaves the frozen trunk bit for bit unchanged: {diff['differ']}")
check(any(".lora.review-lora." in n for n in diff["only_in_b"]), "review-lora adds its own adapters")
diff = run_json("lineage", "diff", "review-lora", "product-lora", cwd=work)
check(diff["differ"] == [], "product-lora keeps review-lora's adapters and head frozen")

# Same spec, same seed, same thread count: the same parameters, bit for bit.
again = shortened_example()
run_json("run", cwd=again)
for model in ("base", "review-lora", "product-lora"):
    check(exported_tensor_bytes(work, model) == exported_tensor_bytes(again, model),
          f"{model}: two runs of one spec give identical parameters")

# A recipe change retrains that model and its descendants, nothing else.
spec_path = os.path.join(work, "scion.yaml")
with open(spec_path) as f:
    spec = f.read()
with open(spec_path, "w") as f:
    f.write(spec.replace("lora: {rank: 4, alpha: 8", "lora: {rank: 4, alpha: 4", 1))
third = statuses(run_json("run", cwd=work))
check(third["review-lora"] == "trained" and third["product-lora"] == "trained",
      f"the changed model and its child retrain: {third}")
check(third["base"] == "up to date" and third["review-prefix"] == "up to date",
      f"unrelated models are skipped: {third}")

# Asking for a descendant whose parent is not trained is a usage error.
fresh = shortened_example()
rc, _, err = run("adapt", "review-lora", cwd=fresh)
check(rc == 2 and "needs its parent 'base' trained first" in err, f"adapt before train: {rc} {err}")
rc, _, err = run("train", "review-lora", cwd=fresh)
check(rc == 2 and "scion adapt" in err, f"train of a descendant points to adapt: {err}")
rc, _, err = run("adapt", "nope", cwd=fresh)
check(rc == 2 and "no model 'nope'" in err, f"unknown model: {err}")

# Ctrl-C in the middle of training: exit 130, the run is marked interrupted, and the
# store stays consistent.
slow = shortened_example(base_epochs=10000)
proc = subprocess.Popen([SCION, "train"], cwd=slow, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
time.sleep(3)
proc.send_signal(signal.SIGINT)
_, err = proc.communicate(timeout=120)
check(proc.returncode == 130, f"Ctrl-C exits 130, got {proc.returncode}: {err}")
log = run_json("lineage", "log", cwd=slow)
check(log["runs"] and log["runs"][0]["status"] == "interrupted", f"the run is marked interrupted: {log}")
rc, _, err = run("fsck", cwd=slow)
check(rc == 0, f"fsck passes after Ctrl-C: {err}")

# --resume continues an interrupted run from its checkpoint and ends with exactly the
# parameters of an uninterrupted run.
TINY = """datasets:
  corpus: {path: data/corpus.txt}
models:
  tiny:
    architecture: {type: encoder, layers: 1, width: 32, heads: 2, ffn_width: 64, max_length: 32}
    train:
      data: corpus
      objective: mlm
      steps: 150
      batch_size: 4
      optimizer: {type: adamw, lr: 1.0e-3}
      schedule: {type: cosine, warmup_steps: 10}
      seed: 5
"""


def tiny_workspace():
    work = temp_dir()
    os.makedirs(os.path.join(work, "data"))
    # Plain text for masked-LM training: the example's review texts.
    with open(os.path.join(EXAMPLES, "sentiment", "data", "reviews.jsonl")) as f:
        texts = [json.loads(line)["text"] for line in f]
    with open(os.path.join(work, "data", "corpus.txt"), "w") as f:
        f.write("\n".join(texts) + "\n")
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(TINY)
    return work


straight = tiny_workspace()
run_json("train", cwd=straight)
interrupted = tiny_workspace()
proc = subprocess.Popen([SCION, "-v", "train"], cwd=interrupted, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
for line in proc.stderr:  # -v prints every step; stop the run a few steps in
    if re.search(r"step +20/", line):
        proc.send_signal(signal.SIGINT)
        break
proc.communicate(timeout=120)
check(proc.returncode == 130, f"the tiny run was interrupted, exit {proc.returncode}")
checkpoints = os.listdir(os.path.join(interrupted, ".scion", "checkpoints"))
tiny_hash = run_json("plan", cwd=interrupted)["models"][0]["recipe_hash"]
check(checkpoints == [tiny_hash + ".safetensors"],
      f"a checkpoint named by the recipe hash, not the model name, is left: {checkpoints}")
resumed = run_json("train", "--resume", cwd=interrupted)
check(resumed["models"][0]["status"] == "trained", f"--resume finishes the run: {resumed}")
check(exported_tensor_bytes(straight, "tiny") == exported_tensor_bytes(interrupted, "tiny"),
      "an interrupted and resumed run ends with the parameters of an uninterrupted one")
check(os.listdir(os.path.join(interrupted, ".scion", "checkpoints")) == [],
      "the checkpoint is removed once the model is stored")
print("ok")
