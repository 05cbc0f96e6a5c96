"""The accuracy contract of bf16 (slow suite): the example family trained with
`--precision bf16` reaches the validation accuracy of `--precision fp32`.

Contract: the family's pooled validation accuracy (correct answers over every model's
validation rows: 960 of the base, 60 of each review-*, none of product-lora, which holds
none out) and the base's own (960 rows) are each at most 1 point below fp32's. One-sided:
the two precisions train different trajectories, and bf16 ending above fp32 is no defect
(native bf16 on AVX-512 BF16 gave base 0.9302 against fp32's 0.9187, 11 rows better; the
standard error of an accuracy near 0.92 over 960 rows is 0.9 points). A review-*
model holds out 60 rows, where one row is 1.7 points and the standard error of an
accuracy near 0.85 is 4.6 points, so 1 point cannot be asked of it alone: each must be
at most 5 rows (8.3 points) below, which still fails a broken bf16 path (a model at chance is
20+ rows off). Also checks that every group reports the precision it ran in.
Measured (AVX2 machine, bf16 emulated): base 0.9281 / 0.9229, pooled 0.9017 / 0.8983;
review-lora 0.8833 / 0.8500 (2 rows), the other review-* 0.7667 / 0.7833 (1 row).
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
    allowed = 0.01 if rows >= 960 else 5.0 / rows
    check(bf16 >= fp32 - allowed - 1e-9,
          f"{model}: bf16 validation accuracy {bf16:.4f} vs fp32 {fp32:.4f}")

pooled = {p: sum(accuracy[p][m] * rows for m, rows in VALIDATION_ROWS.items()) /
          sum(VALIDATION_ROWS.values()) for p in accuracy}
print(f"pooled: fp32 {pooled['fp32']:.4f} bf16 {pooled['bf16']:.4f}")
check(pooled["bf16"] >= pooled["fp32"] - 0.01 - 1e-9,
      f"pooled validation accuracy: bf16 {pooled['bf16']:.4f} vs fp32 {pooled['fp32']:.4f}")
