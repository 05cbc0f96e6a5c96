"""`scion init [DIR]`: a workspace that validates, trains and tests, and never a replaced
file."""
import json
import os
import time

from harness import check, run, temp_dir

parent = temp_dir()
work = os.path.join(parent, "family")  # made by init
rc, out, err = run("init", work)
check(rc == 0, f"scion init exited {rc}: {err}")
for name in ("scion.yaml", "scion.schema.json", os.path.join("data", "reviews.jsonl")):
    check(os.path.isfile(os.path.join(work, name)), f"init did not write {name}")
with open(os.path.join(work, "scion.yaml")) as f:
    spec_text = f.read()
check(sum("#" in line for line in spec_text.splitlines()) > 20, "the spec is not commented")

rc, out, err = run("--json", "validate", cwd=work)
check(rc == 0, f"validate of init's spec exited {rc}: {out}{err}")
counts = json.loads(out)["counts"]
check(counts["models"] == 3 and counts["tests"] == 1 and counts["assertions"] == 1,
      f"init's family is not a trunk, two adapted models, a test and an assertion: {counts}")

start = time.monotonic()
rc, out, err = run("run", cwd=work)
seconds = time.monotonic() - start
check(rc == 0, f"run of init's spec exited {rc}: {err}")
check(seconds < 60, f"run of init's spec took {seconds:.1f} s; it should take seconds")
rc, out, err = run("--json", "lineage", "tree", cwd=work)
check(rc == 0, f"lineage tree exited {rc}: {err}")
rc, out, err = run("test", cwd=work)
check(rc in (0, 1), f"test of init's family exited {rc}: {err}")
check("praise-is-positive" in out + err, f"test did not run the scaffolded test:\n{out}{err}")

# `-f -`: the spec from stdin, its paths and the store beside the current folder.
rc, out, err = run("--json", "-f", "-", "lineage", "tree", cwd=work, stdin=spec_text)
check(rc == 0 and {m["model"] for m in json.loads(out)["models"]} == {"trunk", "trunk-lora", "trunk-bitfit"},
      f"lineage tree -f - exited {rc}: {out}{err}")
rc, out, err = run("-f", "-", "validate", cwd=parent, stdin=spec_text)
check(rc == 2 and "<stdin>:" in err and "data/reviews.jsonl" in err,
      f"-f - resolves data against the current folder, not the spec's: {rc} {err}")
rc, out, err = run("-f", "-", "predict", "trunk", "--file", "-", cwd=work, stdin=spec_text)
check(rc == 2 and "both read standard input" in err, f"-f - with --file -: {rc} {err}")

# A second init into the same folder writes nothing and says which files are in the way.
with open(os.path.join(work, "scion.yaml"), "a") as f:
    f.write("# my edit\n")
rc, out, err = run("init", work)
check(rc == 2, f"init over an existing workspace exited {rc}, expected 2")
check("already exist" in err and "scion.yaml" in err, f"unclear refusal: {err}")
with open(os.path.join(work, "scion.yaml")) as f:
    check(f.read().endswith("# my edit\n"), "init replaced scion.yaml")

# One file in the way is enough; the others are not written either.
other = temp_dir()
os.makedirs(os.path.join(other, "data"))
open(os.path.join(other, "data", "reviews.jsonl"), "w").close()
rc, out, err = run("--json", "init", cwd=other)
check(rc == 2, f"init with data/reviews.jsonl present exited {rc}")
check(json.loads(out)["error"]["code"] == 2, f"no JSON error document: {out}")
check(not os.path.exists(os.path.join(other, "scion.yaml")), "init wrote beside a refused file")
print(f"ok: init's family validates, runs in {seconds:.1f} s and tests; existing files refused")
