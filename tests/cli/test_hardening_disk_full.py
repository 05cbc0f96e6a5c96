"""A full disk (ENOSPC) ends a command with exit 3 and a message that names the cause, and
leaves the store consistent: once space is freed, fsck passes and training completes with
the same result as on a roomy disk (issue 12).

The disk is a small tmpfs, so the test needs root (or CAP_SYS_ADMIN) and skips with 77
otherwise. Several sizes make the write fail at different moments: while creating the
store, while recording metrics, and while storing the trained parameters."""
import json
import os
import shutil
import subprocess

from harness import EXAMPLES, check, run, temp_dir

SPEC = """datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
models:
  base:
    architecture: {type: encoder, layers: 1, width: 64, heads: 2, ffn_width: 64, max_length: 32}
    train:
      data: reviews
      objective: classification
      steps: 40
      batch_size: 8
      validation_split: 0.1
      optimizer: {type: adamw, lr: 1.0e-3, betas: [0.9, 0.999]}
      seed: 4
"""
REVIEWS = os.path.join(EXAMPLES, "sentiment", "data", "reviews.jsonl")
mounts = []


def mount_small_disk(kib):
    """A tmpfs of KIB KiB; None where this process may not mount."""
    where = temp_dir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", where],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    mounts.append(where)
    return where


def resize(where, kib):
    subprocess.run(["mount", "-o", f"remount,size={kib}k", where], check=True)


def unmount_all():
    for where in mounts:
        subprocess.run(["umount", "-l", where], capture_output=True)


def family_on(disk):
    os.makedirs(os.path.join(disk, "data"))
    shutil.copy(REVIEWS, os.path.join(disk, "data"))
    with open(os.path.join(disk, "scion.yaml"), "w") as f:
        f.write(SPEC)
    return disk


def trained_on_a_roomy_disk():
    work = temp_dir()
    family_on(os.path.join(work, "family"))
    rc, out, err = run("--json", "train", "base", cwd=os.path.join(work, "family"))
    check(rc == 0, f"train on a roomy disk: {err}")
    return work


def final_loss(work):
    rc, out, err = run("--json", "lineage", "log", cwd=work)
    check(rc == 0, f"lineage log: {err}")
    runs = [r for r in json.loads(out)["runs"] if r["status"] == "finished"]
    check(len(runs) == 1, f"one finished run: {out}")
    return runs[0]["final_loss"]


def main():
    probe = mount_small_disk(64)
    if probe is None:
        print("skip: mounting a small tmpfs needs root (or CAP_SYS_ADMIN)")
        return 77
    reference = final_loss(os.path.join(trained_on_a_roomy_disk(), "family"))

    # 700 KiB of the disk is the dataset; what is left runs out at different moments.
    # (Metrics are written 50 steps per transaction, so the write-ahead log stays small:
    # 1100 KiB is enough to finish; 1050 still runs out near the end.)
    for kib in (760, 800, 900, 1050):
        disk = family_on(mount_small_disk(kib))
        rc, out, err = run("train", "base", cwd=disk)
        check(rc == 3, f"{kib} KiB: a full disk exits 3, got {rc}: {out}{err}")
        check("disk is full" in err or "No space left on device" in err,
              f"{kib} KiB: the message names the cause: {err}")
        check("internal error" not in err, f"{kib} KiB: not an internal error: {err}")

        # While the disk is still full, reading the store says what is wrong, truthfully:
        # the full disk, that an upgrade stopped part way (a reader never writes the schema
        # itself, so it cannot try and see why), or that there is no store: a database is
        # linked into place only with its schema complete, so a creation the full disk
        # stopped leaves none.
        rc, out, err = run("fsck", cwd=disk)
        check(rc == 0 or "disk is full" in err or "stopped part way (a full disk?)" in err or
              (rc == 2 and "no scion store" in err),
              f"{kib} KiB: fsck names the full disk as the cause: {err}")
        check(rc in (0, 2, 3), f"{kib} KiB: fsck on a full disk exits 0, 2 or 3, got {rc}: {err}")

        # Space freed: the store is consistent and training completes as on a roomy disk.
        resize(disk, 8192)
        rc, out, err = run("train", "base", cwd=disk)
        check(rc == 0, f"{kib} KiB, then freed: train completes: {err}")
        rc, out, err = run("fsck", cwd=disk)
        check(rc == 0 and out.rstrip().endswith(": ok"), f"{kib} KiB, then freed: fsck is clean: {out}{err}")
        check(final_loss(disk) == reference,
              f"{kib} KiB, then freed: the same final loss as on a roomy disk")

    # An export to a full disk fails cleanly and leaves no partial file behind.
    roomy = os.path.join(trained_on_a_roomy_disk(), "family")
    tiny = mount_small_disk(16)
    target = os.path.join(tiny, "base.safetensors")
    rc, out, err = run("export", "base", "-o", target, cwd=roomy)
    check(rc == 3 and ("No space left on device" in err or "disk is full" in err),
          f"export to a full disk exits 3 and says why, got {rc}: {err}")
    check(os.listdir(tiny) == [], f"no partial export is left: {os.listdir(tiny)}")
    print("ok")
    return 0


try:
    code = main()
finally:
    unmount_all()
raise SystemExit(code)
