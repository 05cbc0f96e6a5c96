#!/usr/bin/env python3
"""(IA)³ against PEFT 0.10 itself, both ways, on the tiny BERT fixture. A classifier
trained by scion with (IA)³ vectors on the key and value outputs and on the FFN
down-projection's input exports as an IA3 adapter (`--format peft`: target_modules and
feedforward_modules as regular expressions, `...key.ia3_l` of shape (out, 1), the
feed-forward ones (1, in)) that PeftModel.from_pretrained loads with no missing or
unexpected keys and whose probabilities equal `scion predict --json` within 1e-4; the
merged model folder (`--format huggingface`) does too, and so does a LoRA descendant of it
exported over its merged base. An IA3 adapter made and saved by PEFT (vectors and head
drawn at random) comes in with `scion import --peft` and predicts what PEFT predicts within
1e-4 (its target_modules and feedforward_modules module-name lists, read as PEFT reads
them); scion's own export comes back unchanged; an adapter whose feed-forward modules
differ from the declaration is refused, naming what each scales. Skips (77) without the interop venv."""
import json
import os
import shutil

from harness import SOURCE_ROOT, check, run, run_json, temp_dir
from interop_python import HF_CLASSIFIER, PEFT_CLASSIFIER, interop_python, run_python

PYTHON = interop_python(SOURCE_ROOT)
FIXTURE = os.path.join(SOURCE_ROOT, "tests", "fixtures", "hf", "tiny-bert")
TOLERANCE = 1e-4  # fp32 both sides; the bound
LABELS = ("neg", "pos", "meh")
TEXTS = ["the movie was great", "i hated the plot", "a really terrible film!",
         "the acting was not bad, i loved it"]

SPEC = """datasets:
  reviews: {path: reviews.jsonl, labels: [neg, pos, meh]}
models:
  bert:
    import: tiny-bert
  ia3:
    from: bert
    adapt: {ia3: {targets: [k, v], feedforward: [ffn_out]}, head: {}}
    train: &recipe {data: reviews, steps: 15, batch_size: 6, optimizer: {type: adamw, lr: 5.0e-2}, seed: 3}
  ia3-lora:
    from: ia3
    adapt: {lora: {rank: 2, alpha: 4, targets: [q]}}
    train: *recipe
"""

# PEFT's own IA3 adapter on the base: random vectors (away from the ones they start at) and
# a random head, saved as save_pretrained saves them. Arguments: base, output folder, config (JSON:
# target_modules, feedforward_modules), texts. Prints each text's probabilities.
PEFT_MAKES_IA3 = r"""
import json, os, sys, torch
from tokenizers import Tokenizer
from peft import IA3Config, get_peft_model
from peft.utils import get_peft_model_state_dict
from safetensors.torch import save_file
from transformers import AutoModelForSequenceClassification
base, out, modules, texts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
torch.manual_seed(7)
model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=3)
config = IA3Config(task_type="SEQ_CLS", target_modules=modules["target_modules"],
                   feedforward_modules=modules["feedforward_modules"])
model = get_peft_model(model, config)
with torch.no_grad():
    for name, p in model.named_parameters():
        if "ia3_l" in name:
            p.copy_(1.0 + 0.5 * torch.randn_like(p))
        elif "modules_to_save" in name and "classifier" in name:
            p.copy_(0.5 * torch.randn_like(p))
model.eval()
# save_pretrained's two files (its model card needs Jinja2, which the venv lacks).
os.makedirs(out)
model.peft_config["default"].save_pretrained(out)
save_file({k: v.contiguous() for k, v in get_peft_model_state_dict(model).items()},
          out + "/adapter_model.safetensors", metadata={"format": "pt"})
tok = Tokenizer.from_file(base + "/tokenizer.json")
tok.no_padding()
probs = []
with torch.no_grad():
    for text in texts:
        ids = torch.tensor([tok.encode(text).ids])
        probs.append(torch.softmax(model(input_ids=ids).logits[0], -1).tolist())
print(json.dumps({"probs": probs}))
"""


def predict(model):
    ours = run_json("predict", model, *sum((["--text", t] for t in TEXTS), []), cwd=work)
    return [[p["probabilities"][label] for label in LABELS] for p in ours["predictions"]]


def worst_difference(a, b):
    return max(abs(x - y) for s, p in zip(a, b) for x, y in zip(s, p))


work = temp_dir()
shutil.copytree(FIXTURE, os.path.join(work, "tiny-bert"))
rows = [("the movie was great", "pos"), ("i loved it", "pos"), ("really good acting", "pos"),
        ("the movie was terrible", "neg"), ("i hated it", "neg"), ("really bad acting", "neg"),
        ("the plot was a film", "meh"), ("it was a movie", "meh")]
with open(os.path.join(work, "reviews.jsonl"), "w") as f:
    for text, label in rows:
        f.write(json.dumps({"text": text, "label": label}) + "\n")
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(SPEC)
base = os.path.join(work, "tiny-bert")
rc, out, err = run("import", "tiny-bert", "--as", "bert", cwd=work)
check(rc == 0, f"import failed: {err}")
rc, out, err = run("adapt", cwd=work, timeout=900)
check(rc == 0, f"adapt failed: {out}{err}")

# ---- export: PEFT runs scion's (IA)³ as scion does ------------------------------------
folder = os.path.join(work, "ia3-peft")
run_json("export", "ia3", "--format", "peft", "-o", folder, cwd=work)
with open(os.path.join(folder, "adapter_config.json")) as f:
    config = json.load(f)
check(config["peft_type"] == "IA3" and config["task_type"] == "SEQ_CLS"
      and config["modules_to_save"] == ["classifier"], f"ia3: {config}")
check(config["feedforward_modules"] == r"bert\.encoder\.layer\.\d+\.(output\.dense)",
      f"ia3 feedforward_modules: {config['feedforward_modules']}")
scion_probs = predict("ia3")
theirs = json.loads(run_python(PYTHON, PEFT_CLASSIFIER, base, folder, "3", json.dumps(TEXTS)))
check(not theirs["unexpected"], f"ia3: PEFT found unexpected keys {theirs['unexpected']}")
check(not theirs["missing"], f"ia3: PEFT misses adapter keys {theirs['missing']}")
worst = worst_difference(scion_probs, theirs["probs"])
print(f"ia3: largest probability difference scion vs PEFT = {worst:.2e}")
check(worst < TOLERANCE, f"ia3: scion {scion_probs} vs PEFT {theirs['probs']} differ by {worst}")
check(max(max(p) for p in scion_probs) > 0.4, f"ia3: probabilities look untrained: {scion_probs}")

# ---- --format huggingface: the vectors folded into the weights (and k, v biases) --------
hf = os.path.join(work, "ia3-hf")
run_json("export", "ia3", "--format", "huggingface", "-o", hf, cwd=work)
merged = json.loads(run_python(PYTHON, HF_CLASSIFIER, hf, json.dumps(TEXTS)))
check(not merged["missing"] and not merged["unexpected"], f"ia3 (huggingface): {merged}")
worst = worst_difference(scion_probs, merged["probs"])
print(f"ia3 (huggingface): largest probability difference scion vs transformers = {worst:.2e}")
check(worst < TOLERANCE, f"ia3 merged: scion {scion_probs} vs transformers {merged['probs']}")

# ---- a LoRA descendant: its adapter over DIR/base, the (IA)³ parent merged -------------
stacked = os.path.join(work, "ia3-lora-peft")
exported = run_json("export", "ia3-lora", "--format", "peft", "-o", stacked, cwd=work)
check(exported["merged"] == ["ia3"], f"ia3-lora: {exported}")
with open(os.path.join(stacked, "adapter_config.json")) as f:
    stacked_config = json.load(f)
stacked_probs = predict("ia3-lora")
theirs = json.loads(run_python(PYTHON, PEFT_CLASSIFIER, stacked_config["base_model_name_or_path"],
                               stacked, "3", json.dumps(TEXTS)))
check(not theirs["unexpected"] and not theirs["missing"], f"ia3-lora keys: {theirs}")
worst = worst_difference(stacked_probs, theirs["probs"])
print(f"ia3-lora (PEFT over merged ia3): largest probability difference = {worst:.2e}")
check(worst < TOLERANCE, f"ia3-lora: scion {stacked_probs} vs PEFT {theirs['probs']}")

# ---- import --peft: scion's export back, and an adapter PEFT made ----------------------
with open(os.path.join(work, "scion.yaml"), "a") as f:
    f.write("""  ia3-back:
    from: bert
    adapt: {ia3: {targets: [k, v], feedforward: [ffn_out]}, head: {}}
    train: *recipe
  ia3-from-peft:
    from: bert
    adapt: {ia3: {targets: [q, k, v], feedforward: [ffn_in]}, head: {}}
    train: *recipe
  ia3-no-ffn:
    from: bert
    adapt: {ia3: {targets: [k, v], feedforward: []}, head: {}}
    train: *recipe
""")
imported = run_json("import", "--peft", folder, "--as", "ia3-back", cwd=work)
check(imported["tensors"] == 2 * 3 + 2, f"ia3-back: {imported}")  # 2 layers x 3 vectors + head
check(predict("ia3-back") == scion_probs, "export then import changed ia3's predictions")

made = os.path.join(work, "peft-made")
# Module-name lists, as PEFT users write them (not the regular expressions scion exports).
modules = {"target_modules": ["query", "key", "value", "intermediate.dense"],
           "feedforward_modules": ["intermediate.dense"]}
peft_probs = json.loads(run_python(PYTHON, PEFT_MAKES_IA3, base, made, json.dumps(modules),
                                   json.dumps(TEXTS)))["probs"]
imported = run_json("import", "--peft", made, "--as", "ia3-from-peft", cwd=work)
check(imported["tensors"] == 2 * 4 + 2, f"ia3-from-peft: {imported}")
ours = predict("ia3-from-peft")
worst = worst_difference(ours, peft_probs)
print(f"ia3-from-peft: largest probability difference scion vs PEFT = {worst:.2e}")
check(worst < TOLERANCE, f"ia3-from-peft: scion {ours} vs PEFT {peft_probs}")
check(worst_difference(ours, scion_probs) > 1e-3, "PEFT's random adapter predicts as ia3 does")
rc, out, err = run("import", "--peft", folder, "--as", "ia3-no-ffn", cwd=work)
check(rc == 2 and "feedforward_modules" in err and "inputs of {0.ffn_out, 1.ffn_out}" in err,
      f"an adapter with other feed-forward modules: {rc} {err}")
rc, out, err = run("fsck", cwd=work)
check(rc == 0, f"fsck after import --peft: {out}{err}")
print("ok")
