#!/usr/bin/env python3
"""Fails when an operation of the Backend interface has no case in the op harness.

Reads every virtual method of runtime/backend.h's Backend class, leaves out the ones that
describe, allocate or wait (name, device, precision, attention_precision, error,
host_addressable, allocate, allocate_zeroed, deallocate, synchronize: it computes
nothing, and the harness's copies back to the host wait anyway), and requires each of the rest to be the op of at least one case that `backend_ops --list` prints: a new
Backend operation must come with its comparison against the CPU reference.
Usage: check_op_coverage.py BACKEND_OPS BACKEND_H
"""
import re
import subprocess
import sys

NOT_OPS = {"name", "device", "precision", "attention_precision", "error", "host_addressable",
           "allocate", "allocate_zeroed", "deallocate", "synchronize"}


def backend_methods(header):
    text = open(header, encoding="utf-8").read()
    body = text[text.index("class Backend {"):]
    body = body[:body.index("\n};")]
    return [m for m in re.findall(r"virtual\s[^;{(]*?\b(\w+)\s*\(", body) if m not in NOT_OPS and m != "Backend"]


def main():
    harness, header = sys.argv[1], sys.argv[2]
    listed = subprocess.run([harness, "--list"], check=True, capture_output=True, text=True).stdout
    covered = {line.split(" ", 1)[0] for line in listed.splitlines() if line}
    methods = backend_methods(header)
    if len(methods) < 20:
        print(f"found only {len(methods)} Backend operations in {header}: the parser is broken")
        return 1
    missing = [m for m in methods if m not in covered]
    print(f"{len(methods)} Backend operations, {len(methods) - len(missing)} with harness cases")
    for m in missing:
        print(f"Backend::{m} has no case in tests/backend/op_cases.cpp", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
