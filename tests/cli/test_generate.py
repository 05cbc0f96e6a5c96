#!/usr/bin/env python3
"""`scion predict --generate` end to end on a native byte-level decoder family trained on a
prompt/completion dataset: `validate` checks prompt_field/completion_field; the JSON
document; several models (LoRA, prefix, prompt tuning, a descendant of a descendant) in
one call give what each gives alone, greedy and sampled; a seed changes samples and
repeats them; stop strings, --max-new-tokens and max_length end completions; `eval`
scores completions after their prompts; bad requests exit 2 saying what to change.
(Parity with transformers + PEFT generate: test_hf_generate.py.)"""
import json
import os

from harness import check, run, run_json, temp_dir

PAIRS = [("the cat says", " meow"), ("the dog says", " woof"), ("the cow says", " moo"),
         ("the duck says", " quack"), ("a cat is", " small"), ("a dog is", " loyal")]
# The descendants learn other completions of the same prompts (a CSV file).
OTHER = [("the cat says", " purr"), ("the dog says", " grr"), ("the cow says", " hum"),
         ("the duck says", " honk"), ("a cat is", " fluffy"), ("a dog is", " happy")]

RECIPE = "{data: %s, steps: %d, batch_size: 6, max_length: 24, optimizer: {type: adamw, lr: %s}, seed: %d}"
SPEC = f"""datasets:
  pairs: {{path: pairs.jsonl, prompt_field: prompt, completion_field: completion}}
  pairs-csv: {{path: pairs.csv, prompt_field: q, completion_field: a}}
models:
  base:
    architecture: {{type: decoder, layers: 2, width: 32, heads: 4, ffn_width: 64, max_length: 32}}
    train: {RECIPE % ("pairs", 60, "1.0e-2", 1)}
  lora:
    from: base
    adapt: {{lora: {{rank: 4, alpha: 8, targets: [q, v, ffn_out]}}}}
    train: {RECIPE % ("pairs-csv", 20, "2.0e-2", 2)}
  prefix:
    from: base
    adapt: {{prefix: {{virtual_tokens: 3}}}}
    train: {RECIPE % ("pairs-csv", 40, "5.0e-2", 3)}
  prompt:
    from: base
    adapt: {{prompt: {{virtual_tokens: 4}}}}
    train: {RECIPE % ("pairs-csv", 40, "5.0e-2", 4)}
  lora-prefix:
    from: lora
    adapt: {{prefix: {{virtual_tokens: 2}}}}
    train: {RECIPE % ("pairs", 20, "2.0e-2", 5)}
"""
MODELS = ["base", "lora", "prefix", "prompt", "lora-prefix"]
PROMPTS = ["the cat says", "a dog is", "the owl says"]

work = temp_dir()
with open(os.path.join(work, "pairs.jsonl"), "w") as f:
    for prompt, completion in PAIRS:
        f.write(json.dumps({"prompt": prompt, "completion": completion}) + "\n")
with open(os.path.join(work, "pairs.csv"), "w") as f:
    f.write("q,a\n" + "".join(f"{p},{c}\n" for p, c in OTHER))
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(SPEC)

# ---- validate: the two fields, and what they cannot be used with ----------------------------
rc, out, err = run("validate", cwd=work)
check(rc == 0, f"validate: {out}{err}")
for bad, words in (
    ("pairs: {path: pairs.jsonl, prompt_field: prompt}",
     ["datasets.pairs.prompt_field", "needs completion_field"]),
    ("pairs: {path: pairs.jsonl, prompt_field: prompt, completion_field: prompt}",
     ["two different fields"]),
    ("pairs: {path: pairs.jsonl, prompt_field: prompt, completion_field: completion, labels: [a, b]}",
     ["datasets.pairs.labels", "does not apply to a prompt/completion dataset"]),
    ("pairs: {path: pairs.jsonl, prompt_field: prompt, completion_field: answer}",
     ["pairs.jsonl:1", "missing field 'answer'", "datasets.pairs.completion_field"]),
):
    with open(os.path.join(work, "bad.yaml"), "w") as f:
        f.write(SPEC.replace("pairs: {path: pairs.jsonl, prompt_field: prompt, completion_field: completion}",
                             bad, 1))
    rc, out, err = run("-f", "bad.yaml", "validate", cwd=work)
    check(rc == 2 and all(w in err for w in words), f"validate {bad}: {rc} {err}")
with open(os.path.join(work, "bad.yaml"), "w") as f:
    f.write(SPEC + "  classifier:\n    from: base\n    adapt: {head: {labels: [a, b]}}\n"
            "    train: {data: pairs, steps: 1}\n")
rc, out, err = run("-f", "bad.yaml", "validate", cwd=work)
check(rc == 2 and "models.classifier.train.data" in err and "holds prompts and completions" in err
      and "objective classification" in err, f"a classifier on prompt/completion data: {rc} {err}")

rc, out, err = run("run", cwd=work, timeout=900)
check(rc == 0, f"run: {out}{err}")


def generate(models, *options, prompts=PROMPTS):
    return run_json("predict", *models, "--generate", *sum((["--text", p] for p in prompts), []),
                    *options, cwd=work)


def completions(document):
    return {(g["model"], g["prompt"]): g for g in document["generations"]}


# ---- the document, and several models at once equal to each alone ------------------------
together = generate(MODELS, "--max-new-tokens", "6")
check(set(together) == {"schema_version", "models", "options", "generations"}, f"keys: {together}")
check(together["models"] == MODELS, f"models: {together['models']}")
check(together["options"] == {"max_new_tokens": 6, "temperature": 0.0, "top_k": 0, "top_p": 1.0,
                              "seed": 0, "stop": []}, f"options: {together['options']}")
check([(g["prompt"], g["model"]) for g in together["generations"]]
      == [(p, m) for p in PROMPTS for m in MODELS], "prompt by prompt, then model by model")
for g in together["generations"]:
    check(set(g) == {"model", "prompt", "completion", "finish_reason", "prompt_token_ids",
                     "token_ids"}, f"a generation's keys: {g}")
    # [BOS] then the prompt's bytes (the byte tokenizer: BOS is 257, EOS 258).
    check(g["prompt_token_ids"] == [257] + list(g["prompt"].encode()), f"framed prompt: {g}")
    check(1 <= len(g["token_ids"]) <= 6, f"token count: {g}")
    ended_at_eos = g["token_ids"][-1] == 258
    check(g["finish_reason"] == ("eos" if ended_at_eos else "length"), f"finish: {g}")
    # The completion is the tokens' bytes as text; bytes that form no character print as
    # U+FFFD (a sampled byte-level model may stop inside one), so the JSON stays valid.
    raw = bytes(t for t in g["token_ids"] if t < 256)
    try:
        check(g["completion"] == raw.decode("utf-8"), f"the completion is the tokens' text: {g}")
    except UnicodeDecodeError:
        check("\ufffd" in g["completion"], f"ill-formed UTF-8 becomes U+FFFD: {g}")
    check(258 not in g["token_ids"][:-1], f"nothing after EOS: {g}")
for model in MODELS:
    alone = generate([model], "--max-new-tokens", "6")
    for g in alone["generations"]:
        check(g == completions(together)[(model, g["prompt"])], f"{model} alone: {g}")
texts = {m: [completions(together)[(m, p)]["token_ids"] for p in PROMPTS] for m in MODELS}
check(len({json.dumps(t) for t in texts.values()}) >= 3, f"the adapters change the texts: {texts}")
# Training on the pairs taught the base their completions (the loss is on them alone).
taught = completions(together)[("base", "the cat says")]
check(taught["completion"] == " meow" and taught["finish_reason"] == "eos",
      f"base continues a training prompt with its completion: {taught}")

# ---- sampling: seeded, the same alone and together, with --chunk-size ------------------------
SAMPLING = ["--max-new-tokens", "6", "--temperature", "1.5", "--top-k", "50", "--top-p", "0.95"]
sampled = generate(MODELS, *SAMPLING, "--seed", "11")
check(sampled["options"]["temperature"] == 1.5 and sampled["options"]["seed"] == 11, f"{sampled['options']}")
check(generate(MODELS, *SAMPLING, "--seed", "11", "--chunk-size", "2")["generations"]
      == sampled["generations"], "the chunk size does not change samples")
for model in ("prefix", "lora-prefix"):
    for g in generate([model], *SAMPLING, "--seed", "11")["generations"]:
        check(g == completions(sampled)[(model, g["prompt"])], f"{model} sampled alone: {g}")
reseeded = generate(MODELS, *SAMPLING, "--seed", "12")
check(reseeded["generations"] != sampled["generations"], "another seed samples other texts")
check(sampled["generations"] != together["generations"], "sampling is not greedy")

# ---- ends: a stop string, max_length ------------------------------------------------------
candidates = [g for g in together["generations"] if len(g["completion"]) >= 3
              and "\ufffd" not in g["completion"]]
check(candidates, "some completion is long enough to take a stop string from")
first = candidates[0]
stop = first["completion"][1:3]
cut = completions(generate([first["model"]], "--max-new-tokens", "6", "--stop", stop, "--stop", "zzz",
                           prompts=[first["prompt"]]))
g = cut[(first["model"], first["prompt"])]
check(g["finish_reason"] == "stop" and g["completion"] == first["completion"][:first["completion"].find(stop)]
      and g["token_ids"] == first["token_ids"][:len(g["token_ids"])],
      f"--stop {stop!r}: {g} (free: {first})")
# [BOS] + 29 bytes of max_length 32: 3 positions left, so 3 tokens (the last never runs).
long_prompt = "x" * 29
g = generate(["base"], "--max-new-tokens", "20", prompts=[long_prompt])["generations"][0]
check(g["finish_reason"] == "length" and len(g["token_ids"]) == 3 or g["finish_reason"] == "eos",
      f"max_length ends the completion: {g}")

# ---- text output ----------------------------------------------------------------------------
rc, out, err = run("predict", "base", "lora", "--generate", "--text", "the cat says",
                   "--max-new-tokens", "6", cwd=work)
check(rc == 0, f"text output: {err}")
lines = out.splitlines()
check(lines[0] == '"the cat says"' and lines[1].startswith("  base  ")
      and lines[2].startswith("  lora  ") and "tokens)" in lines[1], f"text output:\n{out}")

# ---- eval: completions after their prompts ----------------------------------------------------
result = run_json("eval", "base", "--data", "pairs", "--no-record", cwd=work)
metrics = result["results"][0]["metrics"]
completion_tokens = sum(len(c.encode()) for _, c in PAIRS)
check(metrics["tokens"] == completion_tokens and metrics["rows"] == len(PAIRS),
      f"eval scores the completions' tokens: {metrics}")

# ---- versions: MODEL@N generates the version run N made, under that name ------------------
before = generate(["lora"], "--max-new-tokens", "6")
with open(os.path.join(work, "scion.yaml")) as f:
    spec = f.read()
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(spec.replace(RECIPE % ("pairs-csv", 20, "2.0e-2", 2), RECIPE % ("pairs-csv", 30, "2.0e-2", 2)))
rc, out, err = run("run", "lora", cwd=work, timeout=600)
check(rc == 0, f"run lora again: {out}{err}")
versions = run_json("lineage", "versions", "lora", cwd=work)
old = min(v["run"] for v in versions["versions"])
both = generate([f"lora@{old}", "lora"], "--max-new-tokens", "6")
check(both["models"] == [f"lora@{old}", "lora"], f"models as named: {both['models']}")
check([(g["prompt"], g["model"]) for g in both["generations"]]
      == [(p, m) for p in PROMPTS for m in (f"lora@{old}", "lora")], "prompt by prompt, as named")
for g in before["generations"]:
    check({**g, "model": f"lora@{old}"} == completions(both)[(f"lora@{old}", g["prompt"])],
          f"lora@{old} generates as lora did before it retrained: {g}")

# ---- refused ----------------------------------------------------------------------------------
for args, words in (
    (["predict", "base", "--text", "a", "--temperature", "0.5"],
     ["--temperature applies only with --generate"]),
    (["predict", "base", "--generate", "--text", "a", "--assert"], ["--assert", "does not apply"]),
    (["predict", "base", "--generate", "--text", "a", "--temperature", "-1"], ["temperature is -1"]),
    (["predict", "base", "--generate", "--text", "a", "--top-p", "0"], ["top-p is 0"]),
    (["predict", "base", "--generate", "--text", "a", "--stop", ""], ["stop string is empty"]),
    (["predict", "base", "--generate", "--text", "a", "--text", "y" * 40],
     ["--text 2 is 41 tokens framed", "reads at most 32", "shorten the prompt"]),
    (["predict", "nope", "--generate", "--text", "a"], ["no model 'nope'"]),
    # A causal language model asked for a label points to --generate (#40).
    (["predict", "lora", "--text", "the cat says"],
     ["model 'lora' has no classifier head", "causal language model",
      "scion predict lora --generate --text"]),
):
    rc, out, err = run(*args, cwd=work)
    check(rc == 2 and all(w in err for w in words), f"{args}: {rc} {err}")
with open(os.path.join(work, "scion.yaml"), "a") as f:
    f.write("  classifier:\n    from: base\n    adapt: {head: {labels: [a, b]}}\n"
            "    train: {data: labelled, steps: 1}\n")
with open(os.path.join(work, "scion.yaml")) as f:
    spec = f.read()
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(spec.replace("datasets:\n", "datasets:\n  labelled: {path: labelled.jsonl, labels: [a, b]}\n", 1))
with open(os.path.join(work, "labelled.jsonl"), "w") as f:
    f.write('{"text": "x", "label": "a"}\n{"text": "y", "label": "b"}\n')
rc, out, err = run("predict", "classifier", "--generate", "--text", "a", cwd=work)
check(rc == 2 and "model 'classifier' is a classifier" in err and "causal language model" in err,
      f"a classifier cannot generate: {rc} {err}")
print("ok")
