#!/usr/bin/env python3
"""Compares the MiniLM example's exported task models with transformers + PEFT (run by
run.sh with the interop venv's Python, after the exports):

  stars (regression, PEFT adapter)    PeftModel over AutoModelForSequenceClassification of
                                      the base folder with the adapter's config.json
                                      (problem_type regression, id2label {0: stars}): its
                                      logit equals `scion predict`'s value
  aspects (multi-label, model folder) AutoModelForSequenceClassification (problem_type
                                      multi_label_classification): the sigmoid of its
                                      logits equals `scion predict`'s probabilities

within 1e-4 each. Usage: check_exports.py SCION EXAMPLE_DIR"""
import json
import subprocess
import sys

import torch
from peft import PeftModel
from tokenizers import Tokenizer
from transformers import AutoConfig, AutoModelForSequenceClassification

scion, here = sys.argv[1], sys.argv[2]
TEXTS = ["the acting was truly wonderful.", "the plot was dull but the music was lovely.",
         "the soundtrack was clumsy.", "the cast was good and the ending was weak."]
TOLERANCE = 1e-4


def predict(model):
    args = [scion, "-C", here, "--json", "predict", model] + sum((["--text", t] for t in TEXTS), [])
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)["predictions"]


def logits(model, folder):
    tok = Tokenizer.from_file(folder + "/tokenizer.json")
    tok.no_padding()
    tok.no_truncation()
    with torch.no_grad():
        return [model(input_ids=torch.tensor([tok.encode(t).ids])).logits[0].tolist() for t in TEXTS]


base = here + "/models/all-MiniLM-L6-v2"
adapter = here + "/exports/stars-peft"
config = AutoConfig.from_pretrained(adapter)
model = PeftModel.from_pretrained(AutoModelForSequenceClassification.from_pretrained(base, config=config),
                                  adapter).eval()
assert config.problem_type == "regression" and config.id2label == {0: "stars"}, config
theirs = [row[0] for row in logits(model, base)]
ours = [p["values"]["stars"] for p in predict("stars")]
worst = max(abs(a - b) for a, b in zip(ours, theirs))
print(f"stars (PEFT): largest value difference scion vs transformers + PEFT = {worst:.2e}")
assert worst < TOLERANCE, (ours, theirs)

folder = here + "/exports/aspects-hf"
model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
assert model.config.problem_type == "multi_label_classification", model.config
labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
theirs = [[1 / (1 + torch.exp(torch.tensor(-z)).item()) for z in row] for row in logits(model, folder)]
ours = [[p["probabilities"][l] for l in labels] for p in predict("aspects")]
worst = max(abs(a - b) for r, s in zip(ours, theirs) for a, b in zip(r, s))
print(f"aspects (huggingface): largest probability difference scion vs transformers = {worst:.2e}")
assert worst < TOLERANCE, (ours, theirs)
print("ok: the exports answer as scion does")
