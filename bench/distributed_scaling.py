#!/usr/bin/env python3
"""Data parallelism over MPI on the CPU: W1 and W3 (docs/benchmarks.md) through the
real `scion adapt` / `scion train` path, with 1 rank of T threads against 2 ranks of T/2
threads each, on the same cores. Prints one line per configuration and repetition, the
medians, and the 2-rank speedup and scaling efficiency (speedup / 2).

W1: 8 jobs, LoRA r8 (alpha 16) on q and v of every layer plus a 2-class head, on a frozen
encoder L=4 d=256 h=4 f=1024 T=128 (byte tokenizer, V=260), batch 8, 20 AdamW steps each,
co-batched (--w1-steps changes the 20, for a quick smoke run). W3: full training of an encoder L=12 d=768 h=12 f=3072 T=128, batch 16,
--w3-steps AdamW steps (default 3). Tokens/s is the co-batched group's, as `scion --json`
reports it (wall time of the group, setup included).

Training runs data parallel (`--parallel data`; one trunk, so `auto` would pick it too).

Usage: bench/distributed_scaling.py --scion build/cli/scion [--reps 3] [--threads 2]
       [--w1-steps 20] [--w3-steps 3] [--only w1|w3]
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


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def isa():
    with open("/proc/cpuinfo") as f:
        flags = next((line for line in f if line.startswith("flags")), "").split()
    return ", ".join(x for x in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if x in flags)


def write_data(path, rows, seed):
    rng = random.Random(seed)
    words = ["good", "bad", "great", "awful", "fine", "poor", "film", "plot", "actor", "scene"]
    with open(path, "w") as f:
        for _ in range(rows):
            text = " ".join(rng.choice(words) for _ in range(40))[:126]
            f.write(json.dumps({"text": text, "label": rng.choice(["negative", "positive"])}) + "\n")


W1_ARCH = "{type: encoder, layers: 4, width: 256, heads: 4, ffn_width: 1024, max_length: 128}"
W3_ARCH = "{type: encoder, layers: 12, width: 768, heads: 12, ffn_width: 3072, max_length: 128}"


def w1_spec(steps):
    lines = ["datasets:"]
    lines += [f"  d{j}: {{path: data/d{j}.jsonl, labels: [negative, positive]}}" for j in range(8)]
    lines += ["models:", "  base:", f"    architecture: {W1_ARCH}",
              "    train: {data: d0, objective: classification, steps: 1, batch_size: 8, seed: 1}"]
    for j in range(8):
        lines += [f"  job{j}:", "    from: base",
                  "    adapt: {lora: {rank: 8, alpha: 16, targets: [q, v]}, head: {}}",
                  f"    train: {{data: d{j}, steps: {steps}, batch_size: 8, seed: {j + 2}, "
                  "optimizer: {type: adamw, lr: 0.001}}"]
    return "\n".join(lines) + "\n", 8


def w3_spec(steps):
    return ("datasets:\n  d0: {path: data/d0.jsonl, labels: [negative, positive]}\nmodels:\n  base:\n"
            f"    architecture: {W3_ARCH}\n"
            f"    train: {{data: d0, objective: classification, steps: {steps}, batch_size: 16, seed: 1}}\n"), 1


def workspace(spec, datasets):
    work = tempfile.mkdtemp(prefix="scion-dp-bench-")
    os.makedirs(os.path.join(work, "data"))
    for j in range(datasets):
        write_data(os.path.join(work, "data", f"d{j}.jsonl"), 256, j)
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(spec)
    return work


def launch(scion, ranks, threads, args, cwd):
    # PMIx's hash store: its shared-memory one fails to lock in some containers
    # (docs/distributed.md).
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PMIX_MCA_gds="hash")
    if ranks == 1:
        command = [scion, *args]
    else:
        command = ["mpirun", "-np", str(ranks), "--oversubscribe", "--allow-run-as-root", "--bind-to", "none",
                   "-x", f"OMP_NUM_THREADS={threads}", scion, *args]
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout)


def bench(name, scion, spec, datasets, command, reps, threads):
    work = workspace(spec, datasets)
    if name == "W1":
        launch(scion, 1, threads, ["-q", "--json", "train"], work)  # the frozen base, untimed
    configs = [(1, threads), (2, max(1, threads // 2))]
    rates = {c: [] for c in configs}
    for rep in range(reps):
        for ranks, per_rank in configs:  # interleaved, so both see the same machine load
            result = launch(scion, ranks, per_rank, ["-q", "--json", *command, "--force", "--parallel", "data"],
                            work)
            group = result["groups"][0]
            rates[(ranks, per_rank)].append(group["tokens_per_second"])
            print(f"{name} ranks={ranks} threads/rank={per_rank} rep={rep + 1}: "
                  f"{group['tokens_per_second']:.0f} tokens/s ({group['seconds']:.2f} s)", flush=True)
    medians = {c: statistics.median(v) for c, v in rates.items()}
    one, two = medians[configs[0]], medians[configs[1]]
    print(f"{name} median: 1 rank {one:.0f} tokens/s, 2 ranks {two:.0f} tokens/s; "
          f"speedup {two / one:.2f}x, scaling efficiency {two / one / 2:.0%}", flush=True)
    shutil.rmtree(work)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scion", required=True)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--w1-steps", type=int, default=20)
    parser.add_argument("--w3-steps", type=int, default=3)
    parser.add_argument("--only", choices=["w1", "w3"])
    args = parser.parse_args()
    scion = os.path.abspath(args.scion)
    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs; ISA: {isa()}); {args.threads} threads in all")
    if args.only in (None, "w1"):
        spec, datasets = w1_spec(args.w1_steps)
        bench("W1", scion, spec, datasets, ["adapt"], args.reps, args.threads)
    if args.only in (None, "w3"):
        spec, datasets = w3_spec(args.w3_steps)
        bench("W3", scion, spec, datasets, ["train"], args.reps, args.threads)


if __name__ == "__main__":
    main()
