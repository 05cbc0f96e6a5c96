"""`scion train|adapt|run --profile` (time by class of work) and the step figures of every
group (steady state and time to the first step); and the BLAS cliff from the command line:
with OpenBLAS forced onto its generic kernels, `scion --version --json` chooses oneDNN for
every class of fp32 product and a profiled run does none on OpenBLAS (issue #24)."""
import json
import os
import subprocess
import time

from harness import SCION, check, run, spec_workspace

SPEC = """
datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
models:
  base:
    architecture: {type: encoder, layers: 2, width: 64, heads: 2, ffn_width: 128,
                   max_length: 64, tokenizer: byte}
    train: {data: reviews, objective: classification, steps: 4, batch_size: 8, seed: 1}
  lora:
    from: base
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {}}
    train: {data: reviews, steps: 3, batch_size: 8, seed: 2}
"""
CLASSES = {"products", "attention", "norms", "activations", "loss", "embeddings", "elementwise",
           "optimizer", "transfers", "data", "store", "setup"}


def scion_json(work, *args, env=None):
    started = time.monotonic()
    done = subprocess.run([SCION, "--json", "-C", work, *args], capture_output=True, text=True,
                          env=env, timeout=600)
    check(done.returncode == 0, f"scion {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return json.loads(done.stdout), time.monotonic() - started


work = spec_workspace(SPEC, data=("reviews.jsonl",))
result, wall = scion_json(work, "run", "--profile")
profile = result.get("profile")
check(profile is not None, f"--profile adds a profile to the --json summary: {result.keys()}")
check(set(profile["classes"]) == CLASSES, f"every class of work is there: {profile['classes']}")
timed = sum(c["seconds"] for c in profile["classes"].values())
check(0 < timed <= profile["seconds"] * 1.001 and profile["seconds"] <= wall,
      f"classes are exclusive times within the run: {timed} of {profile['seconds']} s "
      f"(process {wall:.2f} s)")
check(abs(timed + profile["other_seconds"] - profile["seconds"]) < 1e-3 * profile["seconds"] + 1e-6,
      f"timed classes and `other` make up the run: {profile}")
for name in ("products", "attention", "norms", "optimizer", "data", "store", "setup"):
    check(profile["classes"][name]["calls"] > 0 and profile["classes"][name]["seconds"] > 0,
          f"{name} is timed: {profile['classes'][name]}")
flops = sum(l["flops"] for l in profile["product_libraries"].values())
check(flops > 0, f"the CPU libraries' products are counted: {profile['product_libraries']}")
check(profile["waited_per_operation"] is False, "a CPU run is not waited for per operation")

# Every group says its steps, its steady state and when its first step ended.
steps = {tuple(g["models"]): g for g in result["groups"]}
base = steps[("base",)]
check(base["steps"] == 4 and base["steady_step_seconds"] > 0 and base["steady_tokens_per_second"] > 0,
      f"the base's 4 steps give a steady state: {base}")
check(0 < base["first_step_end_seconds"] < wall,
      f"the base's first step ended after the process started, before it ended: {base} ({wall:.2f} s)")
lora = steps[("lora",)]
check(lora["first_step_end_seconds"] > base["first_step_end_seconds"],
      f"the descendant's first step comes after the base's: {lora}")

again, _ = scion_json(work, "train", "--force")
check("profile" not in again, "no profile without --profile")
rc, out, err = run("-C", work, "adapt", "--force", "--profile")
check(rc == 0 and "profile:" in out and "products" in out and "steady" in out,
      f"the text summary prints the steps and the profile:\n{out}{err}")

# The cliff: OpenBLAS forced onto its generic kernels must not run an fp32 product.
prescott = dict(os.environ, OPENBLAS_CORETYPE="Prescott")
version, _ = scion_json(work, "--version", env=prescott)
cpu = version["cpu"]
if cpu["openblas_core"] != "Prescott":
    print(f"note: OpenBLAS did not take OPENBLAS_CORETYPE=Prescott ({cpu['openblas_config']}); "
          "the cliff part is not applicable here")
elif "avx2" not in open("/proc/cpuinfo").read():
    print("note: no AVX2 on this CPU: OpenBLAS's generic kernels are no cliff here")
else:
    libraries = {c: v["library"] for c, v in cpu["fp32_matmul"]["classes"].items()}
    check(set(libraries.values()) == {"onednn"} and cpu["fp32_matmul"]["how"].startswith("rule"),
          f"with Prescott kernels every fp32 class goes to oneDNN: {cpu['fp32_matmul']}")
    forced, _ = scion_json(work, "train", "--force", "--profile", env=prescott)
    used = forced["profile"]["product_libraries"]
    check(used["openblas fp32"]["calls"] == 0 and used["onednn fp32"]["calls"] > 0,
          f"a training run with Prescott kernels multiplies nothing on OpenBLAS: {used}")
print("ok")
