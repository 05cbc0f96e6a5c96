#!/usr/bin/env python3
"""The precision table of bench/README.md in one run: the machine, its matmul limit, W3 and
W1 in fp32 and bf16 for scion and for PyTorch (eager fp32 and bf16 autocast), and scion's
planned against measured memory.

scion runs through its command line (`scion run --json --precision P` on a spec of the
workload's shape, written to a temporary folder), so its figures are the real training
path: tokens per second of the group (wall time of the group, setup included), its planned
bytes and its measured peak resident growth (docs/cli.md, "Training"). The PyTorch peers
(bench/peers/w3_torch.py, w1_torch.py) run as separate processes with the same threads,
with `--autocast none|bf16`; their peak resident memory is the process's (interpreter and
libraries included), printed for comparison only. Configurations are interleaved
(scion fp32, scion bf16, torch fp32, torch bf16, then again) --reps times; medians.

  python3 bench/precision_table.py --scion build-release/cli/scion \\
      --limit build-release/bench/limit_matmul --python bench/.venv/bin/python --reps 3

On a CPU without bf16 instructions PyTorch's autocast is an emulation 10-40x slower than its
fp32: --bf16-peer-w3-steps and --bf16-peer-w1-jobs/--bf16-peer-w1-steps shorten its runs. W3
also runs scion fp32 with --recompute (activation recomputation): its speed and memory.
"""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_line(scion):
    model, flags = "unknown", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile") if f in flags]
    version = json.loads(subprocess.run([scion, "--version", "--json"], capture_output=True,
                                        text=True, check=True).stdout)
    cpu = version["cpu"]
    bf16 = ("native" if cpu["native_bf16"] else "emulated by oneDNN" if cpu["bf16_kernel"]
            else "emulated in fp32 (no bf16 kernel: rounded operands, fp32 products)")
    return (f"CPU {model}, {os.cpu_count()} logical CPUs, flags: {' '.join(isa)}; oneDNN "
            f"{cpu['onednn']} isa {cpu['isa']}, bf16 {bf16}; scion {version['version']} "
            f"({version['build']['build_type']})")


def write_texts(path, rows, seed, labelled):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(rows):
            text = "".join(chr(rng.randrange(32, 127)) for _ in range(200))
            record = {"text": text}
            if labelled:  # as the W1 peer: more low than high characters
                record["label"] = "low" if sum(ord(c) < 80 for c in text) > 100 else "high"
            f.write(json.dumps(record) + "\n")


def w3_spec(work, layers, steps):
    write_texts(os.path.join(work, "corpus.jsonl"), 64, 1, labelled=False)
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(f"""
datasets:
  corpus: {{path: corpus.jsonl}}
models:
  w3:
    architecture: {{type: encoder, layers: {layers}, width: 768, heads: 12, ffn_width: 3072,
                   max_length: 128, tokenizer: byte}}
    train: {{data: corpus, objective: mlm, steps: {steps}, batch_size: 16, seed: 1,
            optimizer: {{type: adamw, lr: 1.0e-4, weight_decay: 0.01}}}}
""")


def w1_spec(work, jobs, steps):
    datasets, models = [], []
    for j in range(jobs):
        write_texts(os.path.join(work, f"job{j}.jsonl"), steps * 8, 1000 + j, labelled=True)
        datasets.append(f"  job{j}: {{path: job{j}.jsonl, labels: [low, high]}}")
        models.append(f"""  lora-{j}:
    from: base
    adapt: {{lora: {{rank: 8, alpha: 16, targets: [q, v]}}, head: {{}}}}
    train: {{data: job{j}, steps: {steps}, batch_size: 8, seed: {100 + j},
            optimizer: {{type: adamw, lr: 1.0e-3, weight_decay: 0.01}}}}""")
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write("datasets:\n" + "\n".join(datasets) + f"""
models:
  base:
    architecture: {{type: encoder, layers: 4, width: 256, heads: 4, ffn_width: 1024,
                   max_length: 128, tokenizer: byte}}
    train: {{data: job0, objective: classification, steps: 1, batch_size: 8, seed: 1}}
""" + "\n".join(models) + "\n")


def scion_run(scion, work, precision, threads, recompute=False):
    """One `scion run` into an empty store: the group that trains the workload."""
    shutil.rmtree(os.path.join(work, ".scion"), ignore_errors=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    command = [scion, "-C", work, "run", "--json", "--precision", precision]
    if recompute:
        command.append("--recompute")
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"scion run failed ({done.returncode}): {done.stderr[-2000:]}")
    groups = json.loads(done.stdout)["groups"]
    group = groups[-1]  # W3: its one group; W1: the 8 LoRA jobs after the base
    return {"tokens_per_second": group["tokens_per_second"], "planned": group["planned_bytes"],
            "measured": group["peak_resident_bytes"] - group["resident_before_bytes"],
            "models": len(group["models"])}


def peer_run(python, script, args, pattern):
    done = subprocess.run([python, os.path.join(HERE, "peers", script), *args],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{script} failed ({done.returncode}): {done.stderr[-2000:]}")
    line = done.stdout.strip().splitlines()[-1]
    match = re.search(pattern, line)
    peak = float(re.search(r"peak_rss_mib=([0-9.]+)", line).group(1))
    version = re.search(r"torch=(\S+)", line).group(1)
    return float(match.group(1)), peak, version


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scion", required=True)
    ap.add_argument("--limit", required=True, help="bench/limit_matmul")
    ap.add_argument("--python", default="/usr/bin/python3", help="the peers' interpreter")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", type=int, default=2048, help="the limit's square size")
    ap.add_argument("--w3-layers", type=int, default=12)
    ap.add_argument("--w3-steps", type=int, default=3)
    ap.add_argument("--w1-jobs", type=int, default=8)
    ap.add_argument("--w1-steps", type=int, default=20)
    # PyTorch's bf16 autocast on a CPU without bf16 instructions runs 10-40x slower than its
    # fp32: these shorten its runs (its figure is a rate, tokens per second, so it stays
    # comparable; the table says when they were used).
    ap.add_argument("--bf16-peer-w3-steps", type=int, help="steps of PyTorch bf16 on W3")
    ap.add_argument("--bf16-peer-w1-jobs", type=int, help="jobs of PyTorch bf16 on W1")
    ap.add_argument("--bf16-peer-w1-steps", type=int, help="steps of PyTorch bf16 on W1")
    ap.add_argument("--bf16-peer-reps", type=int,
                    help="repetitions of PyTorch bf16 (the first N of --reps)")
    ap.add_argument("--no-w3-bf16-peer", action="store_true",
                    help="leave out PyTorch bf16 autocast on W3 (hours where it is emulated)")
    ap.add_argument("--no-recompute", action="store_true",
                    help="leave out scion fp32 with --recompute on W3")
    args = ap.parse_args()
    scion = os.path.abspath(args.scion)

    print(cpu_line(scion))
    print(f"load average at start: {load_average()}")
    limit = subprocess.run([args.limit, "--size", str(args.size), "--reps", str(args.reps),
                            "--threads", str(args.threads)], capture_output=True, text=True)
    print(limit.stdout.strip())

    results = {}
    torch_version = "?"
    for workload in ("W3", "W1"):
        work = tempfile.mkdtemp(prefix=f"scion-{workload.lower()}-")
        if workload == "W3":
            w3_spec(work, args.w3_layers, args.w3_steps)
            configurations = [("fp32", False), ("bf16", False)]
            if not args.no_recompute:
                configurations.append(("fp32", True))
            bf16_steps = args.bf16_peer_w3_steps or args.w3_steps

            def peer_for(autocast):
                steps = bf16_steps if autocast == "bf16" else args.w3_steps
                return ("w3_torch.py", ["--layers", str(args.w3_layers), "--steps", str(steps),
                                        "--threads", str(args.threads)],
                        r"step_seconds=([0-9.]+)", 16 * 128)
        else:
            w1_spec(work, args.w1_jobs, args.w1_steps)
            configurations = [("fp32", False), ("bf16", False)]

            def peer_for(autocast):
                jobs, steps = args.w1_jobs, args.w1_steps
                if autocast == "bf16":
                    jobs = args.bf16_peer_w1_jobs or jobs
                    steps = args.bf16_peer_w1_steps or steps
                return ("w1_torch.py", ["--jobs", str(jobs), "--steps", str(steps),
                                        "--threads", str(args.threads)],
                        r"seconds=([0-9.]+)", jobs * steps * 8 * 128)
        for rep in range(args.reps):
            for precision, recompute in configurations:
                r = scion_run(scion, work, precision, args.threads, recompute)
                name = precision + (" recompute" if recompute else "")
                results.setdefault((workload, "scion", name), []).append(r)
                print(f"{workload} rep {rep} scion {name}: {r['tokens_per_second']:.0f} tok/s, "
                      f"planned {r['planned'] / 2**20:.1f} MiB, measured {r['measured'] / 2**20:.1f} MiB"
                      f" (load {load_average()})", flush=True)
            for autocast, name in (("none", "fp32"), ("bf16", "bf16")):
                if autocast == "bf16" and args.bf16_peer_reps is not None and rep >= args.bf16_peer_reps:
                    continue
                if autocast == "bf16" and workload == "W3" and args.no_w3_bf16_peer:
                    continue
                script, peer_args, pattern, tokens = peer_for(autocast)
                seconds, peak, torch_version = peer_run(args.python, script,
                                                        [*peer_args, "--autocast", autocast], pattern)
                rate = tokens / seconds
                results.setdefault((workload, "torch", name), []).append(
                    {"tokens_per_second": rate, "peak": peak})
                print(f"{workload} rep {rep} torch {torch_version} {name}: {rate:.0f} tok/s, "
                      f"peak RSS {peak:.0f} MiB ({' '.join(peer_args)}; load {load_average()})",
                      flush=True)
        shutil.rmtree(work, ignore_errors=True)

    print(f"load average at end: {load_average()}")
    print()
    print(f"| workload | configuration | tok/s (median of {args.reps}) | planned | measured | plan error |")
    print("|---|---|---|---|---|---|")
    for workload in ("W3", "W1"):
        for who, precision in (("scion", "fp32"), ("scion", "bf16"), ("scion", "fp32 recompute"),
                               ("torch", "fp32"), ("torch", "bf16")):
            runs = results.get((workload, who, precision))
            if not runs:
                continue
            rate = statistics.median(r["tokens_per_second"] for r in runs)
            if who == "scion":
                planned = statistics.median(r["planned"] for r in runs)
                measured = statistics.median(r["measured"] for r in runs)
                print(f"| {workload} | scion {precision} | {rate:.0f} | {planned / 2**20:.1f} MiB | "
                      f"{measured / 2**20:.1f} MiB (group's growth) | "
                      f"{abs(measured - planned) / planned:.1%} |")
            else:
                label = f"PyTorch {torch_version} " + ("eager fp32" if precision == "fp32" else "autocast bf16")
                peak = statistics.median(r["peak"] for r in runs)
                print(f"| {workload} | {label} (median of {len(runs)}) | {rate:.0f} | – | {peak:.0f} MiB (process peak) | – |")

    print()
    def median_rate(workload, who, precision):
        runs = results.get((workload, who, precision))
        return statistics.median(r["tokens_per_second"] for r in runs) if runs else None

    for workload in ("W3", "W1"):
        pairs = (("scion fp32 / PyTorch eager fp32", ("scion", "fp32"), ("torch", "fp32")),
                 ("scion bf16 / PyTorch autocast bf16", ("scion", "bf16"), ("torch", "bf16")),
                 ("scion bf16 / scion fp32", ("scion", "bf16"), ("scion", "fp32")),
                 ("scion fp32 recompute / scion fp32 (speed)", ("scion", "fp32 recompute"),
                  ("scion", "fp32")))
        for label, a, b in pairs:
            ra, rb = median_rate(workload, *a), median_rate(workload, *b)
            if ra and rb:
                print(f"{workload} ratio {label}: {ra / rb:.2f}")
        plain, recomputed = results.get((workload, "scion", "fp32")), results.get(
            (workload, "scion", "fp32 recompute"))
        if plain and recomputed:
            ratio = (statistics.median(r["measured"] for r in recomputed) /
                     statistics.median(r["measured"] for r in plain))
            print(f"{workload} ratio scion fp32 recompute / scion fp32 (measured memory): {ratio:.2f}")


if __name__ == "__main__":
    main()
