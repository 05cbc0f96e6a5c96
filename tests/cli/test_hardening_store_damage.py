"""Issue #29, the store and what the commands write: nothing damaged goes out, an emptied
lineage.db cannot make gc delete the store, stdout failures and paths inside the store
are errors, exports leave no temporary files.

  - item 3: a parameter row whose dtype or shape no longer fits its object: export (every
    format, -o - too), predict, eval, test and adapt of a descendant exit 3 naming the
    parameter and `scion fsck`;
  - item 5: an emptied lineage.db beside objects: fsck, lineage log and gc exit 3, write no
    schema, delete nothing;
  - item 7: `export -o -` streams without a temporary file;
  - item 8: a failed write to stdout (/dev/full) is exit 3, for every command that prints;
  - item 11: export-runs and init into the store are refused (exit 2), init over a file too;
  - item 12: usage errors print no JSON without --json; ESC sequences in texts and labels
    are escaped on a terminal; a parent cycle in the store is damage, not "not trained".
"""
import json
import os
import pty
import select
import shutil
import sqlite3
import subprocess
import sys

from harness import SCION, check, run, run_json, temp_dir

SPEC = """datasets:
  reviews: {path: reviews.jsonl, labels: [negative, "pos\\u001b]0;pwned\\u0007itive"]}
models:
  base:
    # width 64: the byte embedding (about 260 x 64 floats) is an object file, not inline
    architecture: {type: encoder, layers: 1, width: 64, heads: 2, ffn_width: 64, max_length: 32}
    train: {data: reviews, objective: classification, steps: 3, batch_size: 4, seed: 1}
  lora:
    from: base
    adapt: {lora: {rank: 2}}
    train: {data: reviews, steps: 3, batch_size: 4, seed: 2}
  lora-child:
    from: lora
    adapt: {lora: {rank: 2, targets: [k]}}
    train: {data: reviews, steps: 3, batch_size: 4, seed: 3}
lexicons:
  adj: [good, bad]
tests:
  simple:
    type: mft
    capability: Vocabulary
    template: "it was {adj}."
    expect: {label: negative}
    max_failure_rate: 1.0
"""
POSITIVE = "pos\x1b]0;pwned\x07itive"


def workspace():
    work = temp_dir()
    with open(os.path.join(work, "reviews.jsonl"), "w") as f:
        for i in range(12):
            label = ["negative", POSITIVE][i % 2]
            f.write(json.dumps({"text": ["a dull film", "a fine film\x1b[2J"][i % 2], "label": label}) + "\n")
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(SPEC)
    return work


def tree_listing(folder):
    """Every file under `folder` with its size and bytes."""
    out = {}
    for base, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(base, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = f.read()
    return out


def run_to_full_disk(*args, cwd):
    """scion ARGS with stdout on /dev/full: (exit code, stderr)."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([SCION, *args], cwd=cwd, stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=300)
    return proc.returncode, proc.stderr


def run_on_terminal(*args, cwd):
    """scion ARGS with stdout on a pseudo-terminal: what the terminal receives."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([SCION, *args], cwd=cwd, stdout=follower, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, NO_COLOR="1"))
    os.close(follower)
    received = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        received += chunk
    proc.wait(timeout=60)
    os.close(leader)
    return proc.returncode, received.decode("utf-8", "replace")


work = workspace()
rc, out, err = run("run", cwd=work, timeout=600)
check(rc == 0, f"run: {rc}\n{out}{err}")
store = os.path.join(work, ".scion")
db_path = os.path.join(store, "lineage.db")

# ---- item 8: a result that cannot be written is exit 3 -------------------------------------
for args in (["report", "-o", "-"], ["test", "--junit", "-", "--no-record"], ["lineage", "export"],
             ["schema"], ["lineage", "show", "lora", "--json"],
             ["lineage", "metrics", "lora", "--format", "csv"],
             ["predict", "lora", "--text", "a fine film"], ["export", "lora", "-o", "-"]):
    rc, err = run_to_full_disk(*args, cwd=work)
    check(rc == 3 and "standard output" in err, f"{' '.join(args)} > /dev/full: exit {rc}, {err}")

# ---- item 12: escapes on a terminal, raw bytes elsewhere ----------------------------------
rc, shown = run_on_terminal("predict", "lora", "--text", "evil\x1b]0;title\x07text", cwd=work)
check(rc == 0, f"predict on a terminal: {rc} {shown}")
check("\x1b" not in shown and "\x07" not in shown, f"no raw ESC or BEL reaches the terminal: {shown!r}")
check("\\x1b]0;title\\x07" in shown and "pos\\x1b]0;pwned\\x07itive" in shown,
      f"text and label escaped visibly: {shown!r}")
rc, out, err = run("predict", "lora", "--text", "evil\x1b]0;title\x07text", cwd=work)
check(rc == 0 and "evil\x1b]0;title\x07text" in out, f"a pipe gets the bytes as they are: {out!r}")

# ---- item 12: usage errors print JSON only under --json -----------------------------------
rc, out, err = run("plan", "--no-such-option", cwd=work)
check(rc == 2 and out == "" and "error" in err, f"usage error without --json: {rc} {out!r}")
rc, out, err = run("--json", "plan", "--no-such-option", cwd=work)
check(rc == 2 and json.loads(out)["error"]["code"] == 2, f"usage error with --json: {out!r}")
rc, out, err = run("plan", "--ranks", "0", cwd=work)
check(rc == 2 and "from 1 to 65536" in err and "1.79" not in err, f"--ranks 0: {err}")
rc, out, err = run("plan", "--ranks", "100000000", cwd=work)
check(rc == 2 and "from 1 to 65536" in err, f"--ranks 10^8 is refused at once: {rc} {err}")

# ---- item 10: a line without end is refused, not read until memory runs out ---------------
endless = os.path.join(work, "endless.txt")
with open(endless, "w") as f:
    f.write("a" * (3 * 1024 * 1024 // 2))  # 1.5 MiB and no newline
rc, out, err = run("predict", "lora", "--file", endless, cwd=work, timeout=60)
check(rc == 2 and "longer than 1 MiB" in err, f"predict --file of a 1.5 MiB line: {rc} {err}")
# A device is not read at all: only regular files are (issue 37, item 7).
rc, out, err = run("predict", "lora", "--file", "/dev/zero", cwd=work, timeout=60)
check(rc == 2 and "is a character device, not a regular file" in err,
      f"predict --file /dev/zero: {rc} {err}")

# ---- item 7: export -o - streams, with no temporary file ----------------------------------
tmp = temp_dir()
proc = subprocess.run([SCION, "export", "lora", "-o", "-"], cwd=work, capture_output=True,
                      env=dict(os.environ, TMPDIR=tmp), timeout=300)
check(proc.returncode == 0, f"export -o -: {proc.stderr}")
check(os.listdir(tmp) == [], f"export -o - left files in TMPDIR: {os.listdir(tmp)}")
check(os.listdir(work).count("lora.safetensors") == 0, "no file beside the workspace either")
rc, _, err = run("export", "lora", "-o", "lora.safetensors", cwd=work)
check(rc == 0, f"export to a file: {err}")
with open(os.path.join(work, "lora.safetensors"), "rb") as f:
    exported = f.read()
length = int.from_bytes(exported[:8], "little")
streamed = proc.stdout
check(streamed[8 + length:] == exported[8 + length:] and len(streamed) == len(exported),
      "the streamed checkpoint holds the file's tensors")
check([n for n in os.listdir(work) if ".tmp." in n] == [], f"no temporary file: {os.listdir(work)}")

# ---- item 11: nothing written inside the store ---------------------------------------------
before = tree_listing(store)
for args in (["export-runs", "--format", "mlflow", ".scion/newdir"], ["init", ".scion"],
             ["init", ".scion/objects/sub"], ["report", "-o", ".scion/report.html"]):
    rc, _, err = run(*args, cwd=work)
    check(rc == 2 and "inside the scion store" in err, f"{' '.join(args)}: {rc} {err}")
with open(os.path.join(work, "a-file"), "w") as f:
    f.write("mine")
rc, _, err = run("init", "a-file", cwd=work)
check(rc == 2 and "is a file" in err, f"init over a file is a usage error: {rc} {err}")
check(tree_listing(store) == before, "the store is unchanged by the refused commands")

# ---- item 3: a damaged parameter row goes nowhere ------------------------------------------
backup = os.path.join(temp_dir(), "store")
shutil.copytree(store, backup)
db = sqlite3.connect(db_path)
db.execute("UPDATE version_parameters SET dtype = 'F16' WHERE name LIKE '%lora.lora.a' AND "
           "version_id = (SELECT version_id FROM models WHERE name = 'lora')")
db.execute("UPDATE version_parameters SET shape = '[4000000, 64000]' WHERE name LIKE '%lora.lora.b' AND "
           "version_id = (SELECT version_id FROM models WHERE name = 'lora')")
db.commit()
db.close()
rc, out, err = run("fsck", cwd=work)
check(rc == 1 and "does not fit its object" in out, f"fsck sees the damage: {rc} {out}")
for args in (["export", "lora", "-o", "damaged.safetensors", "--own-only"],
             ["export", "lora", "-o", "-"],
             ["predict", "lora", "--text", "a fine film"],
             ["eval", "lora", "--data", "reviews"],
             ["test", "lora", "--no-record", "--rerun"],
             ["adapt", "lora-child", "--force"]):
    rc, out, err = run(*args, cwd=work, timeout=300)
    check(rc == 3 and "does not fit its object" in err and "scion fsck" in err,
          f"{' '.join(args)} with a damaged row: exit {rc}\n{err}")
check(not os.path.exists(os.path.join(work, "damaged.safetensors")), "no damaged file written")
shutil.rmtree(store)
shutil.copytree(backup, store)

# ---- item 12: a parent cycle is damage ------------------------------------------------------
db = sqlite3.connect(db_path)
db.execute("UPDATE models SET parent_id = (SELECT id FROM models WHERE name = 'lora-child') "
           "WHERE name = 'lora'")
db.commit()
db.close()
for args in (["lineage", "tree"], ["lineage", "show", "lora"]):
    rc, out, err = run(*args, cwd=work)
    check(rc == 3 and "form a cycle" in err, f"{' '.join(args)} with a parent cycle: {rc} {out}{err}")
shutil.rmtree(store)
shutil.copytree(backup, store)

# ---- item 5: an emptied lineage.db beside objects -------------------------------------------
objects_before = tree_listing(os.path.join(store, "objects"))
check(objects_before, "the family has object files")
open(db_path, "w").close()
for side in ("lineage.db-wal", "lineage.db-shm"):
    if os.path.exists(os.path.join(store, side)):
        os.remove(os.path.join(store, side))
for args in (["fsck"], ["lineage", "log"], ["gc"], ["gc", "--force-orphans"], ["run"]):
    rc, out, err = run(*args, cwd=work)
    check(rc == 3 and "missing or empty" in err and "restore lineage.db from a backup" in err,
          f"{' '.join(args)} on an emptied lineage.db: exit {rc}\n{out}{err}")
    check(os.path.getsize(db_path) == 0, f"{' '.join(args)} wrote into the emptied lineage.db")
check(tree_listing(os.path.join(store, "objects")) == objects_before, "no object was deleted")
print("ok")
