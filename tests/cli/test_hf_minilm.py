#!/usr/bin/env python3
"""The real all-MiniLM-L6-v2 against transformers: the token ids of a hostile corpus equal
`tokenizers`', and scion's [CLS] hidden states equal BertModel's within 1e-4.

Usage: test_hf_minilm.py HF_HIDDEN_STATES SOURCE_ROOT
Needs the interop venv (tests/python/make-interop-venv.sh) and the model in the cache
(tests/python/fetch-minilm.sh; $SCION_MINILM names another folder); skips (77) otherwise."""
import json
import os
import subprocess
import sys

sys.argv = [sys.argv[0], sys.argv[1], sys.argv[2]]  # harness reads argv[1:3]
from harness import SOURCE_ROOT, check  # noqa: E402
from interop_python import interop_python, run_python  # noqa: E402

DUMP = os.path.abspath(sys.argv[1])
cache = os.environ.get("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache"))
FOLDER = os.environ.get("SCION_MINILM", os.path.join(cache, "scion", "all-MiniLM-L6-v2"))
if not os.path.exists(os.path.join(FOLDER, "model.safetensors")):
    print(f"SKIP: no all-MiniLM-L6-v2 at {FOLDER}; run tests/python/fetch-minilm.sh")
    sys.exit(77)
PYTHON = interop_python(SOURCE_ROOT)
TOLERANCE = 1e-4  # fp32 both sides, six layers of width 384

with open(os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf", "tokenizer-golden.json")) as f:
    TEXTS = [t for t in json.load(f)["texts"] if t.strip()]
TEXTS += ["This movie was not good at all.", "A delightful, moving film!"]

TRANSFORMERS_SIDE = r"""
import json, sys, torch
from tokenizers import Tokenizer
from transformers import BertModel
folder, texts = sys.argv[1], json.loads(sys.argv[2])
tok = Tokenizer.from_file(folder + "/tokenizer.json")
tok.no_padding()  # all-MiniLM-L6-v2 pads to 128 in its tokenizer.json
tok.no_truncation()
model = BertModel.from_pretrained(folder).eval()
ids, hidden = [], []
with torch.no_grad():
    for text in texts:
        row = tok.encode(text).ids
        ids.append(row)
        hidden.append(model(input_ids=torch.tensor([row])).last_hidden_state[0, 0].tolist())
print(json.dumps({"ids": ids, "cls_hidden": hidden}))
"""

theirs = json.loads(run_python(PYTHON, TRANSFORMERS_SIDE, FOLDER, json.dumps(TEXTS)))
proc = subprocess.run([DUMP, FOLDER], input=json.dumps(TEXTS), capture_output=True, text=True,
                      timeout=600)
check(proc.returncode == 0, f"hf_hidden_states failed: {proc.stderr}")
ours = json.loads(proc.stdout)
for text, a, b in zip(TEXTS, ours["ids"], theirs["ids"]):
    check(a == b, f"ids differ for {text!r}:\n scion {a}\n tokenizers {b}")
worst = max(abs(x - y) for a, b in zip(ours["cls_hidden"], theirs["cls_hidden"]) for x, y in zip(a, b))
print(f"all-MiniLM-L6-v2: {len(TEXTS)} texts, ids identical, largest [CLS] hidden-state "
      f"difference {worst:.2e}")
check(worst < TOLERANCE, f"[CLS] hidden states differ by {worst}")
print("ok")
