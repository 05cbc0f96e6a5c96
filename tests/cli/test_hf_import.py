#!/usr/bin/env python3
"""A Hugging Face BERT folder as a base, end to end on the built binary: `import:
FOLDER` reads the architecture from config.json, `scion import FOLDER` maps the tensor
names (skipping the position_ids buffer with a note), every adaptation method trains on
it and predicts; a folder that does not fit is refused naming the tensor or key.
The folder is tests/fixtures/hf/tiny-bert (tests/python/make_hf_fixtures.py)."""
import json
import os
import shutil
import struct

from harness import SOURCE_ROOT, check, run, run_json, temp_dir

FIXTURE = os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf", "tiny-bert")


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        tensors[name] = (entry["dtype"], entry["shape"], body[begin:end])
    return tensors


def write_safetensors(path, tensors):
    header, body = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


POSITIVE = ["the movie was great", "i loved it", "really good acting", "a great film",
            "the plot was very good", "i loved the acting"]
NEGATIVE = ["the movie was terrible", "i hated it", "really bad acting", "a terrible film",
            "the plot was very bad", "i hated the acting"]

SPEC = """datasets:
  reviews: {path: reviews.jsonl, labels: [neg, pos]}

models:
  bert:
    import: tiny-bert
%(arch)s
  head:
    from: bert
    adapt: {head: {}}
    train: &recipe {data: reviews, steps: 8, batch_size: 6, max_length: 24, optimizer: {type: adamw, lr: 1.0e-2}, seed: 1}
  lora:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {}}
    train: *recipe
  prefix:
    from: bert
    adapt: {prefix: {virtual_tokens: 3}, head: {}}
    train: *recipe
  prompt:
    from: bert
    adapt: {prompt: {virtual_tokens: 3}, head: {}}
    train: *recipe
  bottleneck:
    from: bert
    adapt: {bottleneck: {reduction: 4}, head: {}}
    train: *recipe
  bitfit:
    from: bert
    adapt: {bitfit: {}, head: {}}
    train: *recipe
  full:
    from: bert
    adapt: {full: {}, head: {}}
    train: *recipe
  lora-child:
    from: lora
    adapt: {lora: {rank: 2, alpha: 4, targets: [k, o]}}
    train: *recipe
"""

MODELS = ["head", "lora", "prefix", "prompt", "bottleneck", "bitfit", "full", "lora-child"]


def workspace(arch=""):
    work = temp_dir()
    shutil.copytree(FIXTURE, os.path.join(work, "tiny-bert"))
    with open(os.path.join(work, "reviews.jsonl"), "w") as f:
        for text in POSITIVE:
            f.write(json.dumps({"text": text, "label": "pos"}) + "\n")
        for text in NEGATIVE:
            f.write(json.dumps({"text": text, "label": "neg"}) + "\n")
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(SPEC % {"arch": arch})
    return work


# 1. The folder gives the architecture; import maps the names and notes the buffer.
work = workspace()
rc, out, err = run("validate", cwd=work)
check(rc == 0, f"validate of an imported folder failed ({rc}): {out}{err}")
plan = run_json("plan", cwd=work)
rc, out, err = run("import", "tiny-bert", "--as", "bert", cwd=work)
check(rc == 0, f"import of the folder failed ({rc}): {err}")
check("skipped 'embeddings.position_ids'" in err, f"no note about the position_ids buffer: {err}")
check("imported 39 tensors" in out, f"unexpected import summary: {out}")

# 2. Every adaptation method trains on it, co-batched, and predicts.
rc, out, err = run("adapt", cwd=work, timeout=900)
check(rc == 0, f"adapt on the imported BERT failed ({rc}): {out}{err}")
predictions = run_json("predict", *MODELS, "--text", "the acting was great", cwd=work)
check(len(predictions["predictions"]) == len(MODELS), f"predictions: {predictions}")
for p in predictions["predictions"]:
    total = sum(p["probabilities"].values())
    check(abs(total - 1) < 1e-5, f"{p['model']}: probabilities sum to {total}")

# 3. The folder's files are in the recipe: editing config.json changes the base's hash.
with open(os.path.join(work, "tiny-bert", "config.json")) as f:
    config = json.load(f)
config["hidden_dropout_prob"] = 0.0
with open(os.path.join(work, "tiny-bert", "config.json"), "w") as f:
    json.dump(config, f)
after = run_json("plan", cwd=work)
hashes = lambda p: {m["model"]: m.get("recipe_hash") for m in p.get("models", [])}
check(hashes(plan).get("bert") != hashes(after).get("bert"),
      f"editing config.json did not change the base's recipe hash: {hashes(plan)} {hashes(after)}")

# 4. An architecture in the spec must agree with config.json.
work = workspace("    architecture: {layers: 2, width: 64}")
rc, out, err = run("validate", cwd=work)
check(rc == 2, f"a disagreeing architecture was accepted ({rc})")
check("width is 64" in err and "config.json" in err and "says 32" in err,
      f"the disagreement is not explained: {err}")

# 5. Missing, extra and misshapen tensors are named.
for change, expected in [
    ("missing", "missing tensor 'blk.1.ffn_out.bias'"),
    ("extra", "tensor 'encoder.layer.0.attention.self.rotary.weight' has no place"),
    ("misshapen", "tensor 'pooler.bias' has shape [16]"),
]:
    work = workspace()
    path = os.path.join(work, "tiny-bert", "model.safetensors")
    tensors = read_safetensors(path)
    if change == "missing":
        del tensors["encoder.layer.1.output.dense.bias"]
    elif change == "extra":
        tensors["encoder.layer.0.attention.self.rotary.weight"] = ("F32", [2], b"\0" * 8)
    else:
        dtype, _, raw = tensors["pooler.dense.bias"]
        tensors["pooler.dense.bias"] = (dtype, [16], raw[:64])
    write_safetensors(path, tensors)
    rc, out, err = run("import", "tiny-bert", "--as", "bert", cwd=work)
    check(rc == 2, f"{change}: import exited {rc}, expected 2\n{err}")
    check(expected in err, f"{change}: error does not say \"{expected}\":\n{err}")

# 6. `scion run` does what the spec declares: it imports the folder (plan: a step, not a
#    block), then adapts the family, parents first, in one command.
work = workspace()
plan = {m["model"]: m for m in run_json("plan", cwd=work)["models"]}
check(plan["bert"]["state"] == "imports" and "tiny-bert" in plan["bert"]["reason"],
      f"plan shows the import as a step: {plan['bert']}")
check(all(plan[m]["state"] == "runs" for m in MODELS), f"nothing is blocked: {plan}")
rc, out, err = run("plan", cwd=work)
check("imports (before any group trains" in out and "blocked" not in out, f"plan text:\n{out}")
rc, out, err = run("--json", "run", cwd=work, timeout=900)
check(rc == 0, f"run of a declared import exited {rc}: {err}")
summary = {m["model"]: m for m in json.loads(out)["models"]}
check(summary["bert"]["status"] == "imported" and all(summary[m]["status"] == "trained" for m in MODELS),
      f"run imported and trained: {summary}")
check('"event":"imported"' in err, f"--json progress says what it imported: {err[-500:]}")
imports = [r for r in run_json("lineage", "log", "bert", cwd=work)["runs"] if r["kind"] == "import"]
check(len(imports) == 1 and len(imports[0]["hyperparameters"]["digest"]) == 64,
      f"one import run, recording the checkpoint's digest: {imports}")
rc, out, err = run("run", cwd=work)
check(rc == 0 and "imported" not in out, f"a second run imports nothing: {out}{err}")

# 7. A head-only model has no PEFT adapter, and --format huggingface holds it: the refusal
#    says so, and that format works (#40).
rc, out, err = run("export", "head", "--format", "peft", "-o", os.path.join(work, "head-peft"), cwd=work)
check(rc == 2 and "no adapter of its own" in err and "--format huggingface" in err,
      f"the PEFT refusal points to what works: {rc} {err}")
rc, out, err = run("export", "head", "--format", "huggingface", "-o", os.path.join(work, "head-hf"),
                   cwd=work)
check(rc == 0 and os.path.exists(os.path.join(work, "head-hf", "config.json")),
      f"--format huggingface exports the head-only model: {rc} {err}")

print("ok")
