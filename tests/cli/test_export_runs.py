"""`scion export-runs --format mlflow DIR`: MLflow's file-store layout, checked strictly
against the store, as a living mirror (exported again: unchanged; after new runs: only
they are added); training, test and eval runs with per-step times, nesting and artifacts.
With `--mlflow`, a store exported three times is read by MLflow itself
(mlflow.tracking.MlflowClient) from the Python named by SCION_MLFLOW_PYTHON or the
worktree's .mlflow-venv (exit 77, skip, without one)."""
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
rc, _, err = run("eval", "trunk-lora", "--data", "reviews", cwd=work)
check(rc == 0, f"eval: {err}")

target = os.path.join(work, "mlruns")
summary = run_json("export-runs", "--format", "mlflow", target, cwd=work)
store_runs = run_json("lineage", "log", "--all", cwd=work)["runs"]
runs = [r for r in store_runs if r["kind"] != "test"]
tests = [r for r in store_runs if r["kind"] == "test"]
tree = {m["model"]: m for m in run_json("lineage", "tree", cwd=work)["models"]}
check(len(runs) == 3 and len(tests) == 3, f"three training and three test runs: {store_runs}")
check(summary["runs_exported"] == summary["new_runs"] == len(runs) + len(tests) + 1,
      f"exports every run and the evaluation: {summary}")
# The tensors each model introduced (BitFit's retrained biases are its own).
check(summary["artifacts"] == 3, f"each model's own tensors as an artifact: {summary}")


def meta(path):
    """meta.yaml as {key: text}: the flat `key: value` lines MLflow writes."""
    with open(path) as f:
        lines = f.read().splitlines()
    pairs = dict(line.split(": ", 1) for line in lines)
    return {k: v[1:-1].replace("''", "'") if v.startswith("'") else v for k, v in pairs.items()}


def read(path):
    with open(path) as f:
        return f.read()


def snapshot(root):
    """Every file under root with its bytes."""
    out = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = f.read()
    return out


check(sorted(os.listdir(target)) == ["0", "1"], f"the tracking root: {os.listdir(target)}")
check(meta(os.path.join(target, "0", "meta.yaml"))["name"] == "Default", "experiment 0 is Default")
experiment = meta(os.path.join(target, "1", "meta.yaml"))
check(experiment["experiment_id"] == "1" and experiment["name"] == "scion"
      and experiment["lifecycle_stage"] == "active"
      and experiment["artifact_location"] == "file://" + os.path.join(target, "1"), f"{experiment}")
run_dirs = sorted(d for d in os.listdir(os.path.join(target, "1")) if d != "meta.yaml")
check(len(run_dirs) == summary["runs_exported"] and all(re.fullmatch(r"[0-9a-f]{32}", d) for d in run_dirs),
      f"{run_dirs}")

by_store_run, by_kind = {}, {}
for run_id in run_dirs:
    folder = os.path.join(target, "1", run_id)
    check({"artifacts", "meta.yaml", "metrics", "tags"} <= set(os.listdir(folder)),
          f"run folder: {os.listdir(folder)}")
    m = meta(os.path.join(folder, "meta.yaml"))
    check(m["run_id"] == m["run_uuid"] == run_id and m["experiment_id"] == "1" and m["status"] == "3"
          and m["lifecycle_stage"] == "active" and int(m["start_time"]) > 1.7e12
          and int(m["end_time"]) >= int(m["start_time"]), f"run meta: {m}")
    tags = {t: read(os.path.join(folder, "tags", t)) for t in os.listdir(os.path.join(folder, "tags"))}
    by_kind.setdefault(tags["scion.kind"], []).append((run_id, folder, tags, m))
    if "scion.run" in tags:
        by_store_run[int(tags["scion.run"])] = (tags["scion.model"], folder, tags, m)
check(sorted(by_store_run) == sorted(r["run"] for r in store_runs), "one MLflow run per store run")
made_by = {}  # model -> MLflow id of the run that made its version
for model, folder, tags, m in (v for v in by_store_run.values() if v[2]["scion.kind"] != "test"):
    made_by[model] = os.path.basename(folder)
    check(tags["scion.parent"] == (tree[model]["parent"] or "") and tags["scion.method"] == tree[model]["method"]
          and tags["scion.recipe_hash"] == tree[model]["recipe_hash"], f"tags of {model}: {tags}")
    params = {p: read(os.path.join(folder, "params", p)) for p in os.listdir(os.path.join(folder, "params"))}
    check(params.get("train.optimizer.lr") == "0.003" and params.get("train.batch_size") == "16"
          and params.get("train.data.format") == "jsonl" and params.get("name") == model,
          f"the recipe as params: {params}")
    artifact = os.path.join(folder, "artifacts", model + ".safetensors")
    check(os.path.getsize(artifact) > 0, f"{model}'s own tensors as an artifact")

# Metrics: every point of `lineage metrics`, as "<timestamp> <value> <step>" lines, each at
# the time its step ended (within the run).
for store_run, (model, folder, tags, m) in by_store_run.items():
    if tags["scion.kind"] == "test":
        continue
    stored = run_json("lineage", "metrics", model, "--run", str(store_run), cwd=work)["steps"]
    check(stored, f"{model} has metrics")
    lines = read(os.path.join(folder, "metrics", "loss")).splitlines()
    points = [(int(t), float(v), int(s)) for t, v, s in (line.split(" ") for line in lines)]
    expected = [(s["loss"], s["step"]) for s in stored if s["loss"] is not None]
    check(len(points) == len(expected) and all(abs(a - b) <= 1e-6 * max(1, abs(b)) and sa == sb
                                               for (_, a, sa), (b, sb) in zip(points, expected)),
          f"{model}'s loss: {points[:3]} vs {expected[:3]}")
    times = [t for t, _, _ in points]
    check(times == sorted(times) and int(m["start_time"]) <= times[0] and times[-1] <= int(m["end_time"])
          and times[-1] > int(m["start_time"]), f"{model}'s steps carry their own times: {times[:3]}...")

# Test runs: each test's failure rate, nested under the run that made the version tested.
for run_id, folder, tags, m in by_kind["test"]:
    metrics = set(os.listdir(os.path.join(folder, "metrics")))
    check({"failure_rate.praise-is-positive", "cases.praise-is-positive", "violations.confident"}
          <= metrics, f"a test run's metrics: {metrics}")
    check(tags["mlflow.parentRunId"] == made_by[tags["scion.model"]], f"nested: {tags}")
[(eval_id, eval_folder, eval_tags, _)] = by_kind["eval"]
check(eval_tags["mlflow.parentRunId"] == made_by["trunk-lora"] and
      {"accuracy", "macro_f1", "per_class.positive.f1"} <= set(os.listdir(os.path.join(eval_folder, "metrics"))),
      f"the evaluation as a run: {eval_tags}")

# A second export into the same folder changes nothing; after new runs it adds only them.
before = snapshot(target)
again = run_json("export-runs", "--format", "mlflow", target, cwd=work)
check(again["new_runs"] == 0 and again["runs_exported"] == summary["runs_exported"]
      and again["artifacts"] == 0 and snapshot(target) == before, f"a second export: {again}")
rc, _, err = run("adapt", "--force", "trunk-lora", cwd=work)
check(rc == 0, f"adapt --force: {err}")
third = run_json("export-runs", "--format", "mlflow", target, cwd=work)
check(third["new_runs"] == 1 and len(os.listdir(os.path.join(target, "1"))) == len(run_dirs) + 2,
      f"one new run, nothing duplicated: {third}")
# A folder of other files is refused.
other = os.path.join(work, "other")
os.makedirs(other)
with open(os.path.join(other, "notes.txt"), "w") as f:
    f.write("mine")
rc, _, err = run("export-runs", "--format", "mlflow", other, cwd=work)
check(rc == 2 and "neither empty nor an MLflow tracking folder" in err, f"export into another folder: {rc} {err}")

if with_mlflow:
    script = """
import json, sys
from mlflow.tracking import MlflowClient
client = MlflowClient(tracking_uri="file://" + sys.argv[1])
exp = client.get_experiment_by_name("scion")
out = []
for r in client.search_runs([exp.experiment_id]):
    history = client.get_metric_history(r.info.run_id, "loss")
    out.append({"model": r.data.tags["scion.model"], "kind": r.data.tags["scion.kind"],
                "params": r.data.params, "status": r.info.status, "metrics": r.data.metrics,
                "parent": r.data.tags.get("mlflow.parentRunId"), "id": r.info.run_id,
                "artifacts": [a.path for a in client.list_artifacts(r.info.run_id)],
                "loss": [[m.step, m.value, m.timestamp] for m in history]})
print(json.dumps(out))
"""
    # Recent MLflow (3.x) keeps the file store in maintenance mode, behind this switch.
    proc = subprocess.run([mlflow_python, "-c", script, target], capture_output=True, text=True,
                          env={**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true"})
    check(proc.returncode == 0, f"MlflowClient reads the export: {proc.stderr[-2000:]}")
    seen = json.loads(proc.stdout.splitlines()[-1])
    check(len(seen) == len({r["id"] for r in seen}) == third["runs_exported"],
          f"MLflow sees each run once after three exports: {len(seen)} vs {third}")
    training = [r for r in seen if r["kind"] in ("train", "adapt")]
    for r in training:
        check(r["status"] == "FINISHED" and r["params"].get("train.optimizer.lr") == "0.003" and r["loss"]
              and r["model"] + ".safetensors" in r["artifacts"],
              f"MLflow's view of {r['model']}: {r}")
        times = [t for _, _, t in r["loss"]]
        check(times == sorted(times), f"per-step timestamps in order: {times}")
    ids = {r["id"] for r in seen}
    for r in seen:
        if r["kind"] in ("test", "eval"):
            check(r["parent"] in ids, f"a {r['kind']} run is nested under its model's run: {r}")
    evaluation = next(r for r in seen if r["kind"] == "eval")
    check(0 <= evaluation["metrics"]["accuracy"] <= 1, f"the evaluation's metrics: {evaluation}")
    check(any("failure_rate.praise-is-positive" in r["metrics"] for r in seen if r["kind"] == "test"),
          "test failure rates")
    print(f"ok: MLflow reads {len(seen)} runs (twice exported, nothing duplicated) with params, "
          "metrics, nesting and artifacts")
else:
    print(f"ok: {third['runs_exported']} runs in MLflow's layout, exported three times")
