#!/usr/bin/env python3
"""W5 of docs/benchmarks.md: LoRA adaptation of the real all-MiniLM-L6-v2, scion
against PyTorch + PEFT, in one run.

The model is the one tests/python/fetch-minilm.sh caches (~/.cache/scion/all-MiniLM-L6-v2;
run it once first). Jobs (--jobs, default 8): LoRA rank 8, alpha 16 on query and value of
every layer plus a 2-class head, on the example's film reviews
(examples/sentiment/data/critics.jsonl) joined into texts longer than --max-length tokens so
that every row is exactly T = --max-length (128) tokens, batch 16, --steps (50) AdamW steps
at lr 1e-3, each job its own seed. Configurations, interleaved --reps times, medians, each
in fp32 and bf16 (--precision both, the default; or one of them):

  (a) scion co-batched: `scion adapt --json --precision P` training the jobs as one group;
  (b) scion one after another: `scion adapt JOB --json --precision P` once per job;
  (c) PyTorch + PEFT one after another: bench/peers/w5_peft.py in --python (default
      bench/.venv's: PyTorch 2.15 from PyPI with transformers 4.40.2 and peft 0.10.0,
      bench/make_venv.sh), transformers' BertForSequenceClassification with peft's
      LoraConfig on query/value, classifier in modules_to_save, same threads, batch, T,
      steps; bf16 under torch.autocast("cpu", dtype=torch.bfloat16).

tokens/s, two figures each (docs/benchmarks.md, "Like with like"): the whole training, jobs ×
steps × batch × T over the training time (scion: the groups' seconds from `scion adapt
--json`, setup of the group included; peer: its timed steps), and the steady state: the
median step after the first (scion: the group's `steady_tokens_per_second`; for (b) the
median over the jobs; peer: its median step after each job's first). And the time to the
first step, from the process's start: scion's `first_step_end_seconds` ((b): the first
job's), the peer's `first_step_seconds` (interpreter, imports and model loading included).
--peer-bf16-steps runs (c) in bf16 for fewer steps than the rest (its tokens/s is then over
its own token count, and the run says so): PyTorch's bf16 autocast on a CPU without bf16
instructions is tens of times slower than its fp32. (c) in fp32 always runs --steps.
Peak RSS: scion's from wait4() on each `scion adapt` process (the largest for (b)), the
peer's its own ru_maxrss (interpreter and libraries included). The import time of the
checkpoint is the wall time of `scion import FOLDER --as minilm` into an empty store
(reading and converting the safetensors, digests, writing the store), once per rep.

Smoke run (minutes, checks the plumbing only; its figures mean nothing):
  python3 bench/w5_minilm.py --scion build/cli/scion --jobs 2 --steps 2 --reps 1
Full run (quiet machine; bench/README.md, W5):
  OMP_WAIT_POLICY=passive python3 bench/w5_minilm.py --scion build-release/cli/scion \\
      --python bench/.venv/bin/python --threads 2 --reps 3 --precision both
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from precision_table import cpu_line, load_average  # noqa: E402

BATCH = 16


def long_reviews(source, out, words, seed):
    """Reviews joined until each has at least `words` words, labelled by the first."""
    with open(source) as f:
        rows = [json.loads(line) for line in f]
    order = random.Random(seed)
    with open(out, "w") as f:
        for first in rows:
            text = [first["text"]]
            while sum(len(t.split()) for t in text) < words:
                text.append(order.choice(rows)["text"])
            f.write(json.dumps({"text": " ".join(text), "label": first["label"]}) + "\n")


def write_spec(work, jobs, steps, max_length):
    lines = ["datasets:",
             "  reviews: {path: reviews.jsonl, labels: [negative, positive]}",
             "models:",
             "  minilm:",
             "    import: all-MiniLM-L6-v2"]
    for job in range(jobs):
        lines += [f"  job{job}:",
                  "    from: minilm",
                  "    adapt: {lora: {rank: 8, alpha: 16, targets: [q, v]}, "
                  "head: {labels: [negative, positive]}}",
                  f"    train: {{data: reviews, steps: {steps}, batch_size: {BATCH}, "
                  f"max_length: {max_length}, optimizer: {{type: adamw, lr: 1.0e-3}}, "
                  f"seed: {job + 1}}}"]
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")


def run_with_rss(argv, env):
    """Runs argv to completion; (stdout, peak RSS MiB of that process, wall seconds)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed ({proc.returncode}): {err.read()[-2000:]}")
        return out.read(), usage.ru_maxrss / 1024, seconds


def fresh_store(work):
    shutil.rmtree(os.path.join(work, ".scion"), ignore_errors=True)


def scion_import(scion, work, env):
    fresh_store(work)
    _, _, seconds = run_with_rss([scion, "-C", work, "import",
                                  os.path.join(work, "all-MiniLM-L6-v2"), "--as", "minilm"], env)
    return seconds


def scion_adapt(scion, work, env, precision, models):
    """Trains `models` (all when empty) in one `scion adapt`; (seconds of its groups, RSS,
    group sizes, the first group's steady tokens/s and time to its first step)."""
    out, rss, _ = run_with_rss([scion, "-C", work, "adapt", "--json", "--force", "--precision",
                                precision, *models], env)
    groups = json.loads(out)["groups"]
    return (sum(g["seconds"] for g in groups), rss, [len(g["models"]) for g in groups],
            groups[0]["steady_tokens_per_second"], groups[0]["first_step_end_seconds"])


def default_peer_python():
    """bench/.venv's Python (bench/make_venv.sh: PyTorch 2.15 + transformers + peft) when
    it imports peft, else None."""
    python = os.path.join(HERE, ".venv", "bin", "python")
    if os.path.exists(python) and subprocess.run(
            [python, "-c", "import peft, transformers, torch"], capture_output=True).returncode == 0:
        return python
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scion", default=os.path.join(REPO, "build", "cli", "scion"))
    ap.add_argument("--python", help="a Python with torch, transformers and peft for (c) "
                                     "(default: bench/.venv's, when it has them); "
                                     "'none' leaves (c) out")
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/scion/all-MiniLM-L6-v2"))
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--peer-bf16-steps", type=int,
                    help="steps per job of (c) in bf16 only (default: --steps); a rate over "
                         "fewer steps, for PyTorch's bf16 autocast on CPUs without bf16 "
                         "instructions, tens of times slower than its fp32")
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--precision", choices=["fp32", "bf16", "both"], default="both",
                    help="both (default): fp32 and bf16 interleaved in each repetition")
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.model, "model.safetensors")):
        sys.exit(f"no MiniLM at {args.model}: run tests/python/fetch-minilm.sh first")
    if args.python is None:
        args.python = default_peer_python()
    elif args.python == "none":
        args.python = None
    if args.peer_bf16_steps is None:
        args.peer_bf16_steps = args.steps

    work = tempfile.mkdtemp(prefix="scion-w5-")
    try:
        run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def peer_steps(args, precision):
    """Steps per job of (c) in `precision`."""
    return args.peer_bf16_steps if precision == "bf16" else args.steps


def peer(args, work, env, precision):
    """(c) in a process of its own: (seconds of its timed steps, its peak RSS MiB, versions)."""
    out, _, _ = run_with_rss(
        [args.python, os.path.join(HERE, "peers", "w5_peft.py"), "--folder", args.model,
         "--data", os.path.join(work, "reviews.jsonl"), "--jobs", str(args.jobs),
         "--steps", str(peer_steps(args, precision)), "--batch", str(BATCH), "--max-length",
         str(args.max_length), "--threads", str(args.threads), "--precision", precision], env)
    fields = dict(f.split("=", 1) for f in out.strip().splitlines()[-1].split())
    steady = BATCH * args.max_length / float(fields["step_seconds"])
    return float(fields["seconds"]), float(fields["peak_rss_mib"]), \
        f"torch {fields['torch']}, peft {fields['peft']}", steady, float(fields["first_step_seconds"])


def run(args, work):
    os.symlink(args.model, os.path.join(work, "all-MiniLM-L6-v2"))
    # ~1.4 word pieces per word: 2 words per token leaves room above T.
    long_reviews(os.path.join(REPO, "examples", "sentiment", "data", "critics.jsonl"),
                 os.path.join(work, "reviews.jsonl"), 2 * args.max_length, seed=5)
    write_spec(work, args.jobs, args.steps, args.max_length)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    precisions = ["fp32", "bf16"] if args.precision == "both" else [args.precision]
    tokens = {(precision, key): args.jobs * (peer_steps(args, precision) if key == "c" else
                                             args.steps) * BATCH * args.max_length
              for precision in precisions for key in "abc"}

    print(cpu_line(args.scion))
    print(f"load average before: {load_average()}")
    print(f"W5: {args.jobs} jobs x {args.steps} steps x batch {BATCH} x T {args.max_length} = "
          f"{tokens[(precisions[0], 'a')]} tokens per configuration"
          + (f" ((c) in bf16: {args.peer_bf16_steps} steps, {tokens[('bf16', 'c')]} tokens)"
             if args.peer_bf16_steps != args.steps and "bf16" in precisions and args.python
             else "")
          + f", {' and '.join(precisions)}, {args.threads} threads, {args.reps} reps")
    print(f"peer (c): {args.python or 'none (no Python with peft: left out)'}")
    results = {"import": []}
    for precision in precisions:
        for key in "abc":
            results[(precision, key)] = []
    for rep in range(args.reps):
        results["import"].append(scion_import(args.scion, work, env))
        line = [f"import {results['import'][-1]:.2f} s"]
        for precision in precisions:
            seconds, rss, groups, steady, first = scion_adapt(args.scion, work, env, precision, [])
            if groups != [args.jobs]:
                sys.exit(f"(a) trained as groups of {groups}, not one group of {args.jobs}")
            results[(precision, "a")].append((seconds, rss, steady, first))
            total, highest, steadies, firsts = 0.0, 0.0, [], []
            for job in range(args.jobs):
                seconds, rss, _, steady, first = scion_adapt(args.scion, work, env, precision,
                                                             [f"job{job}"])
                total, highest = total + seconds, max(highest, rss)
                steadies.append(steady)
                firsts.append(first)
            results[(precision, "b")].append((total, highest, statistics.median(steadies), firsts[0]))
            if args.python:
                seconds, rss, versions, steady, first = peer(args, work, env, precision)
                results[(precision, "c")].append((seconds, rss, steady, first))
                if rep == 0 and precision == precisions[0]:
                    print(f"peer: {versions}")
            line += [f"{precision} ({k}) {results[(precision, k)][-1][0]:.2f} s"
                     for k in "abc" if results[(precision, k)]]
        print(f"rep {rep + 1}: " + ", ".join(line), flush=True)

    names = {"a": "scion co-batched", "b": "scion one after another",
             "c": "PyTorch + PEFT one after another"}
    for precision in precisions:
        rates = {}
        for key in "abc":
            samples = results[(precision, key)]
            if not samples:
                continue
            seconds = statistics.median(s[0] for s in samples)
            rss = statistics.median(s[1] for s in samples)
            steady = statistics.median(s[2] for s in samples)
            first = statistics.median(s[3] for s in samples)
            rates[key] = tokens[(precision, key)] / seconds
            rates[key + " steady"] = steady
            print(f"{precision} ({key}) {names[key]}: {seconds:.2f} s, {rates[key]:,.0f} tokens/s; "
                  f"steady {steady:,.0f} tokens/s, first step {first:.2f} s after start; "
                  f"peak RSS {rss:,.0f} MiB  (per rep: "
                  f"{', '.join(f'{s[0]:.2f}' for s in samples)} s)")
        ratios = [f"a/b {rates['a'] / rates['b']:.2f}x (steady "
                  f"{rates['a steady'] / rates['b steady']:.2f}x)"]
        if "c" in rates:
            ratios += [f"a/c {rates['a'] / rates['c']:.2f}x (steady "
                       f"{rates['a steady'] / rates['c steady']:.2f}x)",
                       f"b/c {rates['b'] / rates['c']:.2f}x (steady "
                       f"{rates['b steady'] / rates['c steady']:.2f}x)"]
        print(f"{precision} speedup (tokens/s ratio): " + ", ".join(ratios))
    print(f"import of the checkpoint: median {statistics.median(results['import']):.2f} s "
          f"(per rep: {', '.join(f'{s:.2f}' for s in results['import'])} s)")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
