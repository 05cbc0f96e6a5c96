"""kill -9 at every file removal, rename and sync of gc, run, restore and import (issue 37):
each command runs under strace, which kills it (SIGKILL, before the call takes effect) at
its Nth call of one group of these system calls, for N = 1, 2, ... until the command
finishes unharmed. After every kill, `scion fsck` passes (notes allowed: leftovers of an
interrupted write) and the same command, run again, succeeds with fsck passing after it.
Prints the number of kill points of each command and group. Skips (77) without strace or
where ptrace is not allowed."""
import os
import shutil
import subprocess
import sys

from harness import SCION, check, edit_spec, run, spec_workspace, temp_dir

if not shutil.which("strace"):
    print("skip: no strace")
    sys.exit(77)
probe = subprocess.run(["strace", "-f", "-qq", "-e", "trace=none", "true"], capture_output=True)
if probe.returncode != 0:
    print(f"skip: strace cannot trace here: {probe.stderr.decode()[:200]}")
    sys.exit(77)

SPEC = """datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
models:
  trunk:
    architecture: {type: encoder, layers: 1, width: 64, heads: 2, ffn_width: 64, max_length: 24}
    train: {data: reviews, objective: classification, steps: 4, batch_size: 8, seed: 4}
  child:
    from: trunk
    adapt: {lora: {rank: 2, alpha: 4, targets: [q, v]}}
    train: {data: reviews, steps: 3, batch_size: 8, seed: 5}
lexicons:
  adj: [great, lovely]
tests:
  praise:
    type: mft
    capability: Vocabulary
    template: "it was {adj}."
    expect: {label: positive}
    max_failure_rate: 1.0
"""
# The token embedding (260 x 64 floats) is over the store's 64 KiB inline limit, so objects
# are files: written to a temporary name and renamed, removed by gc.
GROUPS = {"unlink": "unlink,unlinkat", "rename": "rename,renameat,renameat2,link,linkat",
          "sync": "fsync,fdatasync,sync_file_range"}
FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hf", "tiny-gpt2")


def fsck_passes(work, after):
    if not os.path.exists(os.path.join(work, ".scion", "lineage.db")):
        return  # killed before the store's database was linked into place: there is no store
    rc, out, err = run("fsck", cwd=work)
    check(rc == 0, f"fsck after {after}: {rc}\n{out}{err}")


def killed_at(work, args, group, n):
    """Runs scion ARGS in WORK, killed at the Nth call of GROUP; whether it was killed."""
    proc = subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "-e", f"trace={GROUPS[group]}",
                           "-e", f"inject={GROUPS[group]}:signal=KILL:when={n}", SCION, *args],
                          cwd=work, capture_output=True, text=True, timeout=600)
    return proc.returncode in (-9, 137)


def every_kill_point(name, prepare, args, ok_codes=(0, 1)):
    """Kills `scion ARGS` at every call of every group in a fresh copy of prepare()'s folder."""
    template = prepare()
    for group in GROUPS:
        n = 1
        while True:
            work = os.path.join(temp_dir(), "w")
            shutil.copytree(template, work, symlinks=True)
            if not killed_at(work, args, group, n):
                break
            where = f"{name} killed at {group} call {n}"
            fsck_passes(work, where)
            rc, _, err = run(*args, cwd=work)
            check(rc in ok_codes, f"{' '.join(args)} again after {where}: {rc}\n{err}")
            fsck_passes(work, f"{where} and run again")
            shutil.rmtree(os.path.dirname(work))
            n += 1
        print(f"{name}: {n - 1} {group} kill point(s), each leaving fsck passing")


def fresh():
    return spec_workspace(SPEC)


def trained():
    work = fresh()
    rc, _, err = run("run", cwd=work)
    check(rc in (0, 1), f"run: {err}")
    return work


def two_versions():
    work = trained()
    edit_spec(work, "alpha: 4", "alpha: 8")
    rc, _, err = run("run", cwd=work)
    check(rc in (0, 1), f"run after the edit: {err}")
    return work


def reverted():
    work = two_versions()
    edit_spec(work, "alpha: 8", "alpha: 4")
    return work


def imported():
    work = temp_dir()
    shutil.copytree(FIXTURE, os.path.join(work, "hf"))
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write("models:\n  gpt2:\n    import: hf\n")
    return work


every_kill_point("run", fresh, ["run"])
every_kill_point("restore", reverted, ["run"])
every_kill_point("gc --keep 0", two_versions, ["gc", "--keep", "0"], ok_codes=(0,))
every_kill_point("import", imported, ["import", "hf", "--as", "gpt2"], ok_codes=(0,))
print("ok: kill -9 at every removal, rename and sync leaves a store fsck passes")
