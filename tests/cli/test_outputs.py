"""Outputs that other tools read: `lineage metrics` as a table, CSV and JSON, checked
against the store's own rows; JUnit XML valid against junit-10.xsd (xmllint), with
assertion violations as test cases, written to a file or to stdout."""
import csv
import io
import json
import re
import os
import shutil
import sqlite3
import subprocess
import xml.etree.ElementTree as ET

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
# A classifier's validation metrics (docs/spec.md, "Validation metrics"), a column each.
VALIDATION = ["val_accuracy", "val_auc", "val_ece", "val_f1", "val_loss", "val_mcc", "val_micro_f1",
              "val_weighted_f1"]
check(list(rows[0].keys()) == ["step", "loss", "lr", *VALIDATION], f"CSV header: {list(rows[0])}")
check(len(rows) == len(steps), "a CSV row per step")
for row, (step, loss, lr, validation) in zip(rows, steps):
    check(int(row["step"]) == step and abs(float(row["loss"]) - loss) < 1e-6 * max(1, abs(loss)), f"CSV row {row}")
    check((row["val_loss"] == "") == ("val_loss" not in validation), f"an empty field where none was recorded: {row}")
check(any(r["val_loss"] for r in rows), "validation rows carry values")

rc, out, _ = run("lineage", "metrics", "a", cwd=work)
check(rc == 0 and out.splitlines()[0].split() == ["step", "loss", "lr", *VALIDATION], f"table: {out[:200]}")
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

# --- JUnit ----------------------------------------------------------------------------------
XSD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "junit-10.xsd")
junit = os.path.join(work, "report.xml")
rc, out, err = run("test", "--junit", junit, cwd=work)
check(rc in (0, 1), f"test --junit: {rc} {err}")
if shutil.which("xmllint"):
    lint = subprocess.run(["xmllint", "--noout", "--schema", XSD, junit], capture_output=True, text=True)
    check(lint.returncode == 0, f"the JUnit report validates against junit-10.xsd:\n{lint.stderr}")
    with open(junit) as f:
        bad = f.read().replace("<system-out>", '<properties><property name="x" value="y"/></properties><system-out>', 1)
    lint = subprocess.run(["xmllint", "--noout", "--schema", XSD, "-"], input=bad, capture_output=True, text=True)
    check(lint.returncode != 0 and "Element 'properties': This element is not expected" in lint.stderr,
          f"the schema refuses <properties> in a testcase: {lint.stderr}")
else:
    print("note: no xmllint (Debian libxml2-utils); the schema check was skipped")
root = ET.parse(junit).getroot()
suites = {s.get("name"): s for s in root.findall("testsuite")}
check(set(suites) == {"behavioural tests", "model assertions"}, f"two suites: {sorted(suites)}")
for suite in suites.values():
    check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.get("timestamp") or ""), f"timestamp: {suite.attrib}")
    check(float(suite.get("time")) > 0 and suite.get("hostname"), f"time and hostname: {suite.attrib}")
cases = {(c.get("classname"), c.get("name")): c for c in suites["behavioural tests"].findall("testcase")}
check(set(cases) == {(t["model"], t["test"]) for t in tested["tests"]}, f"a testcase per test and model: {sorted(cases)}")
for t in tested["tests"]:
    c = cases[(t["model"], t["test"])]
    check((c.find("failure") is not None) == t["exceeded"], f"failure exactly when exceeded: {t['test']}/{t['model']}")
    figures = dict(line.split(": ", 1) for line in c.find("system-out").text.splitlines())
    check(int(figures["cases"]) == t["cases"] and int(figures["failures"]) == t["failures"], f"figures: {figures}")
assertion_cases = suites["model assertions"].findall("testcase")
check({(c.get("classname"), c.get("name")) for c in assertion_cases} == {(m, "praise-is-positive") for m in MODELS},
      f"a testcase per assertion and model: {[c.attrib for c in assertion_cases]}")
violated = {v["model"] for v in tested["violations"]["top"]}
for c in assertion_cases:
    if c.get("classname") in violated:
        check(c.find("failure") is not None, f"a violated assertion fails: {c.attrib}")

rc, out, err = run("test", "--junit", "-", cwd=work)
check(rc in (0, 1) and out.startswith("<?xml") and "family matrix" not in out, f"--junit - writes only XML to stdout: {out[:200]}")
check(ET.fromstring(out).tag == "testsuites", "stdout parses as the JUnit document")
rc, out, err = run("--json", "test", "--junit", "-", cwd=work)
check(rc == 2 and "both write to stdout" in err, f"--junit - with --json is a usage error: {rc} {err}")

# --- `-` for stdout ---------------------------------------------------------------------------
import subprocess as sp
from harness import SCION
piped = sp.run([SCION, "export", "a", "-o", "-"], cwd=work, capture_output=True)
check(piped.returncode == 0, f"export -o -: {piped.stderr.decode()}")
rc, _, err = run("export", "a", "-o", "a.safetensors", cwd=work)
check(rc == 0, f"export -o a.safetensors: {err}")
with open(os.path.join(work, "a.safetensors"), "rb") as f:
    on_disk = f.read()
header = lambda data: 8 + int.from_bytes(data[:8], "little")
check(piped.stdout[header(piped.stdout):] == on_disk[header(on_disk):] and len(piped.stdout) > 1000,
      "export -o - writes the same tensors to stdout")
rc, _, err = run("--json", "export", "a", "-o", "-", cwd=work)
check(rc == 2 and "both write to stdout" in err, f"export -o - with --json is a usage error: {rc} {err}")
print("ok")
