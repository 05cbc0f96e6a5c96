"""The Python with transformers and peft that interop tests compare against:
$SCION_INTEROP_PYTHON, else the venv tests/python/make-interop-venv.sh makes in the
source tree (.interop-venv). Tests skip (77) without one."""
import os
import subprocess
import sys


def interop_python(source_root):
    candidates = [os.environ.get("SCION_INTEROP_PYTHON"),
                  os.path.join(source_root, ".interop-venv", "bin", "python")]
    for python in candidates:
        if python and os.path.exists(python):
            probe = subprocess.run([python, "-c", "import transformers, peft, torch"],
                                   capture_output=True, text=True)
            if probe.returncode == 0:
                return python
    print("SKIP: no Python with transformers and peft; run tests/python/make-interop-venv.sh "
          "(or set SCION_INTEROP_PYTHON)")
    sys.exit(77)


def run_python(python, code, *args):
    proc = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        print(f"FAIL: the interop Python failed:\n{proc.stderr}", file=sys.stderr)
        sys.exit(1)
    return proc.stdout


# Code for run_python that classifies texts as scion's predict does: one text at a time,
# unpadded, with the folder's tokenizer.json. Defines classify(model, tokenizer_file, texts).
_CLASSIFY = r"""
import json, sys, torch
from tokenizers import Tokenizer


def classify(model, tokenizer_file, texts):
    tok = Tokenizer.from_file(tokenizer_file)
    tok.no_padding()
    tok.no_truncation()
    probs = []
    with torch.no_grad():
        for text in texts:
            ids = torch.tensor([tok.encode(text).ids])
            probs.append(torch.softmax(model(input_ids=ids).logits[0], -1).tolist())
    return probs
"""

# A PEFT classifier adapter on its base. Arguments: base folder, adapter folder, number of
# labels, texts (JSON). Prints the adapter's unexpected keys, its missing adapter and head
# keys, and each text's probabilities.
PEFT_CLASSIFIER = _CLASSIFY + r"""
from peft import PeftModel
from peft.utils import set_peft_model_state_dict
from safetensors.torch import load_file
from transformers import AutoModelForSequenceClassification
base, adapter, labels, texts = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=labels)
model = PeftModel.from_pretrained(model, adapter).eval()
result = set_peft_model_state_dict(model, load_file(adapter + "/adapter_model.safetensors"))
missing = [k for k in result.missing_keys
           if "lora_" in k or "ia3_" in k or "modules_to_save" in k]
print(json.dumps({"unexpected": result.unexpected_keys, "missing": missing,
                  "probs": classify(model, base + "/tokenizer.json", texts)}))
"""

# A whole classifier folder (`scion export --format huggingface`). Arguments: the folder,
# texts (JSON). Prints transformers' missing and unexpected keys, the model's class and
# labels, and each text's probabilities.
HF_CLASSIFIER = _CLASSIFY + r"""
from transformers import AutoModelForSequenceClassification
folder, texts = sys.argv[1], json.loads(sys.argv[2])
model, info = AutoModelForSequenceClassification.from_pretrained(folder, output_loading_info=True)
model.eval()
print(json.dumps({"missing": info["missing_keys"], "unexpected": info["unexpected_keys"],
                  "class": type(model).__name__,
                  "labels": [model.config.id2label[i] for i in range(len(model.config.id2label))],
                  "probs": classify(model, folder + "/tokenizer.json", texts)}))
"""

# A PEFT prefix-tuning classifier adapter (PREFIX_TUNING, SEQ_CLS) on its base, each text
# alone and all texts in one right-padded batch with an attention mask (PEFT puts ones in
# front for the virtual tokens). Arguments as PEFT_CLASSIFIER. Prints the adapter's
# unexpected keys and missing head keys, checking that prompt_embeddings and the head went
# where PEFT runs them, and both sets of probabilities.
PEFT_PREFIX_CLASSIFIER = _CLASSIFY + r"""
from peft import PeftModel
from peft.utils import set_peft_model_state_dict
from safetensors.torch import load_file
from transformers import AutoModelForSequenceClassification
base, adapter, labels, texts = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=labels)
model = PeftModel.from_pretrained(model, adapter).eval()
weights = load_file(adapter + "/adapter_model.safetensors")
result = set_peft_model_state_dict(model, weights)
# prompt_embeddings goes to the prompt encoder (strictly), not to a module: the module load
# reports it unexpected, so check the encoder holds it instead.
unexpected = [k for k in result.unexpected_keys if k != "prompt_embeddings"]
if not torch.equal(model.prompt_encoder["default"].embedding.weight, weights["prompt_embeddings"]):
    unexpected.append("prompt_embeddings (not in the prompt encoder)")
state = model.state_dict()
for key, value in weights.items():
    if key == "prompt_embeddings":
        continue
    runs = key.replace("classifier", "classifier.modules_to_save.default", 1)
    if runs not in state or not torch.equal(state[runs], value):
        unexpected.append(key + " (not in the head PEFT runs)")
missing = [k for k in result.missing_keys if "modules_to_save" in k]
tok = Tokenizer.from_file(base + "/tokenizer.json")
tok.no_padding()
tok.no_truncation()
rows = [tok.encode(t).ids for t in texts]
longest = max(len(r) for r in rows)
pad = model.config.pad_token_id or 0
ids = torch.tensor([r + [pad] * (longest - len(r)) for r in rows])
mask = torch.tensor([[1] * len(r) + [0] * (longest - len(r)) for r in rows])
with torch.no_grad():
    batched = torch.softmax(model(input_ids=ids, attention_mask=mask).logits, -1).tolist()
print(json.dumps({"unexpected": unexpected, "missing": missing,
                  "probs": classify(model, base + "/tokenizer.json", texts), "batched": batched}))
"""


# A causal LM's summed log-probability of each text as scion's ContinuationScorer frames it:
# one row [BOS] + text[:-1], the text tokenised without the post-processor; each text alone
# and all in one right-padded batch. Arguments: the base folder, the PEFT adapter folder
# (or ""), the BOS id, the texts (JSON). Prints the adapter keys PEFT found unexpected or
# missing, and the sums, token counts and batched sums.
CAUSAL_LM_LOGPROBS = r"""
import json, sys, torch
from peft import PeftModel
from peft.utils import set_peft_model_state_dict
from safetensors.torch import load_file
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM
base, adapter, bos, texts = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
model, info = AutoModelForCausalLM.from_pretrained(base, output_loading_info=True)
model.eval()
unexpected, missing, virtual = info["unexpected_keys"], info["missing_keys"], 0
if adapter:
    model = PeftModel.from_pretrained(model, adapter).eval()
    weights = load_file(adapter + "/adapter_model.safetensors")
    result = set_peft_model_state_dict(model, weights)
    # Prompt learning: PEFT loads prompt_embeddings into the prompt encoder (strict, so a
    # wrong shape fails) and reports the key as unexpected to the module load; check that
    # the encoder holds the file's values instead.
    unexpected = [k for k in result.unexpected_keys if k != "prompt_embeddings"]
    if "prompt_embeddings" in weights and not torch.equal(
            model.prompt_encoder["default"].embedding.weight, weights["prompt_embeddings"]):
        unexpected.append("prompt_embeddings (not loaded into the prompt encoder)")
    missing = [k for k in result.missing_keys if "lora_" in k or "modules_to_save" in k]
    if model.peft_config["default"].peft_type == "PROMPT_TUNING":
        virtual = model.peft_config["default"].num_virtual_tokens
tok = Tokenizer.from_file(base + "/tokenizer.json")
tok.no_padding()
tok.no_truncation()
sums, counts = [], []
with torch.no_grad():
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False).ids
        row = torch.tensor([[bos] + ids[:-1]])
        logits = model(input_ids=row, attention_mask=torch.ones_like(row)).logits[0, virtual:]
        logp = torch.log_softmax(logits.double(), -1)
        sums.append(sum(logp[j, t].item() for j, t in enumerate(ids)))
        counts.append(len(ids))
# The same rows in one right-padded batch with an attention mask (PEFT puts ones in front
# for virtual tokens): right padding moves no real token's position.
rows = [[bos] + tok.encode(t, add_special_tokens=False).ids[:-1] for t in texts]
longest = max(len(r) for r in rows)
ids = torch.tensor([r + [0] * (longest - len(r)) for r in rows])
mask = torch.tensor([[1] * len(r) + [0] * (longest - len(r)) for r in rows])
batched = []
with torch.no_grad():
    logp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits[:, virtual:].double(), -1)
    for b, text in enumerate(texts):
        targets = tok.encode(text, add_special_tokens=False).ids
        batched.append(sum(logp[b, j, t].item() for j, t in enumerate(targets)))
print(json.dumps({"unexpected": unexpected, "missing": missing, "sums": sums, "counts": counts,
                  "batched_sums": batched}))
"""
