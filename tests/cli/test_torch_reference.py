#!/usr/bin/env python3
"""Compares scion's CPU transformer with PyTorch: forward outputs and gradients.

Usage: test_torch_reference.py RUNTIME_TORCH_DUMP [ignored...]
Runs the dump program (tests/unit/runtime_torch_dump.cpp) into a temporary folder,
recomputes every case in float64 PyTorch from the same parameters and inputs, and
compares loss, logits and the gradient of every trainable parameter.
Exits 77 (skip) when PyTorch is not installed.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:
    # The Debian package provides torch for the system interpreter only.
    system_python = "/usr/bin/python3"
    if os.path.exists(system_python) and os.path.realpath(sys.executable) != os.path.realpath(system_python) \
            and not os.environ.get("SCION_TORCH_REEXEC"):
        os.environ["SCION_TORCH_REEXEC"] = "1"
        os.execv(system_python, [system_python] + sys.argv)
    print("SKIP: PyTorch is not installed (apt-get install python3-torch)")
    sys.exit(77)

import numpy as np  # noqa: E402  (comes with torch)

# scion computes in fp32; the reference runs in fp64. Sums here have at most a few
# hundred terms of O(1) values, so fp32 round-off stays near 1e-6 relative; 1e-4 leaves
# two orders of margin and still fails on any wrong term.
LOSS_RTOL = 1e-4
LOGITS_ATOL = 1e-4
GRAD_RTOL = 1e-4
# Some gradients are zero in exact arithmetic (a key bias shifts every score of a query
# equally, and softmax ignores that); fp32 leaves noise near 1e-7 there, so norms below
# GRAD_ATOL count as zero.
GRAD_ATOL = 1e-5


def load(folder, name, shape):
    data = np.fromfile(os.path.join(folder, name + ".bin"), dtype="<f4")
    return torch.tensor(data.reshape(shape), dtype=torch.float64)


def layer_norm(x, p, stem):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), p[stem + ".weight"], p[stem + ".bias"], 1e-5)


def forward(case, p):
    B, T, C, H, L = case["batch"], case["length"], case["width"], case["heads"], case["layers"]
    hs = C // H
    tokens = torch.tensor(case["tokens"]).view(B, T)
    lengths = torch.tensor(case["lengths"])
    key_visible = torch.arange(T)[None, :] < lengths[:, None]  # (B, T)
    lora = case.get("lora")

    def linear(stem, inp):
        y = inp @ p[stem + ".weight"].T + p[stem + ".bias"]
        if lora and any(stem.endswith(s) for s in lora["stems"]):
            a = p[f"{stem}.lora.{lora['model']}.a"]
            b = p[f"{stem}.lora.{lora['model']}.b"]
            y = y + (lora["alpha"] / lora["rank"]) * (inp @ a.T) @ b.T
        return y

    def attention(l, x):
        q, k, v = (linear(f"blk.{l}.attn_{n}", x).view(B, T, H, hs).transpose(1, 2) for n in "qkv")
        scores = q @ k.transpose(-1, -2) / math.sqrt(hs)
        scores = scores.masked_fill(~key_visible[:, None, None, :], float("-inf"))
        att = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        return linear(f"blk.{l}.attn_o", att)

    def ffn(l, x):
        h = torch.nn.functional.gelu(linear(f"blk.{l}.ffn_in", x), approximate="tanh")
        return linear(f"blk.{l}.ffn_out", h)

    x = p["tok_emb.weight"][tokens] + p["pos_emb.weight"][:T]
    pre = case["norm"] == "pre"
    if not pre:
        x = layer_norm(x, p, "emb_ln")
    for l in range(L):
        if pre:
            x = x + attention(l, layer_norm(x, p, f"blk.{l}.ln1"))
            x = x + ffn(l, layer_norm(x, p, f"blk.{l}.ln2"))
        else:
            x = layer_norm(x + attention(l, x), p, f"blk.{l}.ln1")
            x = layer_norm(x + ffn(l, x), p, f"blk.{l}.ln2")
    if pre:
        x = layer_norm(x, p, "ln_f")
    targets = torch.tensor(case["targets"])
    if case["objective"] == "classification":
        weights = key_visible.double() / lengths[:, None].double()
        pooled = (x * weights[:, :, None]).sum(1)
        logits = pooled @ p[f"head.{lora['model']}.weight"].T + p[f"head.{lora['model']}.bias"]
        loss = torch.nn.functional.cross_entropy(logits, targets)
    else:
        logits = x @ p["tok_emb.weight"].T
        loss = torch.nn.functional.cross_entropy(logits.view(B * T, -1), targets, ignore_index=-100)
    return loss, logits


def check_case(folder, case):
    failures = []
    params = {name: load(folder, name, shape).requires_grad_(name in case["trainable"])
              for name, shape in case["params"].items()}
    loss, logits = forward(case, params)
    loss.backward()
    name = case["name"]
    if abs(loss.item() - case["loss"]) > LOSS_RTOL * abs(loss.item()):
        failures.append(f"{name}: loss {case['loss']} vs torch {loss.item()}")
    ours = load(folder, "logits", case["logits_shape"])
    error = (ours - logits.detach()).abs().max().item()
    if error > LOGITS_ATOL:
        failures.append(f"{name}: logits differ by {error}")
    for pname in case["trainable"]:
        ours = load(folder, pname + ".grad", case["params"][pname])
        ref = params[pname].grad
        error = (ours - ref).norm().item()
        rel = error / max(ref.norm().item(), 1e-12)
        if error > GRAD_RTOL * ref.norm().item() + GRAD_ATOL:
            failures.append(f"{name}: gradient of {pname} differs, relative error {rel:.2e}")
    print(f"{name}: loss {case['loss']:.6f} (torch {loss.item():.6f}), "
          f"{len(case['trainable'])} gradients compared")
    return failures


def main():
    dump = sys.argv[1]
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([dump, folder], check=True)
        with open(os.path.join(folder, "manifest.json")) as f:
            manifest = json.load(f)
        failures = []
        for case in manifest["cases"]:
            failures += check_case(os.path.join(folder, case["name"]), case)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
