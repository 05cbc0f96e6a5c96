#!/usr/bin/env python3
"""The precision table of bench/README.md in one run (issue #24): the machine, its matmul
limits (with OpenBLAS as it is and forced onto its generic kernels), then W3, W1 and W5 in
fp32 and bf16, for scion and for PyTorch (eager fp32, bf16 autocast), each reported as
docs/benchmarks.md asks ("Like with like"): the steady state (the median of the timed steps
after the first) and the time to the first step (process start to the end of step 1),
separately; and scion's fp32 with OPENBLAS_CORETYPE=Prescott (the BLAS cliff check).

scion runs through its command line on a spec of the workload's shape, written to a
temporary folder: `scion run --json` (W3), `scion train` then `scion adapt --json` (W1: the
co-batched LoRA group), `scion import` then `scion adapt --json` (W5: the real
all-MiniLM-L6-v2, when tests/python/fetch-minilm.sh has fetched it). Its figures are the
group's `steady_tokens_per_second`, `steady_step_seconds` and `first_step_end_seconds`
(docs/cli.md, "Training"), its planned bytes and measured peak growth. The peers
(bench/peers/w3_torch.py, w1_torch.py, w5_peft.py) run as separate processes with the same
threads and report the same two figures from their own process start. Configurations are
interleaved (every scion configuration, then every peer, then again) --reps times; medians.

Full table (a quiet machine; the commands bench/README.md shows):
  bench/make_venv.sh
  python3 bench/precision_table.py --scion build/cli/scion --limit build/bench/limit_matmul \\
      --python bench/.venv/bin/python --reps 3
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
REPO = os.path.dirname(HERE)
T = 128
PRESCOTT = dict(os.environ, OPENBLAS_CORETYPE="Prescott")


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def scion_version(scion, env=None):
    return json.loads(subprocess.run([scion, "--version", "--json"], capture_output=True,
                                     text=True, check=True, env=env).stdout)


def choice_text(cpu):
    fp32 = cpu["fp32_matmul"]
    classes = ", ".join(f"{name} {c['library']}" for name, c in fp32["classes"].items())
    return f"{classes} ({fp32['how']})"


def cpu_line(scion):
    """The machine line: CPU, its ISA flags, oneDNN's ISA and bf16, OpenBLAS's core, and
    the library each class of fp32 product runs on (as scion --version --json says)."""
    model, flags = "unknown", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile") if f in flags]
    version = scion_version(scion)
    cpu = version["cpu"]
    bf16 = ("native" if cpu["native_bf16"] else "emulated by oneDNN" if cpu["bf16_kernel"]
            else "emulated in fp32 (no bf16 kernel: rounded operands, fp32 products)")
    return (f"CPU {model}, {os.cpu_count()} logical CPUs, flags: {' '.join(isa)}; oneDNN "
            f"{cpu['onednn']} isa {cpu['isa']}, bf16 {bf16}; OpenBLAS core {cpu['openblas_core']} "
            f"({cpu['openblas_config']}); fp32 products: {choice_text(cpu)}; scion "
            f"{version['version']} ({version['build']['build_type']})")


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
                   max_length: {T}, tokenizer: byte}}
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
                   max_length: {T}, tokenizer: byte}}
    train: {{data: job0, objective: classification, steps: 1, batch_size: 8, seed: 1}}
""" + "\n".join(models) + "\n")


def scion(args, work, *command, env=None):
    """`scion -C work COMMAND --json`; its document."""
    env = dict(env or os.environ, OMP_NUM_THREADS=str(args.threads))
    done = subprocess.run([args.scion, "-C", work, *command, "--json"], capture_output=True,
                          text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"scion {' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def group_figures(group):
    return {"steady": group["steady_tokens_per_second"], "step": group["steady_step_seconds"],
            "first": group["first_step_end_seconds"], "planned": group["planned_bytes"],
            "measured": group["peak_resident_bytes"] - group["resident_before_bytes"]}


def scion_w3(args, work, precision, env=None):
    shutil.rmtree(os.path.join(work, ".scion"), ignore_errors=True)
    return group_figures(scion(args, work, "run", "--precision", precision, env=env)["groups"][-1])


def scion_w1(args, work, precision, env=None):
    """The base trained (untimed), then the LoRA jobs co-batched in one `scion adapt`."""
    shutil.rmtree(os.path.join(work, ".scion"), ignore_errors=True)
    scion(args, work, "train", "--precision", precision, env=env)
    groups = scion(args, work, "adapt", "--precision", precision, env=env)["groups"]
    if len(groups) != 1:
        sys.exit(f"W1: the jobs trained as {len(groups)} groups, not one")
    return group_figures(groups[0])


def scion_w5(args, work, precision, env=None):
    """The MiniLM imported (untimed), then the LoRA jobs co-batched in one `scion adapt`."""
    shutil.rmtree(os.path.join(work, ".scion"), ignore_errors=True)
    subprocess.run([args.scion, "-C", work, "import", os.path.join(work, "all-MiniLM-L6-v2"),
                    "--as", "minilm"], check=True, capture_output=True)
    groups = scion(args, work, "adapt", "--precision", precision, env=env)["groups"]
    return group_figures(groups[0])


def peer_run(args, script, peer_args):
    done = subprocess.run([args.python, os.path.join(HERE, "peers", script), *peer_args],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{script} failed ({done.returncode}): {done.stderr[-2000:]}")
    line = done.stdout.strip().splitlines()[-1]
    fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
    return fields


def peer_w3(args, autocast):
    f = peer_run(args, "w3_torch.py", ["--layers", str(args.w3_layers), "--steps",
                                       str(args.w3_steps - 1), "--threads", str(args.threads),
                                       "--autocast", autocast])
    step = float(f["step_seconds"])
    return {"steady": 16 * T / step, "step": step, "first": float(f["first_step_seconds"]),
            "peak": float(f["peak_rss_mib"]), "torch": f["torch"]}


def peer_w1(args, autocast):
    f = peer_run(args, "w1_torch.py", ["--jobs", str(args.w1_jobs), "--steps", str(args.w1_steps),
                                       "--threads", str(args.threads), "--autocast", autocast])
    step = float(f["step_seconds"])
    return {"steady": float(f["tokens_per_step"]) / step, "step": step,
            "first": float(f["first_step_seconds"]), "peak": float(f["peak_rss_mib"]),
            "torch": f["torch"]}


def peer_w5(args, work, precision):
    f = peer_run(args, "w5_peft.py", ["--folder", args.w5_model, "--data",
                                      os.path.join(work, "reviews.jsonl"), "--jobs",
                                      str(args.w5_jobs), "--steps", str(args.w5_steps),
                                      "--batch", "16", "--max-length", str(T), "--threads",
                                      str(args.threads), "--precision", precision])
    step = float(f["step_seconds"])
    return {"steady": 16 * T / step, "step": step, "first": float(f["first_step_seconds"]),
            "peak": float(f["peak_rss_mib"]), "torch": f["torch"]}


def limits(args, env=None):
    done = subprocess.run([args.limit, "--size", str(args.size), "--reps", str(args.reps),
                           "--threads", str(args.threads)], capture_output=True, text=True,
                          env=env)
    rates = {m.group(1): float(m.group(2)) for m in
             re.finditer(r"^limit (\S+) .*gflops=([0-9.]+)", done.stdout, re.M)}
    return done.stdout.strip(), rates


def w3_flops_per_step(args, work):
    """6 x parameters x tokens + attention (12 L B T^2 d), parameters from `scion plan`."""
    plan = scion(args, work, "plan")
    parameters = plan["models"][0]["parameters"]["total"]
    return 6.0 * parameters * 16 * T + 12.0 * args.w3_layers * 16 * T * T * 768


def median_of(runs, key):
    return statistics.median(r[key] for r in runs) if runs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scion", required=True)
    ap.add_argument("--limit", required=True, help="bench/limit_matmul")
    ap.add_argument("--python", default=os.path.join(HERE, ".venv", "bin", "python"),
                    help="the peers' interpreter (default: bench/.venv's, bench/make_venv.sh)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", type=int, default=2048, help="the limit's square size")
    ap.add_argument("--w3-layers", type=int, default=12)
    ap.add_argument("--w3-steps", type=int, default=4,
                    help="steps of a W3 run: the first, then the steady ones (at least 2)")
    ap.add_argument("--w1-jobs", type=int, default=8)
    ap.add_argument("--w1-steps", type=int, default=20)
    ap.add_argument("--w5-model", default=os.path.expanduser("~/.cache/scion/all-MiniLM-L6-v2"),
                    help="the all-MiniLM-L6-v2 folder (tests/python/fetch-minilm.sh); W5 is "
                         "left out when it is missing")
    ap.add_argument("--w5-jobs", type=int, default=8)
    ap.add_argument("--w5-steps", type=int, default=10)
    ap.add_argument("--workloads", default="W3,W1,W5", help="which of W3, W1, W5 to run")
    ap.add_argument("--no-prescott", action="store_true",
                    help="leave out scion fp32 with OPENBLAS_CORETYPE=Prescott")
    args = ap.parse_args()
    args.scion = os.path.abspath(args.scion)
    if args.w3_steps < 2:
        sys.exit("--w3-steps must be at least 2: the first step, then a steady one")
    workloads = [w.strip() for w in args.workloads.split(",")]
    if "W5" in workloads and not os.path.isfile(os.path.join(args.w5_model, "model.safetensors")):
        print(f"note: no MiniLM at {args.w5_model} (tests/python/fetch-minilm.sh): W5 left out")
        workloads.remove("W5")
    if not os.path.exists(args.python):
        print(f"note: no peer interpreter at {args.python} (bench/make_venv.sh makes it, or pass "
              "--python): the PyTorch peers are left out, and the table has scion's rows only")

    print(cpu_line(args.scion))
    prescott_cpu = scion_version(args.scion, PRESCOTT)["cpu"]
    print(f"with OPENBLAS_CORETYPE=Prescott: OpenBLAS core {prescott_cpu['openblas_core']}; "
          f"fp32 products: {choice_text(prescott_cpu)}")
    print(f"load average at start: {load_average()}")
    text, limit = limits(args)
    print(text)
    prescott_text, prescott_limit = limits(args, PRESCOTT)
    print("with OPENBLAS_CORETYPE=Prescott:\n" + prescott_text)

    results, peers_version, flops = {}, "?", {}
    for workload in workloads:
        work = tempfile.mkdtemp(prefix=f"scion-{workload.lower()}-")
        configurations = [("fp32", None), ("bf16", None)]
        if not args.no_prescott:
            configurations.append(("fp32", "Prescott"))
        if workload == "W3":
            w3_spec(work, args.w3_layers, args.w3_steps)
            flops["W3"] = w3_flops_per_step(args, work)
            run_scion, run_peer = scion_w3, lambda a: peer_w3(args, a)
        elif workload == "W1":
            w1_spec(work, args.w1_jobs, args.w1_steps)
            run_scion, run_peer = scion_w1, lambda a: peer_w1(args, a)
        else:
            sys.path.insert(0, HERE)
            import w5_minilm
            os.symlink(args.w5_model, os.path.join(work, "all-MiniLM-L6-v2"))
            w5_minilm.long_reviews(os.path.join(REPO, "examples", "sentiment", "data",
                                                "critics.jsonl"),
                                   os.path.join(work, "reviews.jsonl"), 2 * T, seed=5)
            w5_minilm.write_spec(work, args.w5_jobs, args.w5_steps, T)
            run_scion = scion_w5
            run_peer = lambda a: peer_w5(args, work, "bf16" if a == "bf16" else "fp32")
        for rep in range(args.reps):
            for precision, forced in configurations:
                r = run_scion(args, work, precision, PRESCOTT if forced else None)
                name = precision + (f" {forced}" if forced else "")
                results.setdefault((workload, "scion", name), []).append(r)
                print(f"{workload} rep {rep} scion {name}: steady {r['steady']:.0f} tok/s "
                      f"({r['step']:.3f} s a step), first step {r['first']:.2f} s; planned "
                      f"{r['planned'] / 2**20:.1f} MiB, measured {r['measured'] / 2**20:.1f} MiB "
                      f"(load {load_average()})", flush=True)
            if not os.path.exists(args.python):
                continue
            for autocast, name in (("none", "fp32"), ("bf16", "bf16")):
                r = run_peer(autocast)
                peers_version = r["torch"]
                results.setdefault((workload, "torch", name), []).append(r)
                print(f"{workload} rep {rep} torch {peers_version} {name}: steady {r['steady']:.0f} "
                      f"tok/s ({r['step']:.3f} s a step), first step {r['first']:.2f} s; peak RSS "
                      f"{r['peak']:.0f} MiB (load {load_average()})", flush=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at end: {load_average()}")
    report(args, workloads, results, peers_version, limit, prescott_limit, flops)


def report(args, workloads, results, torch_version, limit, prescott_limit, flops):
    print()
    print(f"| workload | configuration | steady tok/s | steady s/step | first step s | "
          f"first / steady step | memory |")
    print("|---|---|---|---|---|---|---|")
    rows = (("scion", "fp32", "scion fp32"), ("scion", "bf16", "scion bf16"),
            ("scion", "fp32 Prescott", "scion fp32, OPENBLAS_CORETYPE=Prescott"),
            ("torch", "fp32", f"PyTorch {torch_version} eager fp32"),
            ("torch", "bf16", f"PyTorch {torch_version} autocast bf16"))
    for workload in workloads:
        for who, name, label in rows:
            runs = results.get((workload, who, name))
            if not runs:
                continue
            step, first = median_of(runs, "step"), median_of(runs, "first")
            memory = (f"{median_of(runs, 'measured') / 2**20:.0f} MiB growth (plan "
                      f"{median_of(runs, 'planned') / 2**20:.0f})" if who == "scion"
                      else f"{median_of(runs, 'peak'):.0f} MiB process peak")
            print(f"| {workload} | {label} | {median_of(runs, 'steady'):,.0f} | {step:.3f} | "
                  f"{first:.2f} | {first / step:.2f} | {memory} |")
    print(f"\n(medians of {args.reps}; steady: the median step after the first; first step: "
          "process start to the end of step 1)\n")

    def rate(workload, who, name):
        runs = results.get((workload, who, name))
        return median_of(runs, "steady")

    for workload in workloads:
        for label, a, b, goal in (
                ("scion fp32 / PyTorch eager fp32", ("scion", "fp32"), ("torch", "fp32"), 1.0),
                ("scion bf16 / PyTorch autocast bf16", ("scion", "bf16"), ("torch", "bf16"), 1.2),
                ("scion bf16 / scion fp32", ("scion", "bf16"), ("scion", "fp32"), None),
                ("scion fp32 Prescott-forced / unforced", ("scion", "fp32 Prescott"),
                 ("scion", "fp32"), 0.8)):
            ra, rb = rate(workload, *a), rate(workload, *b)
            if ra and rb:
                verdict = "" if goal is None else (" (goal >= %.1f: %s)" % (goal, "met" if ra / rb >= goal else "missed"))
                print(f"{workload} ratio {label}: {ra / rb:.2f}{verdict}")
    if "W3" in workloads and rate("W3", "scion", "bf16") and "onednn_bf16" in limit:
        gflops = rate("W3", "scion", "bf16") / (16 * T) * flops["W3"] / 1e9
        print(f"W3 scion bf16: {gflops:.1f} GFLOP/s, {gflops / limit['onednn_bf16']:.2f} of the "
              f"measured oneDNN bf16 matmul rate {limit['onednn_bf16']:.1f} (goal >= 0.50)")
        gflops32 = rate("W3", "scion", "fp32") / (16 * T) * flops["W3"] / 1e9
        best32 = max(v for k, v in limit.items() if k != "onednn_bf16")
        print(f"W3 scion fp32: {gflops32:.1f} GFLOP/s, {gflops32 / best32:.2f} of the best measured "
              f"fp32 matmul rate {best32:.1f}")
    runs = results.get(("W3", "scion", "bf16")), results.get(("W3", "scion", "fp32"))
    for precision, r in zip(("bf16", "fp32"), runs):
        if r:
            ratio = median_of(r, "first") / median_of(r, "step")
            print(f"W3 scion {precision} time to the first step: {ratio:.2f} steady steps "
                  f"(goal <= 1.5: {'met' if ratio <= 1.5 else 'missed'})")
    if prescott_limit:
        print("limits with OPENBLAS_CORETYPE=Prescott: " +
              ", ".join(f"{k} {v:.1f}" for k, v in prescott_limit.items()) + " GFLOP/s")


if __name__ == "__main__":
    main()
