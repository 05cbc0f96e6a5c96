"""Shared helpers for scion's end-to-end CLI tests.

Each test script is run by meson as `python3 test_x.py <path to scion> <source root>`,
and exits non-zero (with a message) on the first failed check, 77 to skip.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SCION = os.path.abspath(sys.argv[1])
SOURCE_ROOT = os.path.abspath(sys.argv[2])
EXAMPLES = os.path.join(SOURCE_ROOT, "examples")


def run(*args, cwd=None, stdin=None, timeout=600):
    """Runs scion with args; returns (exit code, stdout, stderr)."""
    proc = subprocess.run([SCION, *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def run_json(*args, cwd=None, expect_rc=0):
    rc, out, err = run("--json", *args, cwd=cwd)
    check(rc == expect_rc, f"scion --json {' '.join(args)} exited {rc}, expected {expect_rc}\n{err}")
    return json.loads(out)


def check(condition, message):
    if not condition:
        print(f"FAIL: {message}", file=sys.stderr)
        sys.exit(1)


def temp_dir():
    return tempfile.mkdtemp(prefix="scion-cli-test-")


def copy_example(name, dest):
    """Copies examples/NAME to dest (which may exist) without a .scion/ store: the main
    job (`./bootstrap.sh run`) or a user may have left one there, and a test starts from
    the example as the repository has it."""
    shutil.copytree(os.path.join(EXAMPLES, name), dest, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".scion"))
    return dest


def edit_spec(work, old, new):
    """Replaces OLD by NEW in WORK/scion.yaml, which must hold it."""
    path = os.path.join(work, "scion.yaml")
    with open(path) as f:
        spec = f.read()
    check(old in spec, f"'{old}' in the spec")
    with open(path, "w") as f:
        f.write(spec.replace(old, new))


def spec_workspace(spec, data=("reviews.jsonl", "critics.jsonl")):
    """A fresh folder holding SPEC as scion.yaml and the named files of the sentiment
    example's data/ (the datasets most test specs point at)."""
    work = temp_dir()
    os.makedirs(os.path.join(work, "data"))
    for name in data:
        shutil.copy(os.path.join(EXAMPLES, "sentiment", "data", name), os.path.join(work, "data"))
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(spec)
    return work


def exported_tensor_bytes(work, model):
    """The tensor bytes of `scion export MODEL` run in `work` (the header is left out: its
    metadata holds timestamps)."""
    out = os.path.join(work, model + ".safetensors")
    rc, _, err = run("export", model, "-o", out, cwd=work)
    check(rc == 0, f"export {model}: {err}")
    with open(out, "rb") as f:
        data = f.read()
    return data[8 + int.from_bytes(data[:8], "little"):]


def skip_under_sanitizers(why):
    """Exits 77 (skip), saying why, when this scion was built with sanitizers: their shadow
    memory and checks change what a test that measures memory or time would see."""
    sanitize = run_json("--version")["build"]["sanitize"]
    if sanitize != "none":
        print(f"skip: this scion is built with sanitizers ({sanitize}); {why}")
        raise SystemExit(77)
