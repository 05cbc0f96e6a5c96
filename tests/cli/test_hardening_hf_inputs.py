"""Issue #29, Hugging Face and PEFT files that scion did not write:

  - item 1: wrong JSON types in config.json and tokenizer.json are spec errors (exit 2, one
    line, the key path), never "internal error";
  - item 9: `validate` and `import` load tokenizer.json whole, so a broken tokenizer is an
    error there, not at `run` or `predict`;
  - item 6: `import --peft` refuses NaN and infinite values as a base import does, unless
    --allow-nonfinite, and stores nothing;
  - item 12: `import --peft` refuses what it would not honour (layers_to_transform,
    rank_pattern, a foreign task_type, lora_dropout 2.0); `-C` applies before import's
    path is looked at; a huge `steps` names its bound.
"""
import json
import os
import shutil
import sqlite3
import struct

from harness import SOURCE_ROOT, check, run, run_json, temp_dir

FIXTURE = os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf", "tiny-bert")

SPEC = """datasets:
  reviews: {path: reviews.jsonl, labels: [neg, pos]}
models:
  bert:
    import: tiny-bert
  qv:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {}}
    train: &recipe {data: reviews, steps: 2, batch_size: 4, seed: 3}
  qv-back:
    from: bert
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {}}
    train: *recipe
"""


def workspace():
    work = temp_dir()
    shutil.copytree(FIXTURE, os.path.join(work, "tiny-bert"))
    with open(os.path.join(work, "reviews.jsonl"), "w") as f:
        for i in range(8):
            f.write(json.dumps({"text": ["a good film", "a bad film"][i % 2],
                                "label": ["pos", "neg"][i % 2]}) + "\n")
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(SPEC)
    return work


def edit_json(path, change):
    with open(path) as f:
        doc = json.load(f)
    change(doc)
    with open(path, "w") as f:
        json.dump(doc, f)


def runs_of(work, model):
    db = sqlite3.connect(os.path.join(work, ".scion", "lineage.db"))
    count = db.execute("SELECT count(*) FROM runs r JOIN models m ON m.id = r.model_id "
                       "WHERE m.name = ?", (model,)).fetchone()[0]
    db.close()
    return count


work = workspace()
config_path = os.path.join(work, "tiny-bert", "config.json")
tokenizer_path = os.path.join(work, "tiny-bert", "tokenizer.json")
with open(config_path) as f:
    config_text = f.read()
with open(tokenizer_path) as f:
    tokenizer_text = f.read()

# ---- item 1: wrong JSON types are spec errors naming the key ------------------------------
for key, value, expected in (("model_type", 5, "config.json: model_type is 5 (an integer), expected a string"),
                             ("hidden_act", 2, "hidden_act is 2"),
                             ("position_embedding_type", 1, "position_embedding_type is 1"),
                             ("is_decoder", "no", "is_decoder is \"no\" (a string), expected true or false"),
                             ("add_cross_attention", "yes", "add_cross_attention is \"yes\"")):
    edit_json(config_path, lambda d: d.__setitem__(key, value))
    rc, out, err = run("validate", cwd=work)
    lines = [line for line in err.splitlines() if "error:" in line]
    check(rc == 2 and expected in err and "internal error" not in err and len(lines) == 1,
          f"config.json {key}={value!r}: exit {rc}\n{err}")
    with open(config_path, "w") as f:
        f.write(config_text)

for path, value, expected in ((["model", "continuing_subword_prefix"], 3, "model.continuing_subword_prefix is 3"),
                              (["model", "max_input_chars_per_word"], "100", "model.max_input_chars_per_word is \"100\""),
                              (["normalizer", "lowercase"], "true", "normalizer.lowercase is \"true\""),
                              (["added_tokens", 0, "content"], 9, "added_tokens[0].content is 9"),
                              (["added_tokens"], {"a": 1}, "added_tokens is {\"a\":1} (an object), expected an array")):
    def change(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    edit_json(tokenizer_path, change)
    for args in (["validate"], ["import", "tiny-bert", "--as", "bert"]):
        rc, out, err = run(*args, cwd=work)
        check(rc == 2 and expected in err and "internal error" not in err,
              f"{' '.join(args)}: tokenizer.json {path}={value!r}: exit {rc}\n{err}")
    with open(tokenizer_path, "w") as f:
        f.write(tokenizer_text)

# ---- item 9: a broken tokenizer is refused by validate and import, before any run ---------
def vocab_change(change):
    def apply(doc):
        change(doc["model"]["vocab"])
    return apply


broken = {
    "invalid JSON": lambda: "{\"model\": ",
    "a Unigram model": lambda: json.dumps(dict(json.loads(tokenizer_text),
                                               model={"type": "Unigram", "vocab": [["a", 0.0]]})),
    "an unknown pre-tokenizer": lambda: json.dumps(dict(json.loads(tokenizer_text),
                                                        pre_tokenizer={"type": "Whitespace"})),
}
for name, text in broken.items():
    with open(tokenizer_path, "w") as f:
        f.write(text())
    for args in (["validate"], ["import", "tiny-bert", "--as", "bert"]):
        rc, out, err = run(*args, cwd=work)
        check(rc == 2 and "tokenizer.json" in err, f"{' '.join(args)} with {name}: exit {rc}\n{err}")
for name, change, expected in (
        ("a duplicate id", vocab_change(lambda v: v.__setitem__("zzz-new", v["[UNK]"])), "ids must be unique"),
        ("a negative id", vocab_change(lambda v: v.__setitem__("[UNK]", -1)), "expected an integer from 0"),
        ("a huge id", vocab_change(lambda v: v.__setitem__("[UNK]", 10**12)), "expected an integer from 0"),
        ("an empty vocabulary", vocab_change(lambda v: v.clear()), "model.vocab is not a non-empty object")):
    with open(tokenizer_path, "w") as f:
        f.write(tokenizer_text)
    edit_json(tokenizer_path, change)
    for args in (["validate"], ["import", "tiny-bert", "--as", "bert"]):
        rc, out, err = run(*args, cwd=work)
        check(rc == 2 and expected in err, f"{' '.join(args)} with {name}: exit {rc}\n{err}")
with open(tokenizer_path, "w") as f:
    f.write(tokenizer_text)
check(not os.path.exists(os.path.join(work, ".scion", "lineage.db")) or runs_of(work, "bert") == 0,
      "no broken tokenizer was imported")

# ---- item 12: -C applies before import looks at its path ----------------------------------
parent = os.path.dirname(work)
rc, out, err = run("-C", os.path.basename(work), "import", "tiny-bert", "--as", "bert", cwd=parent)
check(rc == 0, f"scion -C WS import tiny-bert: exit {rc}\n{err}")
rc, out, err = run("adapt", "qv", cwd=work, timeout=600)
check(rc == 0, f"adapt qv: {rc}\n{out}{err}")

# ---- item 6 and 12: import --peft refuses what it cannot honour, and non-finite values -----
rc, out, err = run("export", "qv", "--format", "peft", "-o", "qv-peft", cwd=work)
check(rc == 0, f"export qv --format peft: {err}")
adapter = os.path.join(work, "qv-peft")
with open(os.path.join(adapter, "adapter_config.json")) as f:
    adapter_config = json.load(f)
for key, value, expected in (("layers_to_transform", [0], "layers_to_transform is [0]"),
                             ("rank_pattern", {"query": 8}, "rank_pattern is"),
                             ("task_type", "TOKEN_CLS", "task_type is \"TOKEN_CLS\""),
                             ("lora_dropout", 2.0, "lora_dropout is 2.0, expected a probability"),
                             ("r", "4", "r is \"4\"")):
    edit_json(os.path.join(adapter, "adapter_config.json"), lambda d: d.__setitem__(key, value))
    rc, out, err = run("import", "--peft", "qv-peft", "--as", "qv-back", cwd=work)
    check(rc == 2 and expected in err, f"import --peft with {key}={value!r}: exit {rc}\n{err}")
    with open(os.path.join(adapter, "adapter_config.json"), "w") as f:
        json.dump(adapter_config, f)

weights = os.path.join(adapter, "adapter_model.safetensors")
with open(weights, "rb") as f:
    data = bytearray(f.read())
header_length = int.from_bytes(data[:8], "little")
header = json.loads(data[8:8 + header_length])
first = min((t for n, t in header.items() if n != "__metadata__"), key=lambda t: t["data_offsets"][0])
start = 8 + header_length + first["data_offsets"][0]
data[start:start + 4] = struct.pack("<f", float("nan"))
data[start + 4:start + 8] = struct.pack("<f", float("inf"))
with open(weights, "wb") as f:
    f.write(data)
rc, out, err = run("import", "--peft", "qv-peft", "--as", "qv-back", cwd=work)
check(rc == 3 and "not finite" in err and "--allow-nonfinite" in err,
      f"import --peft of a NaN adapter: exit {rc}\n{err}")
check(runs_of(work, "qv-back") == 0, "nothing of the NaN adapter was stored")
rc, out, err = run("import", "--peft", "qv-peft", "--as", "qv-back", "--allow-nonfinite", cwd=work)
check(rc == 0 and "NaN or infinite" in err, f"--allow-nonfinite imports with a warning: {rc}\n{err}")

# ---- item 3: a damaged parameter row goes into no export format ----------------------------
db = sqlite3.connect(os.path.join(work, ".scion", "lineage.db"))
db.execute("UPDATE version_parameters SET dtype = 'F16' WHERE name LIKE '%lora.qv.a' AND "
           "version_id = (SELECT version_id FROM models WHERE name = 'qv')")
db.commit()
db.close()
for fmt, target in (("peft", "qv-peft-damaged"), ("huggingface", "qv-hf-damaged"),
                    ("safetensors", "qv-damaged.safetensors")):
    rc, out, err = run("export", "qv", "--format", fmt, "-o", target, cwd=work)
    check(rc == 3 and "does not fit its object" in err and "scion fsck" in err,
          f"export --format {fmt} of a damaged row: exit {rc}\n{err}")
    check(not os.path.exists(os.path.join(work, target)), f"export --format {fmt} wrote nothing")

# ---- item 12: a huge step count names its bound ---------------------------------------------
with open(os.path.join(work, "scion.yaml")) as f:
    spec = f.read()
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(spec.replace("steps: 2,", "steps: 9223372036854775807,"))
rc, out, err = run("validate", cwd=work)
check(rc == 2 and "at most 1073741824" in err, f"steps: 2^63-1: {rc}\n{err}")
print("ok")
