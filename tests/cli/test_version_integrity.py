"""A version is what was trained (issue 37): an old version answers with what it was made
with, never with today's spec — its label names and their order (item 2)."""
from harness import check, run, run_json, spec_workspace

SPEC = """datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
models:
  trunk:
    architecture: {type: encoder, layers: 1, width: 64, heads: 2, ffn_width: 64, max_length: 32}
    train:
      data: reviews
      objective: classification
      steps: 30
      batch_size: 8
      optimizer: {type: adamw, lr: 3.0e-3, betas: [0.9, 0.999]}
      seed: 4
"""
TEXTS = ["a lovely film, I loved it", "a dull mess, I hated it"]

work = spec_workspace(SPEC)
rc, _, err = run("run", cwd=work)
check(rc in (0, 1), f"run: {rc} {err}")
trained = [r for r in run_json("lineage", "log", "trunk", cwd=work)["runs"] if r["kind"] == "train"][0]
old = f"trunk@{trained['run']}"


def answers(model):
    args = [arg for t in TEXTS for arg in ("--text", t)]
    return [(p["label"], round(p["confidence"], 6))
            for p in run_json("predict", model, *args, cwd=work)["predictions"]]


def accuracy(model):
    return run_json("eval", model, "--data", "reviews", cwd=work)["results"][0]["metrics"]["accuracy"]


before, before_accuracy = answers(old), accuracy(old)

# The spec's labels swapped: the trunk's recipe changes, and its stored version still
# classifies into the names it was trained with.
spec_path = f"{work}/scion.yaml"
with open(spec_path) as f:
    text = f.read()
with open(spec_path, "w") as f:
    f.write(text.replace("labels: [negative, positive]", "labels: [positive, negative]"))
check(answers(old) == before, f"{old} answers with its own labels: {answers(old)} != {before}")
check(accuracy(old) == before_accuracy,
      f"eval of {old} scores with its own labels: {accuracy(old)} != {before_accuracy}")
print("ok: an old version answers with the labels it was trained with")

# ---- item 1: a stored version is never rewritten ---------------------------------------------
work = spec_workspace(SPEC)
rc, _, err = run("run", cwd=work)
check(rc in (0, 1), f"run: {rc} {err}")
answered = answers("trunk")
versions = run_json("lineage", "versions", "trunk", cwd=work)["versions"]
# Trained again under the same recipe, on the same machine: the same bytes, the same version.
rc, _, err = run("train", "--force", "trunk", cwd=work)
check(rc == 0, f"train --force reproduces the version: {rc} {err}")
check(run_json("lineage", "versions", "trunk", cwd=work)["versions"] == versions,
      "a reproduced version is not rewritten")
# Other parameters imported over it: refused, and the model answers as before.
exported = f"{work}/trunk.safetensors"
rc, _, err = run("export", "trunk", "-o", exported, cwd=work)
check(rc == 0, f"export: {err}")
with open(exported, "r+b") as f:
    f.seek(-3, 2)
    byte = f.read(1)
    f.seek(-3, 2)
    f.write(bytes([byte[0] ^ 0x10]))
rc, _, err = run("import", exported, "--as", "trunk", cwd=work)
check(rc == 2 and "already has a stored version of this recipe" in err and "never rewritten" in err
      and "1 of" in err, f"an import over a stored version is refused: {rc} {err}")
check(answers("trunk") == answered, "the stored version still answers")
rc, out, err = run("fsck", cwd=work)
check(rc == 0, f"fsck: {out}{err}")

# ---- item 5: a model declaring `import: A` is not stored from another checkpoint --------------
import os
import shutil
import sqlite3

from harness import SOURCE_ROOT, temp_dir

FIXTURE = os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf", "tiny-gpt2")
imports = temp_dir()
for name in ("hf-a", "hf-copy", "hf-b"):
    shutil.copytree(FIXTURE, os.path.join(imports, name))
# hf-b: one weight differs (a byte near the end of the tensor data, past the header).
weights = os.path.join(imports, "hf-b", "model.safetensors")
with open(weights, "r+b") as f:
    f.seek(-5, os.SEEK_END)
    byte = f.read(1)
    f.seek(-5, os.SEEK_END)
    f.write(bytes([byte[0] ^ 0x40]))
with open(os.path.join(imports, "scion.yaml"), "w") as f:
    f.write("models:\n  gpt2:\n    import: hf-a\n")
rc, _, err = run("import", "hf-b", "--as", "gpt2", cwd=imports)
check(rc == 2 and "is not the checkpoint model 'gpt2' declares" in err and "differ" in err,
      f"importing another checkpoint than the declared one is refused: {rc} {err}")
store = os.path.join(imports, ".scion", "lineage.db")
stored = 0
if os.path.exists(store):
    with sqlite3.connect(store) as conn:
        stored = conn.execute("SELECT count(*) FROM versions").fetchone()[0]
check(stored == 0, f"nothing was stored: {stored} version(s)")
rc, _, err = run("import", "hf-copy", "--as", "gpt2", cwd=imports)
check(rc == 0, f"an identical copy of the declared folder imports: {rc} {err}")
states = {m["model"]: m["state"] for m in run_json("plan", cwd=imports)["models"]}
check(states == {"gpt2": "up to date"}, f"the copy is the declared recipe: {states}")
print("ok: only the declared checkpoint (or an identical copy) is stored under its recipe")

# ---- item 13: an import path enters the recipe by content, not by spelling ---------------------
def recipe_with(import_line):
    with open(os.path.join(imports, "scion.yaml"), "w") as f:
        f.write(f"models:\n  gpt2:\n    import: {import_line}\n")
    return run_json("plan", cwd=imports)["models"][0]["recipe_hash"]


elsewhere = os.path.join(temp_dir(), "moved")
shutil.copytree(os.path.join(imports, "hf-a"), elsewhere)
spellings = {line: recipe_with(line) for line in ("hf-a", "./hf-a", "../" + os.path.basename(imports) + "/hf-a",
                                                  "hf-copy", elsewhere)}
check(len(set(spellings.values())) == 1, f"one recipe however the folder is spelled or where: {spellings}")
check(recipe_with("hf-b") not in spellings.values(), "other contents, another recipe")
print("ok: import paths enter recipes by content")
