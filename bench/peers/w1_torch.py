#!/usr/bin/env python3
"""W1 PyTorch eager peer: the same LoRA jobs as bench/w1_multitenant.cpp, one after another.

Frozen pre-norm encoder L=4 d=256 h=4 f=1024 V=260 T=128 (GELU tanh, final layer norm,
CLS pooling), and per job: LoRA rank 8, alpha 16 on q and v of every layer written as in
PEFT (lora_A / lora_B Linear modules without bias, B zero-initialised, output scaled by
alpha / r, added to the frozen base Linear), a 2-class head, its own synthetic labelled
dataset, batch 8, AdamW lr 1e-3 (weight decay 0.01), 20 steps. Only the adapters and the
head require gradients, so autograd computes no trunk weight gradients.

Prints seconds=<x> for training every job once (its timed steps), step_seconds=<x>, the
steady state: the median time of one job's step over every job's steps after the first of
each, and first_step_seconds=<x>: from the process's start (interpreter and imports
included) to the end of its first step, a one-step warm-up job (docs/benchmarks.md, "Like with
like"). With --serve it prints "ready first_step_seconds=<x>" after that warm-up, then trains
every job once per "run" line on stdin and answers each with "seconds=<x> step_seconds=<x>",
so the scion benchmark can interleave its configurations with the peer's.
"""
import argparse
import contextlib
import math
import resource
import statistics
import sys
import time

from process_clock import seconds_since_start

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("w1 torch peer: PyTorch not installed")
    sys.exit(77)

L, D, H, F, V, T = 4, 256, 4, 1024, 260, 128
RANK, ALPHA, LR = 8, 16.0, 1e-3
BATCH = 8  # --batch


# The forward pass and loss run inside this context: none (fp32 eager), or bf16 autocast.
precision_context = contextlib.nullcontext


def peak_rss_mib():
    """The process's peak resident memory (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class LoraLinear(nn.Module):
    """A frozen Linear plus PEFT's LoRA branch: base(x) + lora_B(lora_A(x)) * alpha / r."""

    def __init__(self, base):
        super().__init__()
        self.base = base
        self.lora_A = nn.Linear(base.in_features, RANK, bias=False)
        self.lora_B = nn.Linear(RANK, base.out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = ALPHA / RANK

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))
        self.ffn_in, self.ffn_out = nn.Linear(D, F), nn.Linear(F, D)

    def forward(self, x):
        B, S, C = x.shape
        a = self.ln1(x)
        q, k, v = (m(a).view(B, S, H, C // H).transpose(1, 2) for m in (self.q, self.k, self.v))
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(C // H), dim=-1)
        x = x + self.o((p @ v).transpose(1, 2).reshape(B, S, C))
        return x + self.ffn_out(nn.functional.gelu(self.ffn_in(self.ln2(x)), approximate="tanh"))


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, D), nn.Embedding(T, D)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.ln_f = nn.LayerNorm(D)
        self.head = nn.Linear(D, 2)

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos.weight[: tokens.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x)[:, 0])


def make_job(trunk_state, seed):
    """A classifier on the frozen trunk with fresh LoRA on q, v and a fresh head."""
    torch.manual_seed(seed)
    model = Classifier()
    model.load_state_dict(trunk_state)
    for p in model.parameters():
        p.requires_grad_(False)
    for b in model.blocks:
        b.q, b.v = LoraLinear(b.q), LoraLinear(b.v)
    model.head = nn.Linear(D, 2)
    trainable = [p for n, p in model.named_parameters() if "lora_" in n or n.startswith("head.")]
    for p in trainable:
        p.requires_grad_(True)
    return model, torch.optim.AdamW(trainable, lr=LR, weight_decay=0.01)


def make_data(seed, rows):
    """Random bytes framed as [CLS] content [SEP]; label: more bytes below 128 than above."""
    g = torch.Generator().manual_seed(seed)
    content = torch.randint(0, 256, (rows, T - 2), generator=g)
    tokens = torch.cat([torch.full((rows, 1), 257), content, torch.full((rows, 1), 258)], dim=1)
    labels = (2 * (content < 128).sum(dim=1) > T - 2).long()
    return tokens, labels


def train_all(trunk_state, jobs, steps):
    """Trains every job, one after another; returns the seconds spent in training steps and
    the steady state (the median step of every job after its first)."""
    total, later_steps = 0.0, []
    for j in range(jobs):
        model, opt = make_job(trunk_state, 100 + j)
        tokens, labels = make_data(1000 + j, steps * BATCH)
        order = torch.randperm(tokens.shape[0], generator=torch.Generator().manual_seed(j))
        for s in range(steps):
            start = time.perf_counter()
            idx = order[s * BATCH:(s + 1) * BATCH]
            with precision_context():
                loss = nn.functional.cross_entropy(model(tokens[idx]).float(), labels[idx])
            opt.zero_grad(set_to_none=False)
            loss.backward()
            opt.step()
            seconds = time.perf_counter() - start
            total += seconds
            if s > 0:
                later_steps.append(seconds)
    return total, statistics.median(later_steps) if later_steps else 0.0


def main():
    global precision_context, BATCH
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--batch", type=int, default=BATCH, help="rows per job a step")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--autocast", choices=["none", "bf16"], default="none",
                    help='bf16: forward and loss under torch.autocast("cpu", dtype=torch.bfloat16)')
    args = ap.parse_args()
    BATCH = args.batch
    if args.autocast == "bf16":
        precision_context = lambda: torch.autocast("cpu", dtype=torch.bfloat16)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    trunk_state = Classifier().state_dict()
    train_all(trunk_state, 1, 1)  # warm-up: the process's first step
    first_step = seconds_since_start()
    if args.serve:
        print(f"ready first_step_seconds={first_step:.3f}", flush=True)
        for line in sys.stdin:
            if line.strip() != "run":
                break
            seconds, step = train_all(trunk_state, args.jobs, args.steps)
            print(f"seconds={seconds:.3f} step_seconds={step:.4f}", flush=True)
        return
    seconds, step = train_all(trunk_state, args.jobs, args.steps)
    print(f"w1 torch_eager: torch={torch.__version__} autocast={args.autocast} "
          f"threads={torch.get_num_threads()} jobs={args.jobs} steps={args.steps} batch={BATCH} "
          f"seconds={seconds:.3f} step_seconds={step:.4f} tokens_per_step={BATCH * T} "
          f"first_step_seconds={first_step:.3f} peak_rss_mib={peak_rss_mib():.1f}")


if __name__ == "__main__":
    main()
