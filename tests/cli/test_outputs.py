"""Outputs that other tools read: `lineage metrics` as a table, CSV and JSON, checked
against the store's own rows."""
import csv
import io
import json
import os
import sqlite3

from harness import check, run, run_json
from report_family import MODELS, trained_family

work, tested = trained_family()
db = sqlite3.connect(os.path.join(work, ".scion", "lineage.db"))


def stored_steps(run_id):
    rows = db.execute("SELECT step, loss, lr, validation FROM run_metrics WHERE run_id = ? ORDER BY step",
                      (run_id,)).fetchall()
    return [(step, loss, lr, json.loads(validation)) for step, loss, lr, validation in rows]


# --- lineage metrics ------------------------------------------------------------------------
made_by = {}
for model in MODELS:
    (run_id,) = db.execute("SELECT r.id FROM runs r JOIN models m ON m.id = r.model_id WHERE m.name = ? "
                           "AND r.kind IN ('train', 'adapt') AND r.recipe_hash = m.recipe_hash", (model,)).fetchone()
    made_by[model] = run_id
    out = run_json("lineage", "metrics", model, cwd=work)
    check(out["model"] == model and out["run"] == run_id, f"metrics of {model}'s training run: {out['run']}")
    steps = stored_steps(run_id)
    check([s["step"] for s in out["steps"]] == [s[0] for s in steps], f"{model}: every stored step")
    for got, (step, loss, lr, validation) in zip(out["steps"], steps):
        check(abs(got["loss"] - loss) < 1e-12 and abs(got["lr"] - lr) < 1e-12 and got["validation"] == validation,
              f"{model} step {step}: {got} vs the store's {(loss, lr, validation)}")

rc, out, err = run("lineage", "metrics", "a", "--format", "csv", cwd=work)
check(rc == 0, f"metrics --format csv: {err}")
rows = list(csv.DictReader(io.StringIO(out)))
steps = stored_steps(made_by["a"])
check(list(rows[0].keys()) == ["step", "loss", "lr", "val_accuracy", "val_loss"], f"CSV header: {list(rows[0])}")
check(len(rows) == len(steps), "a CSV row per step")
for row, (step, loss, lr, validation) in zip(rows, steps):
    check(int(row["step"]) == step and abs(float(row["loss"]) - loss) < 1e-6 * max(1, abs(loss)), f"CSV row {row}")
    check((row["val_loss"] == "") == ("val_loss" not in validation), f"an empty field where none was recorded: {row}")
check(any(r["val_loss"] for r in rows), "validation rows carry values")

rc, out, _ = run("lineage", "metrics", "a", cwd=work)
check(rc == 0 and out.splitlines()[0].split() == ["step", "loss", "lr", "val_accuracy", "val_loss"], f"table: {out[:200]}")
check(len(out.splitlines()) == len(steps) + 1, "a table row per step")
check(" 0.001 " in out, "values with float32's precision (lr 0.001)")

rc, _, err = run("lineage", "metrics", "a", "--run", str(made_by["base"]), cwd=work)
check(rc == 2 and f"its training runs are {made_by['a']}" in err, f"another model's run is refused: {rc} {err}")
(test_run,) = db.execute("SELECT r.id FROM runs r JOIN models m ON m.id = r.model_id WHERE m.name = 'a' "
                         "AND r.kind = 'test' LIMIT 1").fetchone()
rc, _, err = run("lineage", "metrics", "a", "--run", str(test_run), cwd=work)
check(rc == 2 and "test run" in err, f"a test run has no metrics: {rc} {err}")
rc, _, err = run("--json", "lineage", "metrics", "a", "--format", "csv", cwd=work)
check(rc == 2 and "two formats" in err, f"--json with --format csv is a usage error: {rc} {err}")
rc, _, err = run("lineage", "metrics", "nope", cwd=work)
check(rc == 2 and "no model 'nope'" in err, f"unknown model: {rc} {err}")
print("ok")
