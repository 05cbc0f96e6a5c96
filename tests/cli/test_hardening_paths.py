"""Paths and names the CLI must not let escape (issue 12, sections 1 and 4): export and
test reports never write into the store, over devices or folders, or over an existing
file without --force; a missing folder is named; spec names that could name files are
refused by validate at file:line:col; an unknown model name on the command line gets a
did-you-mean."""
import json
import os

from harness import EXAMPLES, check, run, run_json, temp_dir

SPEC = """datasets:
  corpus: {path: corpus.txt}
models:
  news:
    architecture: {type: encoder, layers: 1, width: 16, heads: 2, ffn_width: 32, max_length: 32}
    train: {data: corpus, objective: mlm, steps: 4, batch_size: 2, seed: 1}
  news-lora:
    from: news
    adapt: {lora: {rank: 2}}
    train: {data: corpus, objective: mlm, steps: 4, batch_size: 2, seed: 2}
"""


def workspace(spec=SPEC):
    work = temp_dir()
    with open(os.path.join(EXAMPLES, "sentiment", "data", "reviews.jsonl")) as f:
        texts = [json.loads(line)["text"] for line in f][:40]
    with open(os.path.join(work, "corpus.txt"), "w") as f:
        f.write("\n".join(texts) + "\n")
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(spec)
    return work


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


work = workspace()
run_json("run", cwd=work)
db = os.path.join(work, ".scion", "lineage.db")
db_before = file_bytes(db)

# export into the store is refused, and the store is intact afterwards.
for target in (".scion/lineage.db", ".scion/new.safetensors", "./.scion/../.scion/lineage.db",
               os.path.join(work, ".scion", "objects", "x.safetensors")):
    for force in ([], ["--force"]):
        rc, _, err = run("export", "news", "-o", target, *force, cwd=work)
        check(rc == 2 and "inside the scion store" in err, f"export -o {target} {force} is refused: {rc} {err}")
check(file_bytes(db) == db_before, "the store's database is untouched")
check(not os.path.exists(os.path.join(work, ".scion", "new.safetensors")), "nothing new in the store")
os.symlink(os.path.join(work, ".scion"), os.path.join(work, "store-link"))
rc, _, err = run("export", "news", "-o", "store-link/lineage.db", "--force", cwd=work)
check(rc == 2 and "inside the scion store" in err, f"a symbolic link into the store is resolved: {rc} {err}")
log = run_json("lineage", "log", cwd=work)
check({r["model"] for r in log["runs"]} == {"news", "news-lora"}, f"lineage log works after: {log}")
rc, _, err = run("fsck", cwd=work)
check(rc == 0, f"fsck passes after the refused exports: {err}")

# An existing file is replaced only with --force.
out = os.path.join(work, "news.safetensors")
with open(out, "w") as f:
    f.write("precious")
rc, _, err = run("export", "news", "-o", "news.safetensors", cwd=work)
check(rc == 2 and "exists; pass --force" in err, f"export over a file needs --force: {rc} {err}")
check(file_bytes(out) == b"precious", "the existing file is kept")
rc, _, err = run("export", "news", "-o", "news.safetensors", "--force", cwd=work)
check(rc == 0 and file_bytes(out) != b"precious", f"--force replaces it: {rc} {err}")

# Devices, fifos, folders and dangling links are not files to replace. (A fifo stands in
# for a device: an unfixed scion run as root would replace /dev/null itself.)
os.makedirs(os.path.join(work, "folder"))
os.mkfifo(os.path.join(work, "fifo"))
for target, kind in (("fifo", "is a fifo"), ("folder", "is a folder"), ("folder/", "names a folder")):
    rc, _, err = run("export", "news", "-o", target, "--force", cwd=work)
    check(rc == 2 and kind in err, f"export -o {target} is refused ({kind}): {rc} {err}")
os.symlink(os.path.join(work, "nowhere"), os.path.join(work, "dangling"))
rc, _, err = run("export", "news", "-o", "dangling", "--force", cwd=work)
check(rc == 2 and "symbolic link to nothing" in err, f"a dangling link is refused: {rc} {err}")
check(not os.path.exists(os.path.join(work, "nowhere")), "nothing is written through the link")

# A missing folder is named, not a temporary file.
rc, _, err = run("export", "news", "-o", "out/x.safetensors", cwd=work)
check(rc == 2 and "folder 'out' does not exist; create it first" in err and ".tmp" not in err,
      f"a missing folder is named: {rc} {err}")

# test --junit and --export-violations follow the same rule (checked before any work).
rc, _, err = run("test", "--junit", ".scion/report.xml", cwd=work)
check(rc == 2 and "--junit" in err and "inside the scion store" in err, f"--junit into the store: {rc} {err}")
rc, _, err = run("test", "--export-violations", ".scion/lineage.db", "--force", cwd=work)
check(rc == 2 and "inside the scion store" in err, f"--export-violations into the store: {rc} {err}")
rc, _, err = run("test", "--junit", "news.safetensors", cwd=work)
check(rc == 2 and "exists; pass --force" in err, f"--junit over a file needs --force: {rc} {err}")
check(run("fsck", cwd=work)[0] == 0 and run_json("lineage", "log", cwd=work)["runs"],
      "the store is still sound after the refused reports")

# Did-you-mean for model names on the command line, in the store and in the spec.
rc, _, err = run("lineage", "show", "news-lroa", cwd=work)
check(rc == 2 and "no model 'news-lroa' in the store" in err and "did you mean 'news-lora'?" in err,
      f"lineage show suggests the close name: {rc} {err}")
for command in (["lineage", "diff", "news", "news-lroa"], ["lineage", "log", "news-lroa"],
                ["lineage", "tree", "news-lroa"], ["export", "news-lroa", "-o", "y.safetensors"],
                ["adapt", "news-lroa"], ["test", "news-lroa"], ["predict", "news-lroa", "--text", "x"],
                ["lineage", "blame", "news-lroa"]):
    rc, _, err = run(*command, cwd=work)
    check(rc == 2 and "no model 'news-lroa'" in err and "did you mean 'news-lora'?" in err,
          f"{' '.join(command)} suggests the close name: {rc} {err}")
rc, _, err = run("lineage", "show", "zzzzzzzz", cwd=work)
check(rc == 2 and "did you mean" not in err and "scion lineage tree" in err, f"nothing close: {rc} {err}")
rc, _, err = run("import", "news.safetensors", "--as", "../../escaped", cwd=work)
check(rc == 2 and "is not a model name: it starts with '.'" in err, f"import --as checks the name: {rc} {err}")
rc, _, err = run("lineage", "show", "x" * 10000, cwd=work)
check(rc == 2 and "10000 characters long" in err and len(err) < 1000, f"a long name is refused briefly: {rc} {err[:300]}")

# Spec names that could name files are refused by validate at file:line:col.
escaped = workspace(SPEC.replace("news-lora", "../../escaped"))
rc, _, err = run("validate", cwd=escaped)
check(rc == 2 and "scion.yaml:7:3: error: model name '../../escaped' starts with '.' at models" in err
      and "rename it, e.g. 'escaped'" in err, f"validate refuses ../../escaped: {rc} {err}")
rc, _, err = run("train", cwd=escaped)
check(rc == 2 and not os.path.exists(os.path.join(escaped, ".scion")), f"train refuses it too: {rc} {err}")
# A plain YAML key is at most 1024 characters; an explicit key ("? ") may be longer.
long_name = workspace(SPEC.replace("  news-lora:\n", "  ? " + "n" * 10000 + "\n  :\n"))
rc, _, err = run("validate", cwd=long_name)
check(rc == 2 and "scion.yaml:7:5: error: model name '" in err and "is 10000 characters long (at most 128)" in err
      and len(err) < 1000, f"validate refuses a 10,000-character name: {rc} {err[:300]}")
print("ok")
