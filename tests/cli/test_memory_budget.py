"""--memory-budget: co-batched training groups split to fit, as `scion plan` shows them.

The example's three descendants that freeze the whole base (review-lora, review-prefix,
review-bottleneck) train as one group; each needs ~15.5 MiB of activations (batch 16 x 64
tokens x 2 layers), so a smaller budget must split that group. `plan` and `adapt/run`
share the grouping (workbench/training_groups.h).
"""
import os

from harness import EXAMPLES, check, run, run_json

SENTIMENT = os.path.join(EXAMPLES, "sentiment")
TRIO = ["review-lora", "review-prefix", "review-bottleneck"]


def groups(*budget):
    plan = run_json("-C", SENTIMENT, "plan", *budget)
    return plan, [g["models"] for g in plan["training_groups"]]


plan, default = groups()
check(plan["memory_budget_bytes"] > 0, f"default budget is half of RAM: {plan['memory_budget_bytes']}")
check(default == [["base"], ["review-bitfit"], TRIO, ["product-lora"]],
      f"by default the trio trains together; the base, BitFit and the second wave alone: {default}")
trio = next(g for g in plan["training_groups"] if g["models"] == TRIO)
models = {m["model"]: m["memory_bytes"]["total"] for m in plan["models"]}
base_params = 4 * next(m for m in plan["models"] if m["model"] == "base")["parameters"]["total"]
check(trio["memory_bytes"] == sum(models[n] - base_params for n in TRIO) + base_params,
      f"the group holds the frozen base once: {trio['memory_bytes']} vs {models}")

plan, split = groups("--memory-budget", "36")
check(plan["memory_budget_bytes"] == 36 << 20, f"budget in MiB: {plan['memory_budget_bytes']}")
check(split == [["base"], ["review-bitfit"], ["review-lora", "review-prefix"],
                ["review-bottleneck"], ["product-lora"]], f"36 MiB splits the trio 2 + 1: {split}")
check(all(g["memory_bytes"] <= 36 << 20 for g in plan["training_groups"] if len(g["models"]) > 1),
      f"every co-batched group fits: {plan['training_groups']}")

_, alone = groups("--memory-budget", "1")
check([["review-lora"], ["review-prefix"], ["review-bottleneck"]] == alone[2:5],
      f"a budget below one job trains each alone: {alone}")

rc, out, _ = run("-C", SENTIMENT, "plan", "--memory-budget", "36")
check(rc == 0 and "training groups" in out and "review-lora, review-prefix  ~" in out,
      f"plan's text shows the split groups:\n{out}")

rc, _, err = run("-C", SENTIMENT, "adapt", "--memory-budget", "0")
check(rc == 2, f"a budget of 0 MiB is a usage error: {rc} {err}")
print("ok")
