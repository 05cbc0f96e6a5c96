"""docs/json.md is the contract of --json: every command listed there prints one JSON
document with the current schema_version and exactly the top-level keys the table lists,
a model's name is `model` at every depth (never `name`), and failures print the error
object, with a location for spec errors."""
import json
import os
import re

from harness import SOURCE_ROOT, check, run
from report_family import trained_family

with open(os.path.join(SOURCE_ROOT, "docs", "json.md"), encoding="utf-8") as f:
    doc = f.read()
documented = {}
for command, keys in re.findall(r"^\| `([^`]+)` \| (`[^|]+`) \|$", doc, re.M):
    documented[command] = set(re.findall(r"`([^`]+)`", keys))
check(len(documented) >= 18, f"docs/json.md lists the commands: {sorted(documented)}")

work, _ = trained_family()
# An exported checkpoint of the base, to import again under a second base of the same
# architecture (the spec gains `twin`), and a small causal LM to generate with (`writer`).
with open(os.path.join(work, "scion.yaml")) as f:
    spec = f.read()
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(spec.replace("  a:\n", "  twin:\n    architecture: {type: encoder, layers: 1, width: 32, heads: 2,"
                         " ffn_width: 64, max_length: 48}\n    train: {data: reviews, objective: classification, steps: 5,"
                         " batch_size: 4, seed: 5}\n  writer:\n    architecture: {type: decoder, layers: 1,"
                         " width: 16, heads: 2, ffn_width: 32, max_length: 24}\n    train: {data: reviews,"
                         " objective: clm, steps: 3, batch_size: 4, seed: 6}\n  a:\n", 1))

SCHEMA_VERSION = int(re.search(r'"schema_version": (\d+)`', doc).group(1))
check(SCHEMA_VERSION >= 2, f"docs/json.md gives the schema version: {SCHEMA_VERSION}")
rc, out, err = run("--json", "lineage", "tree", cwd=work)
MODEL_NAMES = {m["model"] for m in json.loads(out)["models"]} | {"twin", "writer"}


def misnamed_objects(value, path="$"):
    """Paths of objects that hold a model's name under `name` (not `model`) or a run's id
    under `id` (not `run`)."""
    found = []
    if isinstance(value, dict):
        if value.get("name") in MODEL_NAMES or "id" in value:
            found.append(path)
        for key, item in value.items():
            if key != "hyperparameters":  # a recorded recipe, in the store's words
                found += misnamed_objects(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += misnamed_objects(item, f"{path}[{i}]")
    return found


COMMANDS = {
    "scion --version": ["--version"],
    "scion init": ["init", "fresh"],
    "scion validate": ["validate"],
    "scion plan": ["plan"],
    "scion run": ["run", "a", "writer"],
    "scion test": ["test", "a"],
    "scion test --compare": ["test", "--compare", "a", "a"],
    "scion predict": ["predict", "a", "--text", "a lovely film"],
    "scion predict --generate": ["predict", "writer", "--generate", "--text", "a lovely",
                                 "--max-new-tokens", "3"],
    "scion eval": ["eval", "a", "--data", "critics"],
    "scion report": ["report", "-o", "family.html"],
    "scion lineage tree": ["lineage", "tree"],
    "scion lineage show": ["lineage", "show", "c"],
    "scion lineage versions": ["lineage", "versions", "a"],
    "scion lineage log": ["lineage", "log"],
    "scion lineage diff": ["lineage", "diff", "a", "b"],
    "scion lineage export": ["lineage", "export", "--format", "json"],
    "scion lineage blame": ["lineage", "blame", "c"],
    "scion lineage metrics": ["lineage", "metrics", "a"],
    "scion export": ["export", "base", "-o", "base.safetensors"],
    "scion import": ["import", "base.safetensors", "--as", "twin"],
    "scion fsck": ["fsck"],
    "scion gc": ["gc", "--dry-run"],
    "scion tag": ["tag"],
    "scion export-runs": ["export-runs", "--format", "mlflow", "mlruns"],
}
check("| a failing command | `error` |" in doc, "docs/json.md lists the error document")
check(set(COMMANDS) == set(documented),
      f"the test covers exactly the documented commands: {sorted(set(documented) ^ set(COMMANDS))}")

for command, args in COMMANDS.items():  # in this order: export before import
    rc, out, err = run("--json", *args, cwd=work)
    check(rc in (0, 1), f"{command} --json exited {rc}\n{err}")
    try:
        document = json.loads(out)
    except json.JSONDecodeError as e:
        check(False, f"{command} --json prints one JSON document: {e}\n{out[:500]}")
    check(isinstance(document, dict) and document.get("schema_version") == SCHEMA_VERSION,
          f"{command}: schema_version {SCHEMA_VERSION}")
    misnamed = misnamed_objects(document)
    check(not misnamed, f"{command}: a model as `name` or a run as `id` at {misnamed}")
    keys = set(document) - {"schema_version"}
    check(keys == documented[command],
          f"{command}: keys {sorted(keys)} differ from docs/json.md's {sorted(documented[command])}")

# One meaning of `spec`: the spec file's path, in validate, plan and lineage tree alike.
for args in (["validate"], ["plan"], ["lineage", "tree"]):
    rc, out, _ = run("--json", *args, cwd=work)
    spec_value = json.loads(out)["spec"]
    check(isinstance(spec_value, str) and spec_value.endswith("scion.yaml"), f"{args}: spec is a path: {spec_value}")

# Failures: the error object on stdout, with the exit code and, for a spec error, where.
for args, code, place in (
    (["lineage", "show", "nope"], 2, None),
    (["lineage", "export", "--format", "dot"], 2, None),
    (["lineage", "metrics", "a", "--format", "csv"], 2, None),
    (["--no-such-option"], 2, None),
    (["-f", "broken.yaml", "plan"], 2, ("broken.yaml", 3)),
):
    if place:
        with open(os.path.join(work, "broken.yaml"), "w") as f:
            f.write("models:\n  base:\n    architecure: {}\n")
    rc, out, err = run("--json", *args, cwd=work)
    check(rc == code, f"{args}: exit {rc}, expected {code}\n{err}")
    try:
        document = json.loads(out)
    except json.JSONDecodeError as e:
        check(False, f"{args}: the error is one JSON document on stdout: {e}\n{out[:300]}")
    check(set(document) == {"schema_version", "error"}, f"{args}: an error document: {document}")
    error = document["error"]
    check(error["code"] == code and error["message"] and "error:" not in error["message"], f"{args}: {error}")
    check(error["message"] in err, f"{args}: the message is the one on stderr: {error['message']!r}")
    if place:
        location = error["location"]
        check(location and location["file"].endswith(place[0]) and location["line"] == place[1],
              f"{args}: the error says where: {location}")
    else:
        check(error["location"] is None, f"{args}: no location: {error}")
print("ok")
