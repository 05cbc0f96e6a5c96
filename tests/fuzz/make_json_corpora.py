#!/usr/bin/env python3
"""Seed corpora for the fuzz targets of files scion did not write (docs/fuzzing.md).

    tests/fuzz/make_json_corpora.py OUT_DIR

writes OUT_DIR/{hf_config,hf_index,tokenizer_json,peft_config,dataset}/ from:
  - the real all-MiniLM-L6-v2 files in ~/.cache/scion/all-MiniLM-L6-v2 (tests/python/
    fetch-minilm.sh fetches them; skipped when absent),
  - the Hugging Face fixtures (tests/fixtures/hf) and the example families' data,
  - for every JSON seed, each key path the readers use (every key of the seed's objects,
    the first elements of arrays, a few members of large vocabularies) with its value
    replaced by wrong JSON types (three per path, rotating through null, true, integers, a
    float, a string, arrays and objects, so every type meets every part of the file). This
    is the type confusion of issue #29 (`"model_type": 5`); tests/unit/hf_json_types_test.cpp
    tries every type at every path of the fixtures exhaustively.
The tokenizer seeds carry their tokenizer_config.json after a NUL byte, as
fuzz_tokenizer_json.cpp reads them.
"""
import copy
import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "hf")
MINILM = os.path.expanduser("~/.cache/scion/all-MiniLM-L6-v2")
WRONG_TYPES = [None, True, 5, -1, 2.5, "x", [], [1, "a"], {}, {"type": 7}]
MEMBERS_PER_LARGE_OBJECT = 3  # vocabularies: a few entries, not 30,000
TYPES_PER_PATH = 3  # wrong types per key path, rotating, so every type appears
MAX_VARIANTS_OF_LARGE = 12  # per seed file over 64 KiB (a real tokenizer.json: 700 KiB,
                            # which parses too slowly to fuzz many copies of)


def paths(value, prefix=()):
    """Every key path of `value` worth confusing: all keys of small objects, a few of
    large ones, the first two elements of arrays."""
    if isinstance(value, dict):
        keys = list(value)
        if len(keys) > 64:
            keys = keys[:MEMBERS_PER_LARGE_OBJECT]
        for k in keys:
            yield prefix + (k,)
            yield from paths(value[k], prefix + (k,))
    elif isinstance(value, list):
        for i in range(min(2, len(value))):
            yield prefix + (i,)
            yield from paths(value[i], prefix + (i,))


def replaced(doc, path, new):
    out = copy.deepcopy(doc) if len(json.dumps(doc)) < 200_000 else None
    if out is None:  # a large document: copy only along the path
        out = dict(doc)
        node = out
        for key in path[:-1]:
            child = node[key]
            child = dict(child) if isinstance(child, dict) else list(child)
            node[key] = child
            node = child
        node[path[-1]] = new
        return out
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return out


def write(folder, data):
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def seed_with_variants(folder, text, suffix=b""):
    """The seed itself and its type-confused variants; `suffix` follows each (the
    tokenizer_config.json part of a tokenizer seed)."""
    write(folder, text.encode() + suffix)
    doc = json.loads(text)
    limit = None if len(text) <= 64 * 1024 else MAX_VARIANTS_OF_LARGE
    count = 0
    for p, path in enumerate(paths(doc)):
        for t in range(TYPES_PER_PATH):
            if limit is not None and count >= limit:
                return
            new = WRONG_TYPES[(p * TYPES_PER_PATH + t) % len(WRONG_TYPES)]
            write(folder, json.dumps(replaced(doc, path, new)).encode() + suffix)
            count += 1


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def existing(*candidates):
    return [p for p in candidates if os.path.isfile(p)]


def main(out):
    folders = sorted(os.path.join(FIXTURES, d) for d in os.listdir(FIXTURES)
                     if os.path.isdir(os.path.join(FIXTURES, d)))
    if os.path.isdir(MINILM):
        folders.append(MINILM)
    else:
        print(f"note: {MINILM} is missing (tests/python/fetch-minilm.sh); fixtures only")

    for config in existing(*(os.path.join(f, "config.json") for f in folders)):
        seed_with_variants(os.path.join(out, "hf_config"), read(config))

    index = {"metadata": {"total_size": 1024},
             "weight_map": {"embeddings.word_embeddings.weight": "model-00001-of-00002.safetensors",
                            "encoder.layer.0.attention.self.query.weight":
                                "model-00002-of-00002.safetensors"}}
    seed_with_variants(os.path.join(out, "hf_index"), json.dumps(index))

    for folder in folders:
        tokenizer = os.path.join(folder, "tokenizer.json")
        if not os.path.isfile(tokenizer):
            continue
        config = os.path.join(folder, "tokenizer_config.json")
        suffix = b"\0" + read(config).encode() if os.path.isfile(config) else b""
        seed_with_variants(os.path.join(out, "tokenizer_json"), read(tokenizer), suffix)

    # adapter_config.json as `scion export --format peft` writes it for a LoRA + head
    # descendant (r 4, alpha 8, q and v), and as PEFT 0.10 saves one.
    adapter = {"base_model_name_or_path": "sentence-transformers/all-MiniLM-L6-v2",
               "revision": None, "task_type": "SEQ_CLS", "inference_mode": True,
               "peft_type": "LORA", "modules_to_save": ["classifier"], "r": 4,
               "lora_alpha": 8.0, "lora_dropout": 0.1, "target_modules": ["query", "value"],
               "bias": "none", "fan_in_fan_out": False, "init_lora_weights": True,
               "use_rslora": False, "use_dora": False, "layers_to_transform": None,
               "layers_pattern": None, "rank_pattern": {}, "alpha_pattern": {}}
    seed_with_variants(os.path.join(out, "peft_config"), json.dumps(adapter, indent=2))
    regex = dict(adapter, target_modules="bert\\.encoder\\.layer\\.(0|1)\\.(attention\\.self\\.query)")
    seed_with_variants(os.path.join(out, "peft_config"), json.dumps(regex))

    data = os.path.join(out, "dataset")
    for base, _, files in os.walk(os.path.join(ROOT, "examples")):
        for name in files:
            if name.endswith((".jsonl", ".csv", ".tsv", ".txt")):
                with open(os.path.join(base, name), "rb") as f:
                    write(data, f.read()[:4096])
    write(data, 'text,label\n"a ""quoted"" review, with a comma",positive\nplain,negative\n')
    write(data, "text\tlabel\nfirst\t1\nsecond\tnegative\n")
    write(data, '{"text": "good", "label": 1}\n\n{"text": "bad", "label": "negative"}\r\n')
    for name in sorted(os.listdir(out)):
        print(f"{name}: {len(os.listdir(os.path.join(out, name)))} seeds")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
