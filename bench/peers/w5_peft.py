#!/usr/bin/env python3
"""W5 PyTorch + PEFT peer: the jobs of bench/w5_minilm.py, one after another, with
transformers and peft themselves.

For each job: AutoModelForSequenceClassification.from_pretrained(FOLDER, num_labels=2)
(BertForSequenceClassification: the pooler, then the classifier), get_peft_model with
LoraConfig(r=8, lora_alpha=16, target_modules=["query", "value"], task_type=SEQ_CLS), so
LoRA on query and value of every layer and the classifier in modules_to_save (trained),
AdamW (lr 1e-3) over the trainable parameters only, --steps steps of --batch rows of
exactly --max-length tokens (the texts are long enough; truncated), the job's own seed
for data order. Only the training steps are timed (model loading is not). Dropout as
scion runs the imported folder: the config's hidden_dropout_prob on the trunk, none on
the attention probabilities (scion has no attention dropout) nor on LoRA's input.

Prints one line: seconds=<x> tokens=<n> step_seconds=<x> first_step_seconds=<x>
peak_rss_mib=<m> torch=<version> peft=<version>: the timed steps' total, the steady state
(the median step over every job's steps after its first) and the time to the first step
(from the process's start, interpreter, imports and the first model's loading included, to
the end of the first job's first step; docs/benchmarks.md, "Like with like").
"""
import argparse
import contextlib
import json
import random
import resource
import statistics
import sys
import time

from process_clock import seconds_since_start

try:
    import peft
    import torch
    from peft import LoraConfig, TaskType, get_peft_model
    from tokenizers import Tokenizer
    from transformers import AutoModelForSequenceClassification
except ImportError as missing:
    print(f"w5 peer: {missing}; run it with bench/.venv's Python (bench/make_venv.sh) or the "
          "interop Python (tests/python/make-interop-venv.sh)")
    sys.exit(77)


def peak_rss_mib():
    """The process's peak resident memory (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read_rows(path, labels):
    rows = []
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            rows.append((row["text"], labels.index(row["label"])))
    return rows


def batches(rows, tokenizer, batch, max_length, steps, seed):
    order = random.Random(seed)
    for _ in range(steps):
        chosen = [rows[order.randrange(len(rows))] for _ in range(batch)]
        encoded = [tokenizer.encode(text).ids[:max_length] for text, _ in chosen]
        if any(len(ids) < max_length for ids in encoded):
            sys.exit("w5 peer: a text is shorter than --max-length; the driver writes long ones")
        yield torch.tensor(encoded), torch.tensor([label for _, label in chosen])


def train_job(args, rows, tokenizer, seed, precision_context):
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_pretrained(
        args.folder, num_labels=2, attention_probs_dropout_prob=0.0)
    config = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["query", "value"],
                        task_type=TaskType.SEQ_CLS)
    model = get_peft_model(model, config)
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    data = list(batches(rows, tokenizer, args.batch, args.max_length, args.steps, seed))
    times = []
    for ids, labels in data:
        start = time.perf_counter()
        with precision_context():
            loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
        if FIRST_STEP[0] is None:
            FIRST_STEP[0] = seconds_since_start()
    return times


FIRST_STEP = [None]  # seconds from the process's start to the end of its first step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", required=True, help="the all-MiniLM-L6-v2 folder")
    ap.add_argument("--data", required=True, help="JSONL with text and label (negative/positive)")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    context = contextlib.nullcontext
    if args.precision == "bf16":
        context = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
    tokenizer = Tokenizer.from_file(args.folder + "/tokenizer.json")
    tokenizer.no_padding()
    tokenizer.no_truncation()
    rows = read_rows(args.data, ["negative", "positive"])
    steps = [train_job(args, rows, tokenizer, 1 + job, context) for job in range(args.jobs)]
    seconds = sum(sum(times) for times in steps)
    later = [t for times in steps for t in times[1:]]
    tokens = args.jobs * args.steps * args.batch * args.max_length
    print(f"seconds={seconds:.3f} tokens={tokens} "
          f"step_seconds={statistics.median(later) if later else 0.0:.4f} "
          f"first_step_seconds={FIRST_STEP[0]:.3f} peak_rss_mib={peak_rss_mib():.1f} "
          f"torch={torch.__version__} peft={peft.__version__}")


if __name__ == "__main__":
    main()
