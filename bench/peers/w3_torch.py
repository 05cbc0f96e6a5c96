#!/usr/bin/env python3
"""W3 PyTorch eager peer: the same encoder and step as bench/w3_trunk_training.cpp.

Pre-norm encoder, L=12 d=768 h=12 f=3072 V=256 T=128 batch 16 (--length, --batch), tied embeddings,
GELU (tanh), masked-LM loss on ~15% of positions, AdamW (weight decay 0.01), every
parameter trained. Prints the steady state, the median time of the timed steps after one
warm-up step, as step_seconds=<x>, and the time to the first step, from the process's
start (interpreter and imports included) to the end of the warm-up step, as
first_step_seconds=<x> (docs/benchmarks.md, "Like with like"). With --device cuda it runs on the
GPU (autocast on "cuda"; each step's time ends with torch.cuda.synchronize(); fp32 products
without TF32, PyTorch's default and scion's).

With --serve it prints "ready first_step_seconds=<x>" after the warm-up step, then runs one
step per "step" line on stdin and answers each with "step_seconds=<x>", so the scion
benchmark can interleave its steps with the peer's and both see the same machine load.
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
    print("w3 torch peer: PyTorch not installed")
    sys.exit(77)


# The forward pass and loss run inside this context: none (fp32 eager), or bf16 autocast.
precision_context = contextlib.nullcontext


def peak_rss_mib():
    """The process's peak resident memory (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Block(nn.Module):
    def __init__(self, d, h, f):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ffn_in, self.ffn_out = nn.Linear(d, f), nn.Linear(f, d)

    def forward(self, x):
        B, T, C = x.shape
        a = self.ln1(x)
        q, k, v = (m(a).view(B, T, self.h, C // self.h).transpose(1, 2) for m in (self.q, self.k, self.v))
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(C // self.h), dim=-1)
        x = x + self.o((p @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.ffn_out(nn.functional.gelu(self.ffn_in(self.ln2(x)), approximate="tanh"))


class Encoder(nn.Module):
    def __init__(self, layers, d=768, h=12, f=3072, V=256, T=128):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, d), nn.Embedding(T, d)
        self.blocks = nn.ModuleList(Block(d, h, f) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        for p in (self.tok.weight, self.pos.weight):  # scion's init: normal(0, 0.02)
            nn.init.normal_(p, std=0.02)

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos.weight[: tokens.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.ln_f(x) @ self.tok.weight.T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--autocast", choices=["none", "bf16"], default="none",
                    help='bf16: forward and loss under torch.autocast(DEVICE, dtype=torch.bfloat16)')
    args = ap.parse_args()
    global precision_context
    if args.autocast == "bf16":
        precision_context = lambda: torch.autocast(args.device, dtype=torch.bfloat16)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    B, T, V = args.batch, args.length, 256
    device = torch.device(args.device)
    model = Encoder(args.layers, T=T).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    tokens = torch.randint(0, V, (B, T)).to(device)
    targets = torch.where(torch.rand(B, T) < 0.15, torch.randint(0, V, (B, T)),
                          torch.full((B, T), -100)).to(device)
    wait = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)

    def step():
        wait()
        start = time.perf_counter()
        with precision_context():
            logits = model(tokens)
            loss = nn.functional.cross_entropy(logits.view(B * T, V).float(), targets.view(-1),
                                               ignore_index=-100)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        wait()
        return time.perf_counter() - start, loss

    step()  # warm-up
    first_step = seconds_since_start()
    if args.serve:
        print(f"ready first_step_seconds={first_step:.3f}", flush=True)
        for line in sys.stdin:
            if line.strip() != "step":
                break
            seconds, _ = step()
            print(f"step_seconds={seconds:.3f}", flush=True)
        return
    times = []
    for _ in range(args.steps):
        seconds, loss = step()
        times.append(seconds)
    print(f"w3 torch_eager: torch={torch.__version__} device={args.device} autocast={args.autocast} "
          f"threads={torch.get_num_threads()} layers={args.layers} "
          f"step_seconds={statistics.median(times):.3f} first_step_seconds={first_step:.3f} "
          f"loss={loss.item():.4f} "
          f"peak_rss_mib={peak_rss_mib():.1f}")


if __name__ == "__main__":
    main()
