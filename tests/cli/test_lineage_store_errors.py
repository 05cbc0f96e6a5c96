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

# A store of schema version 1 (before runs could be 'diverged' or 'abandoned') is
# migrated on open, keeping its runs and their metrics.
old = os.path.join(work, "v1")
os.makedirs(old)
rc, _, err = run("--store", old, "gc", "--dry-run", cwd=work)  # creates an empty store
check(rc == 0, f"gc creates an empty store: {err}")
db = sqlite3.connect(os.path.join(old, "lineage.db"))
db.executescript("""
PRAGMA foreign_keys = OFF;
DROP TABLE runs;
CREATE TABLE runs (
  id INTEGER PRIMARY KEY, model_id INTEGER NOT NULL REFERENCES models(id),
  kind TEXT NOT NULL CHECK (kind IN ('train', 'adapt', 'test', 'import')),
  status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'interrupted')),
  recipe_hash TEXT NOT NULL, dataset_digest TEXT REFERENCES datasets(digest),
  started_at TEXT NOT NULL, finished_at TEXT, seed INTEGER NOT NULL, host TEXT NOT NULL,
  scion_version TEXT NOT NULL,
  hyperparameters TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(hyperparameters)),
  message TEXT NOT NULL DEFAULT '') STRICT;
INSERT INTO models (id, name, created_at, updated_at) VALUES (1, 'm', 'now', 'now');
INSERT INTO runs (id, model_id, kind, status, recipe_hash, started_at, finished_at, seed, host,
                  scion_version) VALUES (7, 1, 'train', 'finished', 'abc', '2026-01-01T00:00:00Z',
                  '2026-01-01T00:00:01Z', 1, 'h', '0.1');
INSERT INTO run_metrics (run_id, step, loss) VALUES (7, 1, 0.5), (7, 2, 0.25);
PRAGMA user_version = 1;
""")
db.commit()
db.close()
rc, out, err = run("--store", old, "--json", "lineage", "log", cwd=work)
check(rc == 0, f"a version-1 store opens: {err}")
db = sqlite3.connect(os.path.join(old, "lineage.db"))
check(db.execute("PRAGMA user_version").fetchone()[0] == 2, "the store is migrated to version 2")
check(db.execute("SELECT count(*) FROM run_metrics WHERE run_id = 7").fetchone()[0] == 2,
      "the migration keeps the runs' metrics")
check(db.execute("SELECT status FROM runs WHERE id = 7").fetchone()[0] == "finished",
      "the migration keeps the runs")
db.execute("UPDATE runs SET status = 'diverged' WHERE id = 7")  # the widened CHECK
check(db.execute("PRAGMA foreign_key_check").fetchall() == [], "references hold")
db.close()

rc, out, _ = run("fsck", "--help")
check(rc == 0 and "Example" in out, "fsck --help shows an example")
print("ok")
