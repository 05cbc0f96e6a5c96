"""`scion schema`: the JSON Schema of scion.yaml, checked with a standard validator
(python3-jsonschema) against every example, `scion init`'s spec and misspelt keys."""
import copy
import glob
import json
import os
import sys

from harness import EXAMPLES, SOURCE_ROOT, check, run, temp_dir

try:
    import jsonschema
    import yaml
except ImportError:
    print("SKIP: python3-jsonschema or python3-yaml is not installed")
    sys.exit(77)

MODELINE = "# yaml-language-server: $schema="

rc, out, err = run("schema")
check(rc == 0, f"scion schema exited {rc}: {err}")
schema = json.loads(out)
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)


def errors_of(document):
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(document)]


def check_spec_file(path):
    with open(path) as f:
        text = f.read()
    first = text.splitlines()[0]
    check(first.startswith(MODELINE), f"{path} does not start with the modeline: {first!r}")
    named = os.path.normpath(os.path.join(os.path.dirname(path), first[len(MODELINE):]))
    check(os.path.isfile(named), f"{path}'s modeline names {named}, which does not exist")
    with open(named) as f:
        check(json.load(f) == schema, f"{named} differs from `scion schema`; regenerate it")
    problems = errors_of(yaml.safe_load(text))
    check(not problems, f"{path} fails the schema:\n" + "\n".join(problems))
    return yaml.safe_load(text)


# Every example, with the schema its modeline names (docs/scion.schema.json).
examples = sorted(glob.glob(os.path.join(EXAMPLES, "*", "scion.yaml")))
check(len(examples) >= 2, f"expected the examples' specs, found {examples}")
for path in examples:
    check_spec_file(path)

# `scion init`'s spec, with the schema it writes beside it.
work = temp_dir()
rc, out, err = run("init", work)
check(rc == 0, f"scion init exited {rc}: {err}")
spec = check_spec_file(os.path.join(work, "scion.yaml"))

# Misspelt keys fail the schema where the loader rejects them too.
def misspelt(mutate, word):
    """The schema and the loader (reading the spec from stdin) both reject `word`."""
    document = copy.deepcopy(spec)
    mutate(document)
    check(errors_of(document), f"the schema accepts {word}")
    rc, out, err = run("-f", "-", "validate", cwd=work,
                       stdin=yaml.safe_dump(document, sort_keys=False))
    check(rc == 2 and f"<stdin>:" in err and f"'{word}'" in err,
          f"validate -f - does not reject {word} (exit {rc}): {err}")


# The unchanged spec from stdin is valid: its data path resolves against the current folder.
rc, out, err = run("-f", "-", "validate", cwd=work, stdin=yaml.safe_dump(spec, sort_keys=False))
check(rc == 0, f"validate -f - of init's spec exited {rc}: {err}")
misspelt(lambda d: d["models"]["trunk"]["train"].update(epoch=3), "epoch")
misspelt(lambda d: d["models"]["trunk-lora"]["adapt"]["lora"].update(rnak=4), "rnak")
misspelt(lambda d: d.update(model={}), "model")
misspelt(lambda d: d["datasets"]["reviews"].update(format="jsonlines"), "jsonlines")
misspelt(lambda d: d["models"]["trunk"]["architecture"].update(tokeniser="byte"), "tokeniser")
print("ok: the schema accepts", len(examples), "examples and init's spec, rejects misspellings")
