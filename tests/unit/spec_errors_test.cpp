// Every class of spec error, with its exact message and location.
#include <catch2/catch.hpp>

#include "spec_test_workspace.h"

using namespace scion::spec;
using scion::spec::testing::kPrefix;
using scion::spec::testing::TempWorkspace;

namespace {

std::vector<std::string> errors_of(const std::string& yaml) {
  TempWorkspace ws;
  const LoadResult r = ws.load(yaml);
  std::vector<std::string> out;
  for (const Diagnostic& d : r.errors) out.push_back(d.to_string());
  CHECK(r.workspace.has_value() == out.empty());
  return out;
}

// The single error a spec has (the test fails if it has another number of them).
std::string error_of(const std::string& yaml) {
  const auto errors = errors_of(yaml);
  INFO(yaml);
  REQUIRE(errors.size() == 1);
  return errors[0];
}

std::string with_model(const std::string& model) { return std::string(kPrefix) + model; }

}  // namespace

TEST_CASE("an unknown adaptation method gets a spelling suggestion") {
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {lroa: {rank: 4}, head: {}}\n"
                            "    train: {data: reviews, epochs: 1}\n")) ==
        "scion.yaml:12:13: error: unknown adaptation method 'lroa' at models.review.adapt.lroa"
        " \u2014 did you mean 'lora'?");
}

TEST_CASE("an unknown key with nothing close lists the keys allowed") {
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {head: {}}\n"
                            "    zzz: 1\n"
                            "    train: {data: reviews, epochs: 1}\n")) ==
        "scion.yaml:13:5: error: unknown key 'zzz' at models.review.zzz (expected one of: "
        "architecture, import, from, adapt, freeze, unfreeze, train)");
}

TEST_CASE("a misspelt value gets a suggestion") {
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {head: {pooling: maen}}\n"
                            "    train: {data: reviews, epochs: 1}\n")) ==
        "scion.yaml:12:29: error: unknown pooling 'maen' at models.review.adapt.head.pooling"
        " \u2014 did you mean 'mean'?");
}

TEST_CASE("a wrong type says what was expected and what was found") {
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {lora: {rank: four}}\n"
                            "    train: {data: reviews, epochs: 1}\n")) ==
        "scion.yaml:12:26: error: expected an integer from 1 to 16 (the base's width), got "
        "'four' at models.review.adapt.lora.rank");
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {lora: {targets: q}}\n"
                            "    train: {data: reviews, epochs: 1}\n")) ==
        "scion.yaml:12:29: error: expected a list of strings, got 'q' at "
        "models.review.adapt.lora.targets");
  CHECK(error_of("models: [a, b]\n") ==
        "scion.yaml:1:9: error: expected a mapping from model names to models, got a list at "
        "models");
}

TEST_CASE("a missing required key is reported at the mapping that lacks it") {
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {prefix: {layers: [0]}}\n"
                            "    train: {data: reviews, epochs: 1}\n")) ==
        "scion.yaml:12:21: error: missing required key 'virtual_tokens' (how many virtual "
        "tokens) at models.review.adapt.prefix");
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {bitfit: true}\n")) ==
        "scion.yaml:11:5: error: missing required key 'train' (the recipe that trains the "
        "adaptation) at models.review");
  CHECK(error_of("datasets: {}\n") ==
        "scion.yaml:1:1: error: missing required key 'models' (the model family)");
}

TEST_CASE("references to undefined models and datasets") {
  CHECK(error_of(with_model("  review:\n"
                            "    from: bsae\n"
                            "    adapt: {bitfit: true}\n"
                            "    train: {data: reviews, epochs: 1}\n")) ==
        "scion.yaml:11:11: error: unknown model 'bsae' at models.review.from \u2014 did you "
        "mean 'base'?");
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {bitfit: true}\n"
                            "    train: {data: tweets, epochs: 1}\n")) ==
        "scion.yaml:13:19: error: unknown dataset 'tweets' at models.review.train.data "
        "(defined datasets: reviews, corpus)");
  CHECK(error_of(with_model("tests:\n"
                            "  t: {type: mft, capability: Negation, models: [ghost]}\n")) ==
        "scion.yaml:11:49: error: unknown model 'ghost' at tests.t.models[0] (defined models: "
        "base)");
}

TEST_CASE("a cycle through from is reported once, with the cycle spelt out") {
  CHECK(error_of(with_model(
            "  a: {from: b, adapt: {bitfit: true}, train: {data: reviews, steps: 1}}\n"
            "  b: {from: a, adapt: {bitfit: true}, train: {data: reviews, steps: 1}}\n")) ==
        "scion.yaml:10:13: error: cycle through 'from': a -> b -> a at models.a.from; a model "
        "cannot descend from itself");
  CHECK(error_of(with_model(
            "  a: {from: a, adapt: {bitfit: true}, train: {data: reviews, steps: 1}}\n")) ==
        "scion.yaml:10:13: error: cycle through 'from': a -> a at models.a.from; a model cannot "
        "descend from itself");
}

TEST_CASE("a share between a model and its ancestor is a cycle through from and share") {
  CHECK(error_of(with_model(
            "  a: {from: base, adapt: {bitfit: true}, train: {data: reviews, steps: 1}}\n"
            "share:\n"
            "  trunk: {models: [a, base], modules: ['blk.*']}\n")) ==
        "scion.yaml:12:10: error: cycle through 'from' and 'share': share 'trunk' joins 'a' "
        "with its ancestor 'base' at share.trunk.models; a descendant already inherits its "
        "ancestors' modules, so share them only between models that do not descend from each "
        "other");
}

TEST_CASE("out-of-range values name the allowed range") {
  const auto review = [](const std::string& adapt, const std::string& train = "epochs: 1") {
    return with_model(
        "  review:\n"
        "    from: base\n"
        "    adapt: " +
        adapt +
        "\n"
        "    train: {data: reviews, " +
        train + "}\n");
  };
  CHECK(error_of(review("{lora: {rank: 17}}")) ==
        "scion.yaml:12:26: error: expected an integer from 1 to 16 (the base's width), got '17' "
        "at models.review.adapt.lora.rank");
  CHECK(error_of(review("{lora: {rank: 0}}")) ==
        "scion.yaml:12:26: error: expected an integer from 1 to 16 (the base's width), got '0' "
        "at models.review.adapt.lora.rank");
  CHECK(error_of(review("{prompt: {virtual_tokens: 0}}")) ==
        "scion.yaml:12:38: error: expected an integer from 1 to 31 (below the base's "
        "max_length), got '0' at models.review.adapt.prompt.virtual_tokens");
  CHECK(error_of(review("{lora: {layers: [0, 2]}}")) ==
        "scion.yaml:12:32: error: expected a layer index from 0 to 1 (the base has 2 layers), "
        "got '2' at models.review.adapt.lora.layers[1]");
  CHECK(error_of(review("{bitfit: true}", "epochs: 1, optimizer: {lr: 0}")) ==
        "scion.yaml:13:55: error: expected a learning rate greater than 0 and at most 10, got "
        "'0' at models.review.train.optimizer.lr");
  CHECK(error_of(review("{bitfit: true}", "epochs: 1, optimizer: {lr: -0.1}")) ==
        "scion.yaml:13:55: error: expected a learning rate greater than 0 and at most 10, got "
        "'-0.1' at models.review.train.optimizer.lr");
  CHECK(error_of("models:\n"
                 "  base:\n"
                 "    architecture: {layers: 2, width: 16, heads: 3, max_length: 32}\n"
                 "    import: corpus.txt\n") ==
        "scion.yaml:3:49: error: heads (3) must divide width (16) at "
        "models.base.architecture.heads; choose a head count that divides the width");
  CHECK(error_of(review("{bitfit: true}", "epochs: 1, steps: 3")) ==
        "scion.yaml:13:36: error: expected exactly one of 'steps' or 'epochs' at "
        "models.review.train.epochs");
}

TEST_CASE("duplicate names and duplicate keys") {
  CHECK(error_of(with_model(
            "  base: {from: base, adapt: {bitfit: true}, train: {data: reviews, steps: 1}}\n")) ==
        "scion.yaml:10:3: error: duplicate model name 'base' at models.base; names must be "
        "unique");
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {bitfit: true}\n"
                            "    train: {data: reviews, epochs: 1, epochs: 2}\n")) ==
        "scion.yaml:13:39: error: duplicate key 'epochs' at models.review.train.epochs; each "
        "key may appear once");
}

TEST_CASE("a model name that could name a file is refused where it is defined") {
  const std::string rule =
      "; names are 1 to 128 ASCII letters, digits, '.', '_' or '-', start with a letter or a "
      "digit, and contain no '..'";
  const std::string model_body =
      ": {from: base, adapt: {bitfit: true}, train: {data: reviews, steps: 1}}\n";
  CHECK(error_of(with_model("  ../../escaped" + model_body)) ==
        "scion.yaml:10:3: error: model name '../../escaped' starts with '.' at models" + rule +
            " \u2014 rename it, e.g. 'escaped'");
  CHECK(error_of(with_model("  /tmp/escaped" + model_body)) ==
        "scion.yaml:10:3: error: model name '/tmp/escaped' starts with '/' at models" + rule +
            " \u2014 rename it, e.g. 'tmp-escaped'");
  CHECK(error_of(with_model("  a/../../b" + model_body)) ==
        "scion.yaml:10:3: error: model name 'a/../../b' contains '/' at models" + rule +
            " \u2014 rename it, e.g. 'a-b'");
  CHECK(error_of(with_model("  v1..2" + model_body)) ==
        "scion.yaml:10:3: error: model name 'v1..2' contains '..' at models" + rule +
            " \u2014 rename it, e.g. 'v1.2'");
  CHECK(error_of(with_model("  \"caf\u00e9\"" + model_body)) ==
        "scion.yaml:10:3: error: model name 'caf\u00e9' contains byte 0xc3 (only ASCII is "
        "allowed) at models" +
            rule + " \u2014 rename it, e.g. 'caf'");
}

TEST_CASE("a name over 128 characters is refused, shown shortened") {
  // A plain key over 1024 characters is invalid YAML; an explicit key ("? ") may be longer.
  const std::string long_name(10000, 'a');
  const std::string error = error_of(
      with_model("  ? " + long_name +
                 "\n  : {from: base, adapt: {bitfit: true}, train: {data: reviews, steps: 1}}\n"));
  CHECK(error.starts_with("scion.yaml:10:5: error: model name '" + std::string(40, 'a') +
                          "...' is 10000 characters long (at most 128) at models; names are"));
  CHECK(error.ends_with(" \u2014 rename it, e.g. '" + std::string(128, 'a') + "'"));
  CHECK(errors_of(with_model("  " + std::string(128, 'a') +
                             ": {from: base, adapt: {bitfit: true}, train: {data: reviews, "
                             "steps: 1}}\n"))
            .empty());
}

TEST_CASE("datasets, shares, tests, assertions and lexicons follow the same naming rule") {
  const std::string two_models =
      "  a: {from: base, adapt: {head: {}}, train: {data: reviews, epochs: 1}}\n"
      "  b: {from: base, adapt: {head: {}}, train: {data: reviews, epochs: 1}}\n";
  const auto errors = errors_of(
      "datasets:\n"
      "  ../reviews:\n"
      "    path: reviews.jsonl\n"
      "    labels: [negative, positive]\n"
      "  reviews:\n"
      "    path: reviews.jsonl\n"
      "    labels: [negative, positive]\n"
      "  corpus: {path: corpus.txt}\n"
      "models:\n"
      "  base:\n"
      "    architecture: {layers: 2, width: 16, heads: 4, max_length: 32}\n"
      "    train: {data: corpus, steps: 10}\n" +
      two_models +
      "share:\n"
      "  .heads: {models: [a, b], modules: ['head.$model.*']}\n"
      "lexicons:\n"
      "  \"adj ective\": [good, great]\n"
      "tests:\n"
      "  -vocab: {type: mft, capability: Vocabulary, models: [a], template: \"it was good\", "
      "expect: positive}\n"
      "assertions:\n"
      "  \"sure?\": {kind: low_confidence, models: [b], threshold: 0.6}\n");
  REQUIRE(errors.size() == 5);
  CHECK(errors[0].starts_with(
      "scion.yaml:2:3: error: dataset name '../reviews' starts with '.' at datasets;"));
  CHECK(errors[1].starts_with(
      "scion.yaml:16:3: error: share name '.heads' starts with '.' at share;"));
  CHECK(errors[2].starts_with(
      "scion.yaml:18:3: error: lexicon name 'adj ective' contains a space at lexicons;"));
  CHECK(errors[3].starts_with(
      "scion.yaml:20:3: error: test name '-vocab' starts with '-' at tests;"));
  CHECK(errors[4].starts_with(
      "scion.yaml:22:3: error: assertion name 'sure?' contains '?' at assertions;"));
}

TEST_CASE("a missing data file is an error at its key") {
  CHECK(error_of("datasets:\n  d: {path: nowhere.jsonl}\nmodels: {}\n")
            .starts_with("scion.yaml:2:13: error: file 'nowhere.jsonl' not found (looked for "));
}

TEST_CASE("classification needs labels that match the data") {
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {head: {labels: [pos, neg]}}\n"
                            "    train: {data: reviews, epochs: 1}\n")) ==
        "scion.yaml:13:12: error: dataset 'reviews' has labels [negative, positive] but the "
        "head outputs [pos, neg] at models.review.train.data; list the same labels in the "
        "same order");
  CHECK(
      error_of(with_model("  review:\n"
                          "    from: base\n"
                          "    adapt: {lora: {rank: 2}}\n"
                          "    train: {data: reviews, epochs: 1, objective: classification}\n")) ==
      "scion.yaml:13:12: error: objective classification needs a head at "
      "models.review.train.objective; add adapt: {head: {}} to this model");
}

TEST_CASE("every error in a spec is reported, in file order") {
  const auto errors = errors_of(
      with_model("  r1: {from: base, adapt: {lora: {rank: 0}}, train: {data: reviews, epochs: 1}}\n"
                 "  r2: {from: base, adapt: {bitfit: yes}, train: {data: nope, epochs: 1}}\n"));
  REQUIRE(errors.size() == 3);
  CHECK(errors[0].starts_with("scion.yaml:10:41: error: expected an integer from 1 to 16"));
  CHECK(errors[1].starts_with("scion.yaml:11:36: error: expected true, false or {}, got 'yes'"));
  CHECK(errors[2].starts_with("scion.yaml:11:56: error: unknown dataset 'nope'"));
}

TEST_CASE("shares that make two training units wait for each other are a cycle") {
  // p -> a, a ~ b, b -> c, c ~ p: a's unit waits for p's, and p's for b's.
  CHECK(error_of(with_model(
            "  p: {from: base, adapt: {lora: {rank: 2}}, train: {data: reviews, steps: 1}}\n"
            "  b: {from: base, adapt: {lora: {rank: 2}}, train: {data: reviews, steps: 1}}\n"
            "  a: {from: p, adapt: {lora: {rank: 2}}, train: {data: reviews, steps: 1}}\n"
            "  c: {from: b, adapt: {lora: {rank: 2}}, train: {data: reviews, steps: 1}}\n"
            "share:\n"
            "  ab: {models: [a, b], modules: ['blk.*.lora.$model.*']}\n"
            "  cp: {models: [c, p], modules: ['blk.*.lora.$model.*']}\n")) ==
        "scion.yaml:16:7: error: cycle through 'from' and 'share': 'a' is adapted from 'p'; 'a' "
        "trains with 'b'; 'c' is adapted from 'b'; 'c' trains with 'p' at share.cp.models; models "
        "that share modules train together, after the parents of all of them, so none of them "
        "may descend from a model that trains with another");
}

TEST_CASE("a quoted number says that it is a quoted string") {
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {lora: {rank: \"8\"}, head: {}}\n"
                            "    train: {data: reviews, epochs: 1}\n")) ==
        "scion.yaml:12:26: error: expected an integer from 1 to 16 (the base's width), got '8' "
        "at models.review.adapt.lora.rank; the value is a quoted string; write 8 without quotes");
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {head: {}}\n"
                            "    train: {data: reviews, epochs: 1, optimizer: {lr: '0.01'}}\n"))
            .ends_with("the value is a quoted string; write 0.01 without quotes"));
  // Out of range without the quotes too: no such advice.
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {lora: {rank: \"99\"}, head: {}}\n"
                            "    train: {data: reviews, epochs: 1}\n"))
            .ends_with("got '99' at models.review.adapt.lora.rank"));
}

TEST_CASE("a tab in indentation is reported at the tab") {
  CHECK(error_of("models:\n  base:\n\tarchitecture: {layers: 2}\n") ==
        "scion.yaml:3:1: error: invalid YAML: tab character in indentation; indent with spaces");
  CHECK(error_of("models:\n  base:\n    x: 1\n  \tb: 2\n") ==
        "scion.yaml:4:3: error: invalid YAML: tab character in indentation; indent with spaces");
}

TEST_CASE("a line that breaks its mapping's indentation is reported at that line (#40)") {
  // Shallower than its siblings, lining up with no key above it.
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "   adapt: {head: {}}\n"
                            "    train: {data: reviews, epochs: 1}\n")) ==
        "scion.yaml:12:1: error: invalid YAML: this line is indented 3 spaces, which lines up "
        "with no key above it (they are at 2 and 4 spaces); indent it as the keys it belongs "
        "with");
  // A key with only an anchor opens a mapping below it like a bare key.
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    train: &recipe\n"
                            "      data: reviews\n"
                            "      epochs: 1\n"
                            "   adapt: {head: {}}\n"
                            "  other: {from: base}\n")) ==
        "scion.yaml:15:1: error: invalid YAML: this line is indented 3 spaces, which lines up "
        "with no key above it (they are at 2 and 4 spaces); indent it as the keys it belongs "
        "with");
  // Deeper than a line that already has its value.
  CHECK_THAT(error_of("models:\n"
                      "  base:\n"
                      "    architecture: {layers: 2, width: 16, heads: 4}\n"
                      "      train: {data: x, steps: 1}\n"
                      "  other: {from: base}\n"),
             Catch::StartsWith("scion.yaml:4:1: error: invalid YAML: this line is indented 6 "
                               "spaces, deeper than the line above, which already has its value"));
}

TEST_CASE("an unclosed flow collection is reported where it opened") {
  CHECK(error_of("models:\n"
                 "  base:\n"
                 "    freeze: [a, b\n"
                 "    train: {data: x, steps: 1}\n") ==
        "scion.yaml:3:13: error: invalid YAML: the flow list opened here with '[' is never "
        "closed; add ']' where it ends");
  CHECK(error_of("models:\n"
                 "  base:\n"
                 "    architecture: {layers: 2, width: 8\n"
                 "    train: 3\n") ==
        "scion.yaml:3:19: error: invalid YAML: the flow mapping opened here with '{' is never "
        "closed; add '}' where it ends");
  // Brackets inside quotes and comments do not count.
  CHECK(error_of("models:  # [not a list\n"
                 "  base:\n"
                 "    freeze: ['[x', {a: \"{\"}, [b\n") ==
        "scion.yaml:3:30: error: invalid YAML: the flow list opened here with '[' is never "
        "closed; add ']' where it ends");
}

TEST_CASE("prompt virtual tokens and train.max_length must fit the base's max_length") {
  // The base's max_length is 32.
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {prompt: {virtual_tokens: 8}, head: {}}\n"
                            "    train: {data: reviews, epochs: 1, max_length: 30}\n")) ==
        "scion.yaml:13:51: error: 8 prompt virtual tokens plus train.max_length 30 exceed the "
        "base's max_length 32 at models.review.train.max_length; set train.max_length to at most "
        "24");
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {prompt: {virtual_tokens: 8}, head: {}}\n"
                            "    train: {data: reviews, epochs: 1}\n")) ==
        "scion.yaml:13:12: error: 8 prompt virtual tokens plus train.max_length 32 (the base's, "
        "as it is not set) exceed the base's max_length 32 at models.review.train; set "
        "train.max_length to at most 24");
  // A descendant inherits its parent's prompt tokens.
  CHECK(error_of(with_model("  review:\n"
                            "    from: base\n"
                            "    adapt: {prompt: {virtual_tokens: 8}, head: {}}\n"
                            "    train: {data: reviews, epochs: 1, max_length: 24}\n"
                            "  deeper:\n"
                            "    from: review\n"
                            "    adapt: {prompt: {virtual_tokens: 4}}\n"
                            "    train: {data: reviews, epochs: 1, max_length: 24}\n")) ==
        "scion.yaml:17:51: error: 12 prompt virtual tokens plus train.max_length 24 exceed the "
        "base's max_length 32 at models.deeper.train.max_length; set train.max_length to at most "
        "20");
  CHECK(errors_of(with_model("  review:\n"
                             "    from: base\n"
                             "    adapt: {prompt: {virtual_tokens: 8}, head: {}}\n"
                             "    train: {data: reviews, epochs: 1, max_length: 24}\n"))
            .empty());
}

TEST_CASE("a descendant without a head on labelled data warns that it ignores the labels") {
  TempWorkspace ws;
  const LoadResult r =
      ws.load(with_model("  review:\n"
                         "    from: base\n"
                         "    adapt: {lora: {rank: 2}}\n"
                         "    train: {data: reviews, epochs: 1}\n"
                         "  said:\n"
                         "    from: base\n"
                         "    adapt: {lora: {rank: 2}}\n"
                         "    train: {data: reviews, epochs: 1, objective: mlm}\n"
                         "  headed:\n"
                         "    from: base\n"
                         "    adapt: {head: {}}\n"
                         "    train: {data: reviews, epochs: 1}\n"));
  CHECK(r.errors.empty());
  CHECK(r.workspace.has_value());
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].where() == "scion.yaml:13:12");
  CHECK(r.warnings[0].message ==
        "'review' has no classification head (of its own or an "
        "ancestor's), so it trains with objective mlm (masked language model) on dataset "
        "'reviews' and ignores its labels at models.review.train; add adapt: {head: {}} to train "
        "a classifier, or write objective: mlm to keep this");
}

TEST_CASE("a spec with errors keeps the datasets and tests without errors for later checks") {
  TempWorkspace ws;
  const LoadResult r = ws.load(std::string(kPrefix) +
                               "  review: {from: base, adapt: {lora: {rank: \"2\"}}, train: {data: "
                               "reviews, epochs: 1}}\n"
                               "  broken: {from: nowhere, adapt: {bitfit: true}, train: {data: "
                               "reviews, epochs: 1}}\n"
                               "tests:\n"
                               "  good: {type: mft, capability: Vocabulary, inputs: [x], expect: "
                               "{label: positive}}\n"
                               "  bad: {type: mft}\n");
  CHECK(!r.workspace);
  REQUIRE(r.partial);
  CHECK(r.partial->datasets.size() == 2);
  CHECK(r.partial->models.empty());
  REQUIRE(r.partial->tests.size() == 1);
  CHECK(r.partial->tests[0].name == "good");
  CHECK(r.partial->tests[0].body_locations.at("tests.good.expect.label").line == 13);
}

TEST_CASE("DoRA is refused in bf16 and over an ancestor's LoRA on the same linear") {
  const std::string bf16 =
      error_of(with_model("  review:\n"
                          "    from: base\n"
                          "    adapt: {lora: {rank: 2, use_dora: true}, head: {}}\n"
                          "    train: {data: reviews, epochs: 1, precision: bf16}\n"));
  CHECK(bf16.find("models.review.adapt.lora.use_dora") != std::string::npos);
  CHECK(bf16.find("fp32 only") != std::string::npos);
  const std::string stacked =
      error_of(with_model("  review:\n"
                          "    from: base\n"
                          "    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}\n"
                          "    train: {data: reviews, epochs: 1}\n"
                          "  again:\n"
                          "    from: review\n"
                          "    adapt: {lora: {rank: 2, targets: [v], use_dora: true}}\n"
                          "    train: {data: reviews, epochs: 1}\n"));
  CHECK(stacked.find("DoRA on target 'v', which the LoRA of ancestor 'review' already adapts") !=
        std::string::npos);
  // Other targets of the same layers are fine.
  CHECK(errors_of(with_model("  review:\n"
                             "    from: base\n"
                             "    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}\n"
                             "    train: {data: reviews, epochs: 1}\n"
                             "  again:\n"
                             "    from: review\n"
                             "    adapt: {lora: {rank: 2, targets: [k], use_dora: true}}\n"
                             "    train: {data: reviews, epochs: 1}\n"))
            .empty());
  // So is the same target on other layers.
  CHECK(errors_of(with_model("  review:\n"
                             "    from: base\n"
                             "    adapt: {lora: {rank: 2, targets: [v], layers: [0]}, head: {}}\n"
                             "    train: {data: reviews, epochs: 1}\n"
                             "  again:\n"
                             "    from: review\n"
                             "    adapt:\n"
                             "      lora: {rank: 2, targets: [v], layers: [1], use_dora: true}\n"
                             "    train: {data: reviews, epochs: 1}\n"))
            .empty());
}

TEST_CASE("(IA)³ settings: unknown and doubled linears, empty lists, overlaps with LoRA") {
  const auto ia3_model = [](const std::string& adapt) {
    return with_model(
        "  review:\n"
        "    from: base\n"
        "    adapt: " +
        adapt +
        "\n"
        "    train: {data: reviews, epochs: 1}\n");
  };
  const std::string unknown = error_of(ia3_model("{ia3: {targets: [k, value]}, head: {}}"));
  CHECK(unknown.find("models.review.adapt.ia3.targets[1]") != std::string::npos);
  CHECK(unknown.find("unknown (IA)³ linear layer 'value'") != std::string::npos);
  const std::string twice = error_of(ia3_model("{ia3: {feedforward: [ffn_out, ffn_out]}}"));
  CHECK(twice.find("models.review.adapt.ia3.feedforward[1]") != std::string::npos);
  CHECK(twice.find("listed twice") != std::string::npos);
  const std::string empty = error_of(ia3_model("{ia3: {targets: [], feedforward: []}}"));
  CHECK(empty.find("models.review.adapt.ia3") != std::string::npos);
  CHECK(empty.find("at least one linear layer in targets or feedforward") != std::string::npos);
  const std::string both = error_of(ia3_model("{ia3: {targets: [k, ffn_out]}}"));
  CHECK(both.find("models.review.adapt.ia3.feedforward") != std::string::npos);
  CHECK(both.find("'ffn_out' is in both targets") != std::string::npos);
  const std::string gate = error_of(ia3_model("{ia3: {feedforward: [ffn_gate]}}"));
  CHECK(gate.find("gate of a gated FFN") != std::string::npos);
  const std::string own = error_of(ia3_model("{ia3: {}, lora: {rank: 2, targets: [v]}}"));
  CHECK(own.find("models.review.adapt.ia3") != std::string::npos);
  CHECK(own.find("(IA)³ on linear 'v' of layer 0, which its own LoRA already adapts") !=
        std::string::npos);
  const std::string over =
      error_of(with_model("  review:\n"
                          "    from: base\n"
                          "    adapt: {ia3: {layers: [1]}, head: {}}\n"
                          "    train: {data: reviews, epochs: 1}\n"
                          "  again:\n"
                          "    from: review\n"
                          "    adapt: {lora: {rank: 2, targets: [k]}}\n"
                          "    train: {data: reviews, epochs: 1}\n"));
  CHECK(over.find("models.again.adapt.lora") != std::string::npos);
  CHECK(over.find("LoRA on linear 'k' of layer 1, which the (IA)³ of ancestor 'review'") !=
        std::string::npos);
  // Only targets, or other linears than an ancestor's LoRA: fine.
  CHECK(errors_of(ia3_model("{ia3: {targets: [k], feedforward: []}, lora: {rank: 2, targets: "
                            "[q]}, head: {}}"))
            .empty());
}

TEST_CASE("a typo gives one error, without the errors and warnings it would cause (#40)") {
  SECTION("a misspelt from: does not also warn that the model has no head") {
    TempWorkspace ws;
    const LoadResult r =
        ws.load(with_model("  headed:\n"
                           "    from: base\n"
                           "    adapt: {head: {}}\n"
                           "    train: {data: reviews, epochs: 1}\n"
                           "  child:\n"
                           "    from: haeded\n"
                           "    adapt: {lora: {rank: 2}}\n"
                           "    train: {data: reviews, epochs: 1}\n"));
    REQUIRE(r.errors.size() == 1);
    CHECK_THAT(r.errors[0].to_string(), Catch::Contains("did you mean 'headed'"));
    CHECK(r.warnings.empty());
  }
  SECTION("a misspelt head task does not also check the data against the default task") {
    std::string yaml = with_model(
        "  rater:\n"
        "    from: base\n"
        "    adapt: {head: {task: regresion}}\n"
        "    train: {data: stars, epochs: 1}\n");
    const std::string corpus = "  corpus: {path: corpus.txt}\n";
    yaml.replace(yaml.find(corpus), corpus.size(),
                 corpus + "  stars: {path: reviews.jsonl, label_type: number, label_field: s}\n");
    CHECK_THAT(error_of(yaml), Catch::Contains("did you mean 'regression'"));
  }
}

TEST_CASE("PEFT's and transformers' keys get scion's spelling (#40)") {
  const auto lora_with = [](const std::string& body) {
    return with_model(
        "  tuned:\n"
        "    from: base\n"
        "    adapt: {lora: {rank: 2, " +
        body +
        "}}\n"
        "    train: {data: corpus, epochs: 1}\n");
  };
  CHECK_THAT(
      error_of(lora_with("target_modules: [query, value]")),
      Catch::Contains("unknown key 'target_modules' at models.tuned.adapt.lora.target_modules; "
                      "target_modules is PEFT's key: write targets: [q, v]"));
  CHECK_THAT(error_of(lora_with("target_modules: [c_attn]")),
             Catch::Contains("write targets: [q, k, v]"));
  CHECK_THAT(error_of(lora_with("target_modules: [q, value]")),
             Catch::Contains("write targets: [q, v]"));
  CHECK_THAT(error_of(lora_with("targets: [q_proj, v]")),
             Catch::Contains("'q_proj' is a Hugging Face module name: scion calls it q"));
  CHECK_THAT(error_of(lora_with("lora_alpha: 16")), Catch::Contains("write alpha: 16"));
  const auto train_with = [](const std::string& body) {
    return with_model(
        "  tuned:\n"
        "    from: base\n"
        "    adapt: {lora: {rank: 2}}\n"
        "    train: {data: corpus, epochs: 1, " +
        body + "}\n");
  };
  for (const char* key : {"lr", "learning_rate"})
    CHECK_THAT(error_of(train_with(std::string(key) + ": 0.001")),
               Catch::Contains("the learning rate is optimizer.lr: write optimizer: {lr: 0.001}"));
}
