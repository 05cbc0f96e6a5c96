"""scion validate finds every error that needs no training, all in one run, each at its
file:line:col (a data row at file:line); every command that reads the spec runs the same
checks first, so `adapt` on a spec with a freeze glob that matches nothing trains nothing."""
import os

from harness import check, run, run_json, temp_dir

SPEC = """\
datasets:
  corpus: {path: data/corpus.txt}
  reviews:
    path: data/reviews.jsonl
    labels: [negative, positive]
  nothing:
    path: data/nothing.jsonl
    labels: [negative, positive]
  table:
    path: data/table.csv
    labels: [negative, positive]
models:
  base:
    architecture: {layers: 1, width: 16, heads: 2, max_length: 32}
    train: {data: corpus, steps: 2}
  headed:
    from: base
    adapt: {head: {}}
    train: {data: reviews, steps: 2}
  quoted:
    from: headed
    adapt: {lora: {rank: "4"}}
    train: {data: reviews, steps: 2}
  prompted:
    from: headed
    adapt: {prompt: {virtual_tokens: 8}}
    train: {data: reviews, steps: 2}
  unheaded:
    from: base
    adapt: {lora: {rank: 2}}
    train: {data: reviews, steps: 2}
lexicons:
  adj: [good, great]
tests:
  unknown-lexicon:
    type: mft
    capability: Vocabulary
    template: "the film was {nolex}."
    expect: {label: positive}
  bad-template:
    type: mft
    capability: Vocabulary
    template: "the film was {adj."
    expect: {label: positive}
  bad-kind:
    type: inv
    capability: Robustness
    inputs: [a film]
    perturb: {kind: typoes}
  bad-change:
    type: dir
    capability: Intensifiers
    inputs: [a film]
    perturb: {kind: typos}
    direction: {label: positive, change: incrase}
  bad-label:
    type: mft
    capability: Vocabulary
    inputs: [a film]
    expect: {label: postive}
  misspelt-key:
    type: mft
    capability: Vocabulary
    inputs: [a film]
    expect: {lable: positive}
assertions:
  bad-expression:
    kind: expression
    expression: "p.positive > "
"""

REVIEWS = [
    '{"text": "a fine film", "label": "positive"}',
    '{"text": "a dull film", "label": "negative"}',
    '{"text": "a film", "label": "neutral"}',
    '{"text": "a good film", "label": "positive"}',
    '{"review": "no text field", "label": "negative"}',
]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def workspace(spec, reviews=REVIEWS):
    work = temp_dir()
    write(os.path.join(work, "scion.yaml"), spec)
    write(os.path.join(work, "data", "corpus.txt"), "some text\nmore text\n")
    write(os.path.join(work, "data", "reviews.jsonl"), "\n".join(reviews) + "\n")
    write(os.path.join(work, "data", "nothing.jsonl"), "")
    write(os.path.join(work, "data", "table.csv"), "sentence,label\nfine,positive\n")
    return work


def line_of(text, spec=SPEC, after=None):
    """The 1-based line of the first line containing `text` (after the line containing `after`)."""
    lines = spec.splitlines()
    start = 0 if after is None else next(i for i, l in enumerate(lines) if after in l)
    return next(i for i, l in enumerate(lines) if i >= start and text in l) + 1


work = workspace(SPEC)
report = run_json("validate", cwd=work, expect_rc=2)
errors = report["errors"]
check(report["ok"] is False, f"not ok: {report}")


def find(file, line, key_path, words):
    """The one error at file:line with that key path whose message holds every word."""
    found = [e for e in errors if e["file"] == file and e["line"] == line
             and e["key_path"] == key_path and all(w in e["message"] for w in words)]
    check(len(found) == 1, f"one error at {file}:{line} {key_path} {words}; errors:\n" +
          "\n".join(f"{e['file']}:{e['line']}:{e['column']} [{e['key_path']}] {e['message']}"
                    for e in errors))
    return found[0]


# The spec: a quoted number, and prompt tokens that leave no room for the text.
find("scion.yaml", line_of('rank: "4"'), "models.quoted.adapt.lora.rank",
     ["got '4'", "the value is a quoted string; write 4 without quotes"])
find("scion.yaml", line_of("train:", after="prompted:"), "models.prompted.train",
     ["8 prompt virtual tokens plus train.max_length 32", "set train.max_length to at most 24"])
# Tests and assertions, each at the key at fault.
find("scion.yaml", line_of("{nolex}"), "tests.unknown-lexicon.template", ["unknown lexicon 'nolex'"])
find("scion.yaml", line_of("{adj."), "tests.bad-template.template", ["'{' is not closed"])
find("scion.yaml", line_of("kind: typoes"), "tests.bad-kind.perturb.kind",
     ["unknown perturbation 'typoes'", "did you mean 'typos'?"])
find("scion.yaml", line_of("change: incrase"), "tests.bad-change.direction.change",
     ["got 'incrase'", "did you mean 'increase'?"])
find("scion.yaml", line_of("label: postive"), "tests.bad-label.expect.label",
     ["unknown label 'postive'", "did you mean 'positive'?"])
find("scion.yaml", line_of("lable: positive"), "tests.misspelt-key.expect.lable",
     ["unknown key", "did you mean 'label'?"])
find("scion.yaml", line_of("expression: "), "assertions.bad-expression.expression",
     ["p.positive >"])
# The data, row by row: an undeclared label, a missing field, an empty file, a missing column.
find("data/reviews.jsonl", 3, "datasets.reviews", ["unknown label 'neutral'"])
find("data/reviews.jsonl", 5, "datasets.reviews", ["missing field 'text'"])
find("data/nothing.jsonl", 0, "datasets.nothing", ["the file is empty"])
find("data/table.csv", 1, "datasets.table", ["no column 'text'"])
check(len(errors) == 13, f"exactly the 13 errors planted: {errors}")
row = next(e for e in errors if e["file"] == "data/reviews.jsonl")
check(row["column"] == 0, f"a data row has no column: {row}")

# The objective a descendant without a head trains with on labelled data: a warning.
warnings = report["warnings"]
check(len(warnings) == 1 and warnings[0]["key_path"] == "models.unheaded.train"
      and warnings[0]["line"] == line_of("train:", after="unheaded:")
      and "trains with objective mlm" in warnings[0]["message"],
      f"one warning, at the unheaded model's train key: {warnings}")

# The same run as text: every error on stderr as file:line[:col]: error: ...
rc, out, err = run("validate", cwd=work)
check(rc == 2 and out == "", f"text validate exits 2 with nothing on stdout: {rc} {out!r}")
check("data/reviews.jsonl:3: error: " in err and "13 errors in scion.yaml" in err
      and f"scion.yaml:{line_of('train:', after='unheaded:')}:12: warning: " in err,
      f"text form of errors and warnings:\n{err}")

# One definition of valid: a spec whose only error is a data row stops every command
# before any work.
valid_spec = SPEC[:SPEC.index("  quoted:")] + SPEC[SPEC.index("  unheaded:"):SPEC.index("lexicons:")]
valid_spec = valid_spec.replace("  nothing:\n    path: data/nothing.jsonl\n    labels: [negative, positive]\n", "")
valid_spec = valid_spec.replace("  table:\n    path: data/table.csv\n    labels: [negative, positive]\n", "")
clean = workspace(valid_spec, REVIEWS[:2])
rc, out, err = run("validate", cwd=clean)
check(rc == 0 and out.startswith("ok: 3 models"), f"the trimmed spec is valid: {rc} {out} {err}")
check("warning: 'unheaded' has no classification head" in err, f"validate warns: {err}")
rc, out, _ = run("plan", cwd=clean)
check(rc == 0 and "trains with objective mlm on 'reviews'" in out
      and "trains with objective classification on 'reviews'" in out,
      f"plan says which objective each model trains with:\n{out}")
broken = workspace(valid_spec, REVIEWS)
for command in (["validate"], ["plan"], ["train"], ["adapt"], ["run"], ["test"]):
    rc, _, err = run(*command, cwd=broken)
    check(rc == 2 and "data/reviews.jsonl:3: error: unknown label 'neutral'" in err,
          f"{command[0]} refuses a bad data row before any work (exit {rc}):\n{err}")
check(not os.path.exists(os.path.join(broken, ".scion")), "no store was created")

# A freeze glob that matches nothing: `adapt` used to train the model and store it anyway.
frozen = workspace(valid_spec, REVIEWS[:2])
ran = workspace(valid_spec, REVIEWS[:2])
rc, _, err = run("run", cwd=ran)
check(rc in (0, 1), f"the family trains and is tested (exit {rc}):\n{err}")
check(err.count("warning: 'unheaded' has no classification head") == 1,
      f"`run` (train, then test) shows a warning once:\n{err}")
rc, _, err = run("train", cwd=frozen)
check(rc == 0, f"the base trains (exit {rc}):\n{err}")
write(os.path.join(frozen, "scion.yaml"),
      valid_spec.replace("  headed:\n    from: base\n",
                         "  headed:\n    from: base\n    freeze: [\"no.such.*\"]\n"))
rc, out, err = run("adapt", cwd=frozen)
check(rc == 2 and "freeze glob 'no.such.*' matches no parameter of 'headed'" in err,
      f"adapt exits 2 (exit {rc}):\n{out}\n{err}")
runs = run_json("lineage", "log", cwd=frozen)["runs"]
check([r["model"] for r in runs] == ["base"], f"adapt trained nothing: {runs}")
print("ok")
