#!/usr/bin/env python3
"""GPT-2 and RoBERTa folders as bases, end to end on the built binary: `import: FOLDER`
reads the architecture from config.json and the byte-level BPE from tokenizer.json,
`scion import FOLDER` maps the names (GPT-2's Conv1D transposed and c_attn split,
RoBERTa's positions offset), and every adaptation method (head, LoRA, prefix, prompt,
bottleneck, BitFit, full, a LoRA on a LoRA, a LoRA language model) trains on each,
co-batched, is stored, and predicts. The folders are tests/fixtures/hf/tiny-gpt2 and
tiny-roberta (tests/python/make_hf_bpe_fixtures.py)."""
import json
import os
import shutil
import sqlite3

from harness import SOURCE_ROOT, check, run, run_json, temp_dir

FIXTURES = os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf")

POSITIVE = ["the movie was great", "I loved it", "really good acting", "a great film",
            "the plot was very good", "I loved the acting"]
NEGATIVE = ["the movie was terrible", "I hated it", "really bad acting", "a terrible film",
            "the plot was very bad", "I hated the acting"]

SPEC = """datasets:
  reviews: {path: reviews.jsonl, labels: [neg, pos]}
  corpus: {path: corpus.jsonl}

models:
  base:
    import: %(folder)s
  head:
    from: base
    adapt: {head: {pooling: %(pooling)s}}
    train: &recipe {data: reviews, steps: 6, batch_size: 6, max_length: 24, optimizer: {type: adamw, lr: 1.0e-2}, seed: 1}
  lora:
    from: base
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, v]}, head: {pooling: %(pooling)s}}
    train: *recipe
  prefix:
    from: base
    adapt: {prefix: {virtual_tokens: 3}, head: {pooling: %(pooling)s}}
    train: *recipe
  prompt:
    from: base
    adapt: {prompt: {virtual_tokens: 3}, head: {pooling: %(pooling)s}}
    train: *recipe
  bottleneck:
    from: base
    adapt: {bottleneck: {reduction: 4}, head: {pooling: %(pooling)s}}
    train: *recipe
  bitfit:
    from: base
    adapt: {bitfit: {}, head: {pooling: %(pooling)s}}
    train: *recipe
  full:
    from: base
    adapt: {full: {}, head: {pooling: %(pooling)s}}
    train: *recipe
  lora-child:
    from: lora
    adapt: {lora: {rank: 2, alpha: 4, targets: [k, o]}}
    train: *recipe
  lora-lm:
    from: base
    adapt: {lora: {rank: 4, alpha: 8, targets: [q, k, v, o]}}
    train: {data: corpus, objective: %(lm)s, steps: 6, batch_size: 6, max_length: 24, optimizer: {type: adamw, lr: 1.0e-2}, seed: 2}
"""

CLASSIFIERS = ["head", "lora", "prefix", "prompt", "bottleneck", "bitfit", "full", "lora-child"]


def workspace(folder, pooling, lm):
    work = temp_dir()
    shutil.copytree(os.path.join(FIXTURES, folder), os.path.join(work, folder))
    with open(os.path.join(work, "reviews.jsonl"), "w") as f:
        for text in POSITIVE:
            f.write(json.dumps({"text": text, "label": "pos"}) + "\n")
        for text in NEGATIVE:
            f.write(json.dumps({"text": text, "label": "neg"}) + "\n")
    with open(os.path.join(work, "corpus.jsonl"), "w") as f:
        for text in POSITIVE + NEGATIVE:
            f.write(json.dumps({"text": text}) + "\n")
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(SPEC % {"folder": folder, "pooling": pooling, "lm": lm})
    return work


for folder, pooling, lm, tensors in [("tiny-gpt2", "last", "clm", 36),
                                     ("tiny-roberta", "cls", "mlm", 39)]:
    work = workspace(folder, pooling, lm)
    rc, out, err = run("validate", cwd=work)
    check(rc == 0, f"{folder}: validate failed ({rc}): {out}{err}")
    rc, out, err = run("import", folder, "--as", "base", cwd=work)
    check(rc == 0, f"{folder}: import failed ({rc}): {err}")
    check(f"imported {tensors} tensors" in out, f"{folder}: unexpected import summary: {out}")

    rc, out, err = run("adapt", cwd=work, timeout=900)
    check(rc == 0, f"{folder}: adapt failed ({rc}): {out}{err}")
    predictions = run_json("predict", *CLASSIFIERS, "--text", "the acting was great", cwd=work)
    check(len(predictions["predictions"]) == len(CLASSIFIERS), f"{folder}: {predictions}")
    for p in predictions["predictions"]:
        total = sum(p["probabilities"].values())
        check(abs(total - 1) < 1e-5, f"{folder}: {p['model']}: probabilities sum to {total}")

    # Every descendant is stored with its own parameters: LoRA factors, the head.
    store = os.path.join(work, ".scion", "lineage.db")
    with sqlite3.connect(store) as db:
        names = {row[0] for row in db.execute("SELECT name FROM parameters")}
    for expected in ("blk.0.attn_q.lora.lora.a", "blk.1.attn_v.lora.lora.b",
                     "head.lora.weight", "head.head.weight",
                     "blk.0.attn_o.lora.lora-lm.a", "blk.1.attn_k.lora.lora-child.b"):
        check(expected in names, f"{folder}: the store has no parameter '{expected}'")

print("ok")
