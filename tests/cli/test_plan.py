"""scion plan: the example family as a tree, parameter counts, memory and co-batching."""
import os

from harness import EXAMPLES, check, run, run_json, temp_dir

SENTIMENT = os.path.join(EXAMPLES, "sentiment")

rc, out, err = run("-C", SENTIMENT, "plan")
text_plan = out
check(rc == 0, f"plan on the example exits 0, got {rc}: {err}")
for name in ["base", "review-lora", "review-prefix", "review-bottleneck", "review-bitfit",
             "product-lora"]:
    check(name in out, f"{name} appears in the tree:\n{out}")
check("├── review-lora" in out and "└── product-lora" in out, f"box-drawing tree:\n{out}")
check("parent review-lora; inherits frozen: 120,962 from base, 2,048 from review-lora" in out,
      f"product-lora's inheritance is spelt out:\n{out}")
check("review-lora, review-prefix, review-bottleneck  share 120,962 frozen parameters" in out,
      f"co-batching group:\n{out}")

plan = run_json("-C", SENTIMENT, "plan")
models = {m["model"]: m for m in plan["models"]}
check(list(models)[0] == "base", "parents come first")
base = models["base"]
check(base["parameters"]["total"] == base["parameters"]["trainable"] == 120962,
      f"the base trains everything: {base['parameters']}")
lora = models["review-lora"]
# LoRA r=4 on q and v in 2 layers: 2*2*(4*64 + 64*4) = 2048; the base's head classifies.
check(lora["parameters"]["trainable"] == 2048, f"review-lora trainable: {lora['parameters']}")
check(lora["parameters"]["total"] == 120962 + 2048, "total = base (trunk + head) + own")
check(lora["methods"] == ["lora"] and lora["parent"] == "base", f"{lora}")
mem = lora["memory_bytes"]
check(mem["parameters"] == 4 * lora["parameters"]["total"], "4 bytes per parameter")
check(mem["gradients"] == 4 * 2048 and mem["optimizer_state"] == 8 * 2048, "AdamW state")
# batch 16 x length 64 tokens x 4 bytes x (2 layers each keeping 10*64 + 2*256 floats and
# 4 heads x 64 attention probabilities, plus what one pass holds once: 10*64 + 2*256)
check(mem["activations"] == 16 * 64 * 4 * (2 * (640 + 512 + 4 * 64) + (640 + 512)),
      f"activations: {mem}")
check(mem["total"] == sum(mem[k] for k in ("parameters", "gradients", "optimizer_state",
                                           "activations")), "total is the sum")
product = models["product-lora"]
check(product["inherits"] == [{"from": "base", "parameters": 120962},
                              {"from": "review-lora", "parameters": 2048}],
      f"inherits: {product['inherits']}")
groups = [g["models"] for g in plan["cobatch_groups"]]
check(["review-lora", "review-prefix", "review-bottleneck"] in groups, f"groups: {groups}")
check(["review-bitfit"] in groups and ["product-lora"] in groups, f"groups: {groups}")
check(all(len(m["recipe_hash"]) == 64 for m in plan["models"]), "recipe hashes present")

# Weights in memory: every tensor once (trunk + each model's own) vs a copy per model.
own = {"base": 120962, "review-lora": 2048, "product-lora": 2048, "review-prefix": 2048,
       "review-bottleneck": 2192, "review-bitfit": 1474}
check(plan["weights_bytes"]["shared"] == 4 * sum(own.values()), f"shared: {plan['weights_bytes']}")
check(plan["weights_bytes"]["unshared"] == 4 * sum(m["parameters"]["total"] for m in plan["models"]),
      f"unshared: {plan['weights_bytes']}")
check("weights in memory (fp32): 510.8 KiB shared (each tensor once), 2.8 MiB if every model held "
      "its own copy (5.6x less)" in text_plan, f"the text plan reports both:\n{text_plan}")

work = temp_dir()
with open(os.path.join(work, "scion.yaml"), "w", encoding="utf-8") as f:
    f.write("models:\n  base: {architecture: {layers: 0}}\n")
rc, out, err = run("-C", work, "plan")
check(rc == 2 and out == "" and "scion.yaml:2:" in err, f"plan on a broken spec: {rc} {err}")

rc, out, _ = run("plan", "--help")
check(rc == 0 and "Example" in out, "plan --help shows an example")
print("ok")
