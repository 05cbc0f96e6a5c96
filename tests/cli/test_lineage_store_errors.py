"""Store commands on missing, foreign and too-new stores: clear errors and exit codes."""
import os
import sqlite3

from harness import check, run, temp_dir

work = temp_dir()

for command in (["fsck"], ["gc"], ["lineage", "log"], ["export", "m", "-o", "x.safetensors"]):
    rc, _, err = run("--store", os.path.join(work, "none"), *command, cwd=work)
    check(rc == 2, f"{command} on a missing store exits 2, got {rc}: {err}")
    check("no scion store" in err, f"{command} names the missing store: {err!r}")

# Another application's SQLite database is not taken for a store.
foreign = os.path.join(work, "foreign")
os.makedirs(foreign)
db = sqlite3.connect(os.path.join(foreign, "lineage.db"))
db.execute("CREATE TABLE t (x)")
db.execute("PRAGMA application_id = 42")
db.commit()
db.close()
rc, _, err = run("--store", foreign, "fsck", cwd=work)
check(rc == 3, f"fsck on a foreign database exits 3, got {rc}: {err}")
check("not a scion store" in err, f"fsck explains the foreign database: {err!r}")

# A store written by a newer scion is refused, not migrated backwards.
future = os.path.join(work, "future")
os.makedirs(future)
db = sqlite3.connect(os.path.join(future, "lineage.db"))
db.execute("CREATE TABLE t (x)")
db.execute("PRAGMA application_id = 1396918606")  # 'SCIN', lineage/schema.h
db.execute("PRAGMA user_version = 99")
db.commit()
db.close()
rc, _, err = run("--store", future, "gc", "--dry-run", cwd=work)
check(rc == 3, f"gc on a future store exits 3, got {rc}: {err}")
check("newer scion" in err and "Upgrade scion" in err, f"the message says what to do: {err!r}")

rc, out, _ = run("fsck", "--help")
check(rc == 0 and "Example" in out, "fsck --help shows an example")
print("ok")
