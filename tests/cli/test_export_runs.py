"""`scion export-runs --format mlflow DIR`: MLflow's file-store layout, checked strictly
against the store; with `--mlflow`, loaded by MLflow itself (mlflow.tracking.MlflowClient)
from the Python named by SCION_MLFLOW_PYTHON or the worktree's .mlflow-venv (exit 77, skip,
without one)."""
import json
import os
import re
import subprocess
import sys

from harness import SOURCE_ROOT, check, run, run_json, temp_dir

with_mlflow = "--mlflow" in sys.argv[3:]
mlflow_python = os.environ.get("SCION_MLFLOW_PYTHON") or os.path.join(SOURCE_ROOT, ".mlflow-venv", "bin", "python")
if with_mlflow:
    probe = subprocess.run([mlflow_python, "-c", "import mlflow"], capture_output=True) \
        if os.path.exists(mlflow_python) else None
    if probe is None or probe.returncode != 0:
        print(f"SKIP: no Python with mlflow at {mlflow_python} (set SCION_MLFLOW_PYTHON)")
        sys.exit(77)

work = os.path.join(temp_dir(), "family")
rc, _, err = run("init", work)
check(rc == 0, f"init: {err}")
rc, _, err = run("run", cwd=work)
check(rc in (0, 1), f"run: {err}")

target = os.path.join(work, "mlruns")
summary = run_json("export-runs", "--format", "mlflow", target, cwd=work)
runs = [r for r in run_json("lineage", "log", "--all", cwd=work)["runs"] if r["kind"] != "test"]
tree = {m["model"]: m for m in run_json("lineage", "tree", cwd=work)["models"]}
check(summary["runs_exported"] == len(runs) == 3, f"exports the three training runs: {summary}, {runs}")


def meta(path):
    """meta.yaml as {key: text}: the flat `key: value` lines MLflow writes."""
    with open(path) as f:
        lines = f.read().splitlines()
    pairs = dict(line.split(": ", 1) for line in lines)
    return {k: v[1:-1].replace("''", "'") if v.startswith("'") else v for k, v in pairs.items()}


def read(path):
    with open(path) as f:
        return f.read()


check(sorted(os.listdir(target)) == ["0", "1"], f"the tracking root: {os.listdir(target)}")
check(meta(os.path.join(target, "0", "meta.yaml"))["name"] == "Default", "experiment 0 is Default")
experiment = meta(os.path.join(target, "1", "meta.yaml"))
check(experiment["experiment_id"] == "1" and experiment["name"] == "scion"
      and experiment["lifecycle_stage"] == "active"
      and experiment["artifact_location"] == "file://" + os.path.join(target, "1"), f"{experiment}")
run_dirs = sorted(d for d in os.listdir(os.path.join(target, "1")) if d != "meta.yaml")
check(len(run_dirs) == 3 and all(re.fullmatch(r"[0-9a-f]{32}", d) for d in run_dirs), f"{run_dirs}")

by_store_run = {}
for run_id in run_dirs:
    folder = os.path.join(target, "1", run_id)
    check(sorted(os.listdir(folder)) == ["artifacts", "meta.yaml", "metrics", "params", "tags"],
          f"run folder: {os.listdir(folder)}")
    m = meta(os.path.join(folder, "meta.yaml"))
    check(m["run_id"] == m["run_uuid"] == run_id and m["experiment_id"] == "1" and m["status"] == "3"
          and m["lifecycle_stage"] == "active" and int(m["start_time"]) > 1.7e12
          and int(m["end_time"]) >= int(m["start_time"]), f"run meta: {m}")
    tags = {t: read(os.path.join(folder, "tags", t)) for t in os.listdir(os.path.join(folder, "tags"))}
    model = tags["scion.model"]
    by_store_run[int(tags["scion.run"])] = (model, folder, tags)
    check(tags["scion.parent"] == (tree[model]["parent"] or "") and tags["scion.method"] == tree[model]["method"]
          and tags["scion.recipe_hash"] == tree[model]["recipe_hash"], f"tags of {model}: {tags}")
    params = {p: read(os.path.join(folder, "params", p)) for p in os.listdir(os.path.join(folder, "params"))}
    check(params.get("train.optimizer.lr") == "0.003" and params.get("train.batch_size") == "16"
          and params.get("train.data.format") == "jsonl" and params.get("name") == model,
          f"the recipe as params: {params}")
check(sorted(by_store_run) == sorted(r["run"] for r in runs), "one MLflow run per store run")

# Metrics: every point of `lineage metrics`, as "<timestamp> <value> <step>" lines.
for store_run, (model, folder, tags) in by_store_run.items():
    stored = run_json("lineage", "metrics", model, "--run", str(store_run), cwd=work)["steps"]
    check(stored, f"{model} has metrics")
    lines = read(os.path.join(folder, "metrics", "loss")).splitlines()
    points = [(float(v), int(s)) for _, v, s in (line.split(" ") for line in lines)]
    expected = [(s["loss"], s["step"]) for s in stored if s["loss"] is not None]
    check(len(points) == len(expected) and all(abs(a - b) <= 1e-6 * max(1, abs(b)) and sa == sb
                                               for (a, sa), (b, sb) in zip(points, expected)),
          f"{model}'s loss: {points[:3]} vs {expected[:3]}")

# A second export into a folder that is not empty is refused.
rc, _, err = run("export-runs", "--format", "mlflow", target, cwd=work)
check(rc == 2 and "not empty" in err, f"export into a full folder: {rc} {err}")

if with_mlflow:
    script = """
import json, sys
from mlflow.tracking import MlflowClient
client = MlflowClient(tracking_uri="file://" + sys.argv[1])
exp = client.get_experiment_by_name("scion")
out = []
for r in client.search_runs([exp.experiment_id]):
    history = client.get_metric_history(r.info.run_id, "loss")
    out.append({"model": r.data.tags["scion.model"], "params": r.data.params,
                "status": r.info.status, "loss": [[m.step, m.value] for m in history]})
print(json.dumps(out))
"""
    # Recent MLflow (3.x) keeps the file store in maintenance mode, behind this switch.
    proc = subprocess.run([mlflow_python, "-c", script, target], capture_output=True, text=True,
                          env={**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true"})
    check(proc.returncode == 0, f"MlflowClient reads the export: {proc.stderr[-2000:]}")
    seen = json.loads(proc.stdout.splitlines()[-1])
    check(sorted(r["model"] for r in seen) == sorted(tree), f"MLflow sees the runs: {seen}")
    for r in seen:
        check(r["status"] == "FINISHED" and r["params"].get("train.optimizer.lr") == "0.003" and r["loss"],
              f"MLflow's view of {r['model']}: {r}")
    print(f"ok: MLflow reads {len(seen)} runs with their params and loss histories")
else:
    print(f"ok: {summary['runs_exported']} runs in MLflow's layout, {summary['metric_points']} metric points")
