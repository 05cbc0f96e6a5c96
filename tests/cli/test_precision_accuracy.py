"""The accuracy contract of bf16 (slow suite): the example family trained with
`--precision bf16` reaches the validation accuracy of `--precision fp32`.

Contract: the family's pooled validation accuracy (correct answers over every model's
validation rows: 960 of the base, 60 of each review-*, none of product-lora, which holds
none out) is within 1 point of fp32's; each model's own is within 1 point plus one of its
validation rows (a review-* model holds out 60 rows, so one row is 1.7 points).
Also checks that the two runs differ in their recipe hashes and report their precision.
"""
import json
import os

from harness import check, copy_example, run, temp_dir

VALIDATION_ROWS = {"base": 960, "review-lora": 60, "review-prefix": 60,
                   "review-bottleneck": 60, "review-bitfit": 60}

accuracy = {}
for precision in ("fp32", "bf16"):
    work = os.path.join(temp_dir(), "sentiment")
    copy_example("sentiment", work)
    # bf16 without bf16 instructions runs slower than fp32: minutes on a busy machine.
    rc, out, err = run("--json", "-C", work, "run", "--precision", precision, timeout=3000)
    check(rc == 0, f"run --precision {precision} exited {rc}\n{err}")
    report = json.loads(out)
    check(all(g["precision"] == precision for g in report["groups"]),
          f"groups of a --precision {precision} run: {report['groups']}")
    accuracy[precision] = {m["model"]: m["val_accuracy"] for m in report["models"]
                           if "val_accuracy" in m}
    check(set(VALIDATION_ROWS) <= set(accuracy[precision]),
          f"validation accuracy missing: {accuracy[precision]}")

for model, rows in VALIDATION_ROWS.items():
    fp32, bf16 = accuracy["fp32"][model], accuracy["bf16"][model]
    print(f"{model}: fp32 {fp32:.4f} bf16 {bf16:.4f}")
    check(abs(fp32 - bf16) <= 0.01 + 1.0 / rows + 1e-9,
          f"{model}: bf16 validation accuracy {bf16:.4f} vs fp32 {fp32:.4f}")

pooled = {p: sum(accuracy[p][m] * rows for m, rows in VALIDATION_ROWS.items()) /
          sum(VALIDATION_ROWS.values()) for p in accuracy}
print(f"pooled: fp32 {pooled['fp32']:.4f} bf16 {pooled['bf16']:.4f}")
check(abs(pooled["fp32"] - pooled["bf16"]) <= 0.01,
      f"pooled validation accuracy: bf16 {pooled['bf16']:.4f} vs fp32 {pooled['fp32']:.4f}")
