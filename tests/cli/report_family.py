"""A tiny trained and tested family for the `scion report` tests: four models (a share
between two of them), two tests run twice (so the matrix has a change since the previous
run), an assertion, and test inputs with characters that HTML must escape."""
from harness import check, run, spec_workspace

SPEC = """datasets:
  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}
  critics: {path: data/critics.jsonl, labels: [negative, positive]}
models:
  base:
    architecture: {type: encoder, layers: 1, width: 32, heads: 2, ffn_width: 64, max_length: 48}
    train: {data: reviews, objective: classification, steps: 40, batch_size: 8, validation_split: 0.1,
            eval_every: 10, seed: 1}
  a:
    from: base
    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}
    train: {data: reviews, steps: 30, batch_size: 8, validation_split: 0.1, eval_every: 10, seed: 2}
  b:
    from: base
    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}
    train: {data: critics, steps: 25, batch_size: 8, seed: 3}
  c:
    from: a
    adapt: {prefix: {virtual_tokens: 4}}
    train: {data: critics, steps: 20, batch_size: 8, seed: 4}
share:
  tasks: {models: [a, b], modules: ['head.$model.*', 'blk.*.attn_q.lora.$model.*']}
lexicons:
  noun: ['<i>plot</i>', 'film & "score"', movie]
  good: [great, wonderful, lovely]
tests:
  praise:
    type: mft
    capability: Vocabulary
    template: "the {noun} was {good}."
    expect: {label: positive}
    max_failure_rate: 0.1
  negation:
    type: mft
    capability: Negation
    template: "the {noun} was not {good}."
    expect: {label: negative}
    max_failure_rate: 0.2
assertions:
  praise-is-positive:
    kind: allowed_outputs
    pattern: "^the .* was (great|wonderful|lovely)\\\\.$"
    labels: [positive]
"""

MODELS = ("base", "a", "b", "c")
TESTS = ("praise", "negation")


def trained_family():
    """The family's folder, trained and tested twice; and the second `scion test --json`."""
    work = spec_workspace(SPEC)
    rc, _, err = run("run", cwd=work)
    check(rc in (0, 1), f"scion run exited {rc}\n{err}")
    rc, out, err = run("--json", "test", "--rerun", cwd=work)  # judged again: a second run
    check(rc in (0, 1), f"scion test exited {rc}\n{err}")
    import json
    return work, json.loads(out)
