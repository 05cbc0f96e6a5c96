"""Issue #37 (items 6, 7, 11, 12, 14, 15): what scion reads and writes stays inside what
the user named, and values it cannot hold are refused where they are written.

Each section runs on its own and reports its failure; the script fails when any does, so
one regression does not hide another.
- export-runs --format mlflow never writes through a symbolic link planted in an
  existing export (a run's meta.yaml, a run's tags folder), nor init through one planted
  at scion.yaml;
- a fifo where scion reads (the fp32 matmul cache, a dataset) is refused or ignored at
  once instead of blocking forever;
- a JSONL row holding a number beyond a 64-bit float is a data error naming file:line
  and the field (exit 2), in validate and predict --file;
- class weights float32 makes 0 or subnormal, and regression targets whose squares
  overflow float32, are refused at validation with the key path or file:line;
- distinct labels give distinct MLflow metric keys; an experiment name with a newline is
  refused (exit 2);
- predict --seed takes 0..2^64-1 only; tag --delete of an unknown tag suggests a command
  that exists; an unknown keep_best metric is reported once, by name; keep_best on a
  metric its validation data cannot define is reported (validate, run output, record);
  MODEL@N of a version gc removed says so; a broken model folder several bases import is
  one error naming them all.
"""
import json
import os
import shutil
import stat
import subprocess
import sys

from harness import SCION, SOURCE_ROOT, check, run, spec_workspace, temp_dir

LABELLED_SPEC = """
datasets:
  reviews: {path: data/reviews.jsonl, labels: [a/b, a_b]}
models:
  trunk:
    architecture: {type: encoder, layers: 1, width: 16, heads: 2, ffn_width: 32,
                   max_length: 32, tokenizer: byte}
    train: {data: reviews, objective: classification, epochs: 1, batch_size: 16,
            optimizer: {type: adamw, lr: 3.0e-3}, seed: 1%s}
"""

# The same family over the sentiment example's reviews.
SENTIMENT_SPEC = LABELLED_SPEC.replace("labels: [a/b, a_b]", "labels: [negative, positive]")

failures = []


def section(function):
    """Runs one section; a failed check ends the section, not the script."""
    try:
        function()
        print(f"ok: {function.__name__}")
    except SystemExit as e:
        if e.code not in (0, None):
            failures.append(function.__name__)
    except subprocess.TimeoutExpired as e:
        print(f"FAIL: {function.__name__}: scion still running after {e.timeout} s: "
              f"{' '.join(map(str, e.cmd[1:]))}", file=sys.stderr)
        failures.append(function.__name__)


def labelled_family(train_extra=""):
    """A trained one-model family whose labels are 'a/b' and 'a_b'."""
    work = temp_dir()
    os.makedirs(os.path.join(work, "data"))
    rows = []
    for i in range(48):
        label = "a/b" if i % 2 else "a_b"
        rows.append(json.dumps({"text": f"{'bad' if i % 2 else 'good'} item {i}", "label": label}))
    with open(os.path.join(work, "data", "reviews.jsonl"), "w") as f:
        f.write("\n".join(rows) + "\n")
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(LABELLED_SPEC % train_extra)
    rc, _, err = run("run", cwd=work)
    check(rc == 0, f"run: {err}")
    return work


family = labelled_family()


def run_folders(root, experiment):
    folder = os.path.join(root, experiment)
    return [os.path.join(folder, d) for d in sorted(os.listdir(folder))
            if os.path.isdir(os.path.join(folder, d))]


def mlflow_export_never_follows_links():
    root = os.path.join(temp_dir(), "mlruns")
    rc, _, err = run("export-runs", "--format", "mlflow", root, cwd=family)
    check(rc == 0, f"first export: {err}")
    outside = temp_dir()
    victim = os.path.join(outside, "victim.txt")
    with open(victim, "w") as f:
        f.write("precious\n")
    spill = os.path.join(outside, "spill")
    os.makedirs(spill)
    run_dir = run_folders(root, "1")[0]
    os.remove(os.path.join(run_dir, "meta.yaml"))
    os.symlink(victim, os.path.join(run_dir, "meta.yaml"))
    rc, _, err = run("export-runs", "--format", "mlflow", root, cwd=family)
    check(rc == 0, f"export over a linked meta.yaml: {err}")
    check(open(victim).read() == "precious\n", "export wrote through meta.yaml's link")
    check(stat.S_ISREG(os.lstat(os.path.join(run_dir, "meta.yaml")).st_mode),
          "the run's meta.yaml is a file of its own again")
    tags = os.path.join(run_dir, "tags")
    for name in os.listdir(tags):
        os.remove(os.path.join(tags, name))
    os.rmdir(tags)
    os.symlink(spill, tags)
    rc, _, err = run("export-runs", "--format", "mlflow", root, cwd=family)
    check(rc == 2, f"a linked tags folder is refused (exit 2), got {rc}: {err}")
    check(tags in err and "symbolic link" in err, f"the message names the link: {err}")
    check(os.listdir(spill) == [], f"export wrote into the link's target: {os.listdir(spill)}")


def mlflow_keys_are_distinct_per_label():
    rc, _, err = run("eval", "trunk", "--data", "reviews", cwd=family)
    check(rc == 0, f"eval: {err}")
    root = os.path.join(temp_dir(), "mlruns")
    rc, _, err = run("export-runs", "--format", "mlflow", root, cwd=family)
    check(rc == 0, f"export: {err}")
    keys = set()
    for run_dir in run_folders(root, "1"):
        keys |= set(os.listdir(os.path.join(run_dir, "metrics")))
    check({"per_class.a_x2Fb.f1", "per_class.a_b.f1"} <= keys,
          f"'a/b' and 'a_b' keep distinct metric keys: {sorted(keys)}")


def mlflow_refuses_an_experiment_name_with_a_newline():
    root = os.path.join(temp_dir(), "mlruns")
    rc, _, err = run("export-runs", "--format", "mlflow", root, "--experiment", "two\nlines",
                     cwd=family)
    check(rc == 2, f"a name with a newline is refused (exit 2), got {rc}: {err}")
    check("--experiment" in err and "control character" in err, f"the message says why: {err}")
    check(not os.path.exists(root), "nothing is written for a refused name")


def init_never_writes_through_a_link():
    work = temp_dir()
    outside = os.path.join(temp_dir(), "outside.yaml")
    os.symlink(outside, os.path.join(work, "scion.yaml"))  # dangling: init sees no file
    rc, _, err = run("init", work)
    check(rc == 0, f"init: {err}")
    check(not os.path.exists(outside), "init wrote through a link planted at scion.yaml")
    check(stat.S_ISREG(os.lstat(os.path.join(work, "scion.yaml")).st_mode),
          "scion.yaml is a file of its own")


def make_fifo(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.mkfifo(path)


def matmul_cache_fifo_is_ignored():
    cache = temp_dir()
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    probe = subprocess.run([SCION, "--json", "--version"], env=env, capture_output=True,
                           text=True, timeout=600)
    how = json.loads(probe.stdout)["cpu"]["fp32_matmul"]["how"]
    if "cached in" not in how:
        print(f"skip: this machine never reads the matmul cache ({how})")
        return
    fifo = os.path.join(cache, "scion", "fp32-matmul-choice.txt")
    os.remove(fifo)
    make_fifo(fifo)
    proc = subprocess.run([SCION, "--version"], env=env, capture_output=True, text=True,
                          timeout=120)
    check(proc.returncode == 0, f"--version with a fifo as the cache: {proc.stderr}")
    check("fifo" in proc.stderr and fifo in proc.stderr, f"a warning names it: {proc.stderr}")
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the fifo is left as it was, not replaced")


def data_fifo_is_refused():
    fifo = os.path.join(temp_dir(), "pipe.jsonl")
    make_fifo(fifo)
    for command in (["eval", "trunk", "--data", fifo], ["predict", "trunk", "--file", fifo]):
        rc, _, err = run(*command, cwd=family, timeout=120)
        check(rc == 2, f"{command[0]}: a fifo as data is refused (exit 2), got {rc}: {err}")
        check("fifo" in err and fifo in err, f"{command[0]}: the message says what it is: {err}")


def out_of_range_number_is_a_data_error():
    work = spec_workspace("""
datasets:
  reviews: {path: data/rows.jsonl, labels: [neg, pos]}
models:
  trunk:
    architecture: {type: encoder, layers: 1, width: 16, heads: 2, ffn_width: 32,
                   max_length: 32, tokenizer: byte}
    train: {data: reviews, objective: classification, epochs: 1, batch_size: 16}
""", data=())
    rows = os.path.join(work, "data", "rows.jsonl")
    with open(rows, "w") as f:
        f.write('{"text": "fine", "label": "pos"}\n{"text":"x","label":"pos","extra":1e400}\n')
    rc, _, err = run("validate", cwd=work)
    check(rc == 2, f"validate: exit 2 for 1e400, got {rc}: {err}")
    check("rows.jsonl:2:" in err and "'extra'" in err and "1e400" in err,
          f"validate names file:line and the field: {err}")
    check("internal error" not in err, f"no internal error: {err}")
    rc, _, err = run("predict", "trunk", "--file", rows, cwd=family)
    check(rc == 2, f"predict --file: exit 2 for 1e400, got {rc}: {err}")
    check("rows.jsonl:2:" in err and "'extra'" in err, f"predict names file:line and field: {err}")


def class_weights_float32_cannot_hold_are_refused():
    for weights in ("[1e-46, 1e-46]", "[1e-45, 1e-45]"):
        work = spec_workspace(SENTIMENT_SPEC % f", class_weights: {weights}",
                              data=("reviews.jsonl",))
        rc, _, err = run("validate", cwd=work)
        check(rc == 2, f"class_weights {weights}: exit 2, got {rc}: {err}")
        check("models.trunk.train.class_weights[0]" in err and "float32" in err,
              f"class_weights {weights}: the key path and float32's range: {err}")


def regression_target_beyond_float32_is_refused():
    work = spec_workspace("""
datasets:
  scores: {path: data/scores.jsonl, label_type: number}
  corpus: {path: data/scores.jsonl, format: text}
models:
  trunk:
    architecture: {type: encoder, layers: 1, width: 16, heads: 2, ffn_width: 32,
                   max_length: 32, tokenizer: byte}
    train: {data: corpus, objective: mlm, steps: 2, batch_size: 2}
  score:
    from: trunk
    adapt: {head: {task: regression}}
    train: {data: scores, steps: 2, batch_size: 2}
""", data=())
    with open(os.path.join(work, "data", "scores.jsonl"), "w") as f:
        f.write('{"text": "a", "label": 1.5}\n{"text": "b", "label": 1e30}\n')
    rc, _, err = run("validate", cwd=work)
    check(rc == 2, f"a target of 1e30: exit 2, got {rc}: {err}")
    check("scores.jsonl:2" in err and "float32" in err, f"file:line and the range: {err}")


def seed_outside_64_bits_is_refused():
    for seed in ("-1", "18446744073709551616", ""):
        rc, _, err = run("predict", "trunk", "--generate", "--text", "x", "--seed", seed,
                         cwd=family)
        check(rc == 2, f"--seed {seed!r}: exit 2, got {rc}: {err}")
        check("18446744073709551615" in err, f"--seed {seed!r}: the accepted range: {err}")


def tag_delete_suggests_a_command_that_exists():
    rc, _, err = run("tag", "--delete", "no-such-tag", cwd=family)
    check(rc == 2, f"tag --delete of an unknown tag: exit 2, got {rc}: {err}")
    check("--list" not in err and "`scion tag`" in err, f"suggests what exists: {err}")


def unknown_keep_best_is_reported_once_by_name():
    work = spec_workspace(SENTIMENT_SPEC % ", validation: reviews, keep_best: val_bogus",
                          data=("reviews.jsonl",))
    rc, _, err = run("validate", cwd=work)
    check(rc == 2, f"keep_best: val_bogus: exit 2, got {rc}: {err}")
    check("val_bogus" in err and "records no  in" not in err, f"no empty metric name: {err}")


def broken_model_folder_is_reported_once():
    work = temp_dir()
    shutil.copytree(os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf", "tiny-bert"),
                    os.path.join(work, "bert"))
    with open(os.path.join(work, "bert", "config.json"), "w") as f:
        f.write('{"model_type": "bert", "hidden_size": ')
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write("models:\n  first:\n    import: bert\n  second:\n    import: ./bert\n")
    rc, _, err = run("validate", cwd=work)
    check(rc == 2, f"a broken config.json: exit 2, got {rc}: {err}")
    errors = [line for line in err.splitlines() if ": error: " in line]
    check(len(errors) == 1 and "config.json" in errors[0] and "'second'" in errors[0],
          f"one error for the folder, naming both models that import it: {err}")


def config_json_number_out_of_range_names_the_key():
    work = temp_dir()
    folder = os.path.join(work, "bert")
    shutil.copytree(os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf", "tiny-bert"), folder)
    with open(os.path.join(folder, "config.json")) as f:
        text = f.read()
    with open(os.path.join(folder, "config.json"), "w") as f:
        f.write(text.replace('"layer_norm_eps": 1e-12', '"layer_norm_eps": 1e400'))
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write("models:\n  bert:\n    import: bert\n")
    rc, _, err = run("validate", cwd=work)
    check(rc == 2, f"1e400 in config.json: exit 2, got {rc}: {err}")
    check("field 'layer_norm_eps' holds 1e400" in err and "out_of_range" not in err,
          f"names the key, not nlohmann's exception: {err}")


def small_workspace(spec, rows):
    """A folder with SPEC and data/reviews.jsonl of `rows` (label, text) pairs."""
    work = temp_dir()
    os.makedirs(os.path.join(work, "data"))
    with open(os.path.join(work, "data", "reviews.jsonl"), "w") as f:
        for label, text in rows:
            f.write(json.dumps({"text": text, "label": label}) + "\n")
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(spec)
    return work


def keep_best_undefined_metric_is_reported():
    spec = SENTIMENT_SPEC.replace(
        "datasets:\n", "datasets:\n  dev: {path: data/dev.jsonl, labels: [negative, positive]}\n") \
        % ", validation: dev, keep_best: val_auc"
    work = small_workspace(spec, [("positive" if i % 2 else "negative", f"text {i}")
                                  for i in range(32)])
    with open(os.path.join(work, "data", "dev.jsonl"), "w") as f:
        f.write('{"text": "only one class", "label": "positive"}\n' * 4)
    rc, out, err = run("validate", cwd=work)
    check(rc == 0, f"validate: {err}")
    check("keep_best" in out + err and "val_auc is undefined" in out + err,
          f"validate warns that val_auc is undefined on a one-class dev set: {out}{err}")
    rc, out, err = run("--json", "run", cwd=work)
    check(rc == 0, f"run: {err}")
    model = next(m for m in json.loads(out)["models"] if m["model"] == "trunk")
    check(model["kept"] is None and "val_auc had no value" in model.get("keep_best_unmet", ""),
          f"the run's output says keep_best chose nothing: {model}")
    log = json.loads(run("--json", "lineage", "log", "trunk", cwd=work)[1])["runs"]
    check(any("val_auc had no value" in r.get("message", "") for r in log),
          f"the run's record says so: {log}")


def gc_removed_version_says_so():
    work = small_workspace(SENTIMENT_SPEC % "", [("positive" if i % 2 else "negative", f"t {i}")
                                                 for i in range(32)])
    rc, _, err = run("run", cwd=work)
    check(rc == 0, f"first run: {err}")
    with open(os.path.join(work, "scion.yaml")) as f:
        spec = f.read()
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(spec.replace("lr: 3.0e-3", "lr: 2.0e-3"))
    rc, _, err = run("run", cwd=work)
    check(rc == 0, f"second run: {err}")
    rc, _, err = run("gc", "--keep", "1", cwd=work)
    check(rc == 0, f"gc --keep 1: {err}")
    rc, _, err = run("export", "trunk@1", "-o", os.path.join(work, "first.safetensors"), cwd=work)
    check(rc == 2, f"export trunk@1 after gc: exit 2, got {rc}: {err}")
    check("removed by `scion gc" in err and "scion tag" in err,
          f"says gc removed it and how to keep versions: {err}")


for test in (mlflow_export_never_follows_links, mlflow_keys_are_distinct_per_label,
             mlflow_refuses_an_experiment_name_with_a_newline, init_never_writes_through_a_link,
             matmul_cache_fifo_is_ignored,
             data_fifo_is_refused, out_of_range_number_is_a_data_error,
             class_weights_float32_cannot_hold_are_refused,
             regression_target_beyond_float32_is_refused, seed_outside_64_bits_is_refused,
             tag_delete_suggests_a_command_that_exists,
             unknown_keep_best_is_reported_once_by_name, keep_best_undefined_metric_is_reported,
             gc_removed_version_says_so, broken_model_folder_is_reported_once,
             config_json_number_out_of_range_names_the_key):
    section(test)
if failures:
    print(f"FAIL: {len(failures)} sections: {', '.join(failures)}", file=sys.stderr)
    sys.exit(1)
