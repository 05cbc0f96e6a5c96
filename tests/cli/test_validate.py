"""scion validate: the example is valid; broken specs give every error, exit 2, and JSON."""
import os

from harness import EXAMPLES, check, copy_example, run, run_json, temp_dir

SENTIMENT = os.path.join(EXAMPLES, "sentiment")

rc, out, err = run("-C", SENTIMENT, "validate")
check(rc == 0, f"the example validates (exit {rc}): {err}")
check(out == "ok: 6 models, 3 datasets, 7 tests\n", f"summary line: {out!r}")

report = run_json("-C", SENTIMENT, "validate")
check(report["ok"] is True and report["errors"] == [], f"--json on the example: {report}")
check(report["counts"]["models"] == 6 and report["counts"]["datasets"] == 3
      and report["counts"]["tests"] == 7, f"counts: {report['counts']}")

# A copy of the example with two mistakes: a misspelt method and a missing data file.
work = temp_dir()
copy_example("sentiment", os.path.join(work, "sentiment"))
spec_path = os.path.join(work, "sentiment", "scion.yaml")
with open(spec_path, encoding="utf-8") as f:
    spec = f.read()
spec = spec.replace("lora: {rank: 4, alpha: 8, targets: [q, v]}", "lroa: {rank: 4}", 1)
spec = spec.replace("path: data/products.jsonl", "path: data/missing.jsonl", 1)
with open(spec_path, "w", encoding="utf-8") as f:
    f.write(spec)

rc, out, err = run("-C", os.path.join(work, "sentiment"), "validate")
check(rc == 2, f"a broken spec exits 2, got {rc}")
check(out == "", f"nothing on stdout for a broken spec: {out!r}")
lines = err.splitlines()
check(any(l.startswith("scion.yaml:") and "unknown adaptation method 'lroa' at "
          "models.review-lora.adapt.lroa \u2014 did you mean 'lora'?" in l for l in lines),
      f"misspelt method reported with a suggestion:\n{err}")
check(any("file 'data/missing.jsonl' not found" in l and "at datasets.products.path" in l
          for l in lines), f"missing data file reported at its key:\n{err}")
check("2 errors in scion.yaml" in err, f"error count summary:\n{err}")

report = run_json("-C", os.path.join(work, "sentiment"), "validate", expect_rc=2)
check(report["ok"] is False and len(report["errors"]) == 2, f"--json errors: {report}")
first = report["errors"][0]
check(set(first) == {"file", "line", "column", "key_path", "message"}, f"error fields: {first}")
check(first["key_path"] == "datasets.products.path" and first["line"] == 14,
      f"errors in file order, with line numbers: {report['errors']}")

# -f picks another file; a missing one is a clean error.
rc, _, err = run("-f", os.path.join(work, "nope.yaml"), "validate")
check(rc == 2 and "spec file not found" in err, f"missing spec: {rc} {err}")

# Hostile input is refused cleanly.
bomb = os.path.join(work, "bomb.yaml")
with open(bomb, "w", encoding="utf-8") as f:
    f.write("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
    for i in range(1, 9):
        f.write(f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * 10) + "]\n")
rc, _, err = run("-f", bomb, "validate", timeout=20)
check(rc == 2 and "expands to more than" in err, f"alias bomb: {rc} {err}")
with open(bomb, "wb") as f:
    f.write(b"\x7fELF\x02\x01\x01\x00" * 64)
rc, _, err = run("-f", bomb, "validate")
check(rc == 2 and "binary data" in err, f"binary file: {rc} {err}")

rc, out, _ = run("validate", "--help")
check(rc == 0 and "Example" in out, "validate --help shows an example")
print("ok")
