"""Store commands end to end on a copy of the example family: import (with its
mismatch errors), lineage tree/show/log/diff/export, export, fsck on a corrupted
object, gc."""
import glob
import json
import os
import re
import struct

from harness import check, copy_example, run, run_json, temp_dir


def write_safetensors(path, tensors):
    """tensors: {name: (shape, bytes)}, all F32."""
    header, offset, data = {}, 0, b""
    for name, (shape, payload) in tensors.items():
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(payload)]}
        offset += len(payload)
        data += payload
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


work = temp_dir()
copy_example("sentiment", work)
# A second base with the same architecture, so two imported models can be compared.
with open(os.path.join(work, "scion.yaml")) as f:
    spec = f.read()
spec = spec.replace("  review-lora:", "  twin:\n    architecture: {type: encoder, layers: 2, width: 64, heads: 4,"
                    " ffn_width: 256, max_length: 64, tokenizer: byte, norm: pre}\n"
                    "    train: {data: reviews, objective: classification, steps: 10, batch_size: 4, seed: 5}\n\n"
                    "  review-lora:", 1)
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(spec)

# An empty checkpoint: every tensor of the parameter table is reported missing.
write_safetensors(os.path.join(work, "empty.safetensors"), {})
rc, _, err = run("import", "empty.safetensors", "--as", "base", cwd=work)
check(rc == 2, f"importing an empty checkpoint exits 2, got {rc}: {err}")
table = {m.group(1): json.loads(m.group(2))
         for m in re.finditer(r"missing tensor '([^']+)' (\[[0-9,]*\])", err)}
check("tok_emb.weight" in table and table["tok_emb.weight"] == [260, 64], f"missing tensors are listed: {err[:500]}")
check(not os.path.exists(os.path.join(work, ".scion", "lineage.db")), "a failed import writes nothing")


def tensors(seed, shape_override=None, extra=None):
    out = {}
    for i, (name, shape) in enumerate(sorted(table.items())):
        n = 1
        for d in shape:
            n *= d
        out[name] = (shape, struct.pack(f"<{n}f", *[(seed + i + k % 13) * 0.01 for k in range(n)]))
    if shape_override:
        name, shape = shape_override
        out[name] = (shape, bytes(4 * shape[0] * shape[1]))
    if extra:
        out[extra] = ([2], bytes(8))
    return out


write_safetensors(os.path.join(work, "bad.safetensors"),
                  tensors(1, shape_override=("pos_emb.weight", [32, 64]), extra="decoder.bias"))
rc, _, err = run("import", "bad.safetensors", "--as", "base", cwd=work)
check(rc == 2, f"a misshapen checkpoint exits 2, got {rc}")
check("'pos_emb.weight' has shape [32,64]" in err and "needs [64,64]" in err, f"misshapen tensor named: {err}")
check("extra tensor 'decoder.bias'" in err, f"extra tensor named: {err}")

rc, _, err = run("import", "empty.safetensors", "--as", "review-lora", cwd=work)
check(rc == 2 and "only base models can be imported" in err, f"descendants cannot be imported: {rc} {err}")

write_safetensors(os.path.join(work, "base.safetensors"), tensors(1))
imported = run_json("import", "base.safetensors", "--as", "base", cwd=work)
check(imported["tensors"] == len(table), f"import reports its tensors: {imported}")
second = tensors(1)
second["ln_f.bias"] = (table["ln_f.bias"], bytes(4 * table["ln_f.bias"][0]))
write_safetensors(os.path.join(work, "twin.safetensors"), second)
run_json("import", "twin.safetensors", "--as", "twin", cwd=work)

# tree: statuses from spec + store.
tree = {m["model"]: m for m in run_json("lineage", "tree", cwd=work)["models"]}
check(tree["base"]["status"] == "imported", f"base is imported: {tree['base']}")
check(tree["review-lora"]["status"] == "not trained", "descendants are not trained")
check(tree["product-lora"]["parent"] == "review-lora", "the tree keeps descendants of descendants")
check(tree["base"]["own_parameters"] == len(table), "all of base's tensors are its own")
rc, out, _ = run("lineage", "tree", cwd=work)
check(rc == 0 and "└── " in out and "review-lora" in out, f"text tree uses box drawing: {out}")
rc, out, _ = run("lineage", "tree", "review-lora", cwd=work)
check("product-lora" in out and "review-prefix" not in out, f"tree MODEL shows only the subtree: {out}")

# A changed recipe makes the stored model out of date.
with open(os.path.join(work, "scion.yaml")) as f:
    spec = f.read()
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(spec.replace("epochs: 2\n", "epochs: 3\n", 1))
tree = {m["model"]: m for m in run_json("lineage", "tree", cwd=work)["models"]}
check(tree["base"]["status"] == "out of date", f"a changed recipe is out of date: {tree['base']}")

# log, show, diff, export graph.
runs = run_json("lineage", "log", cwd=work)["runs"]
check([r["model"] for r in runs] == ["twin", "base"], f"runs newest first: {runs}")
check(all(r["kind"] == "import" and r["status"] == "finished" for r in runs), f"import runs: {runs}")
show = run_json("lineage", "show", "base", cwd=work)
check(show["ancestry"][0]["model"] == "base" and len(show["runs"]) == 1, f"show: {show}")
check(show["shares"].get("twin") == len(table) - 1, f"base shares all but one tensor with twin: {show['shares']}")
diff = run_json("lineage", "diff", "base", "twin", cwd=work)
check(diff["differ"] == ["ln_f.bias"] and len(diff["shared"]) == len(table) - 1, f"diff: {diff}")
rc, out, _ = run("lineage", "export", "--format", "dot", cwd=work)
check(rc == 0 and '"review-lora" -> "product-lora"' in out, f"dot export: {out}")
rc, out, _ = run("lineage", "export", "--format", "mermaid", cwd=work)
check(rc == 0 and out.startswith("graph TD") and "-->" in out, f"mermaid export: {out}")
rc, _, err = run("lineage", "show", "nobody", cwd=work)
check(rc == 2 and "'nobody'" in err, f"an unknown model is a clear error: {rc} {err}")

# export round trip with lineage metadata.
run_json("export", "base", "-o", "out.safetensors", cwd=work)
with open(os.path.join(work, "out.safetensors"), "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
check(header["__metadata__"]["scion.model"] == "base", f"export metadata: {header['__metadata__']}")
check(json.loads(header["__metadata__"]["scion.lineage"])[0]["name"] == "base", "lineage in metadata")
check(set(header) - {"__metadata__"} == set(table), "export writes every tensor")
# twin's stored version is never rewritten: base's export (another ln_f.bias) is refused
# under twin's recipe, and imports as a new version once twin's recipe is its own.
rc, _, err = run("import", "out.safetensors", "--as", "twin", cwd=work)
check(rc == 2 and "never rewritten" in err and "1 of" in err and "'ln_f.bias'" in err,
      f"an import over a stored version of the same recipe is refused: {rc} {err}")
with open(os.path.join(work, "scion.yaml")) as f:
    spec = f.read()
with open(os.path.join(work, "scion.yaml"), "w") as f:
    f.write(spec.replace("steps: 10, batch_size: 4, seed: 5}", "steps: 10, batch_size: 4, seed: 6}", 1))
imported_again = run_json("import", "out.safetensors", "--as", "twin", cwd=work)
check(imported_again["tensors"] == len(table), "an exported file imports again")
check(len(run_json("lineage", "versions", "twin", cwd=work)["versions"]) == 2, "twin has two versions")

# fsck: sound, then a corrupted object file is named; gc.
report = run_json("fsck", cwd=work)
check(report["ok"] and report["objects_checked"] > 0, f"fsck passes: {report}")
objects = sorted(glob.glob(os.path.join(work, ".scion", "objects", "*", "*")))
check(objects, "large tensors are files under objects/")
victim = objects[0]
with open(victim, "r+b") as f:
    f.seek(10)
    f.write(b"\xff\xff\xff\xff")
rc, out, _ = run("fsck", cwd=work)
digest = os.path.basename(os.path.dirname(victim)) + os.path.basename(victim)
check(rc == 1, f"fsck exits 1 on damage, got {rc}")
check(digest[:12] in out and os.path.relpath(victim, work) in out, f"fsck names the damaged object and its file: {out}")

# Every version is kept without --keep; with --keep 0 twin's older version goes, and with
# it its own ln_f.bias, the one object no other version uses.
check(run_json("gc", "--dry-run", cwd=work)["removed_objects"] == [], "plain gc keeps every version")
gc = run_json("gc", "--keep", "0", "--dry-run", cwd=work)
check(gc["dry_run"] and len(gc["removed_objects"]) == 1, f"gc finds the older version's tensor: {gc}")
gc = run_json("gc", "--keep", "0", cwd=work)
check(len(gc["removed_objects"]) == 1, f"gc removes it: {gc}")
gc = run_json("gc", "--dry-run", cwd=work)
check(gc["removed_objects"] == [] and gc["removed_files"] == [], f"nothing left to collect: {gc}")
print("ok")
