"""`scion plan`'s memory estimate against the memory training really takes.

Also with activation recomputation (`--recompute`), which must lower both.

A family at W1's trunk shape (encoder L=4, d=256, h=4, f=1024, T=128; a base trained a
few steps, then four LoRA + head descendants co-batched) is trained with `scion run
--json` in fp32 and in bf16. For every group, what the group added to the process's
resident memory (its peak less the resident size when it started; docs/cli.md,
"Training") must be within 15% of the plan's estimate for that group — the estimate
`--memory-budget` and the refusal of oversized groups rely on.
"""
import json
import os
import random
import shutil

from harness import check, run, run_json, skip_under_sanitizers, temp_dir

TOLERANCE = 0.15

skip_under_sanitizers("AddressSanitizer's shadow memory inflates the resident memory this test "
                      "compares with the plan's estimate")

work = temp_dir()
rng = random.Random(5)
words = ["good", "bad", "fine", "awful", "great", "dull", "film", "plot", "the", "was"]
with open(os.path.join(work, "reviews.jsonl"), "w") as f:
    for i in range(256):
        text = " ".join(rng.choice(words) for _ in range(30))[:120]
        f.write(json.dumps({"text": text, "label": ["negative", "positive"][i % 2]}) + "\n")

descendants = "".join(f"""
  lora-{i}:
    from: base
    adapt: {{lora: {{rank: 8, alpha: 16, targets: [q, v]}}, head: {{}}}}
    train: {{data: reviews, steps: 3, batch_size: 8, seed: {i}}}
""" for i in range(4))
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(f"""
datasets:
  reviews: {{path: reviews.jsonl, labels: [negative, positive]}}
models:
  base:
    architecture: {{type: encoder, layers: 4, width: 256, heads: 4, ffn_width: 1024,
                   max_length: 128, tokenizer: byte}}
    train: {{data: reviews, objective: classification, steps: 2, batch_size: 16, seed: 1}}
{descendants}""")

rc, _, err = run("-C", work, "run", "--precision", "fp16")
check(rc == 2 and "--precision" in err and "bf16" in err, f"--precision fp16: exit {rc}, {err}")

# (precision, recompute): with recompute the base's activations shrink to one block's plus
# each block's output, and the plan must say so as truly as it does without.
measured = {}
planned_by = {}
for precision, recompute in (("fp32", False), ("bf16", False), ("fp32", True)):
    store = os.path.join(work, ".scion")
    shutil.rmtree(store, ignore_errors=True)
    label = precision + (" recompute" if recompute else "")
    report = run_json("-C", work, "run", "--precision", precision,
                      *(["--recompute"] if recompute else []))
    check(len(report["groups"]) == 2, f"{label}: a base group and a co-batched group: {report['groups']}")
    for group in report["groups"]:
        check(group["precision"] == precision, f"{label}: {group}")
        if group["peak_resident_bytes"] == 0:
            print("SKIP: /proc/self/status has no VmHWM here")
            raise SystemExit(77)
        added = group["peak_resident_bytes"] - group["resident_before_bytes"]
        planned = group["planned_bytes"]
        measured[label, group["models"][0]] = added
        planned_by[label, group["models"][0]] = planned
        error = abs(added - planned) / planned
        print(f"{label} {','.join(group['models'])}: planned {planned / 2**20:.1f} MiB, "
              f"measured {added / 2**20:.1f} MiB above {group['resident_before_bytes'] / 2**20:.1f} "
              f"MiB, error {error:.1%}")
        check(error <= TOLERANCE,
              f"{label} group {group['models']}: plan {planned} bytes, measured {added} "
              f"({error:.1%} apart, more than {TOLERANCE:.0%})")

# Recomputation keeps 1 + L x C/(block) of the activations: the base (batch 16, activations
# most of its memory) needs well under 3/4 of the memory, planned and measured.
for figures, what in ((planned_by, "planned"), (measured, "measured")):
    kept, recomputed = figures["fp32", "base"], figures["fp32 recompute", "base"]
    check(recomputed < 0.75 * kept,
          f"{what}: the base with recompute takes {recomputed} bytes, without {kept}")
