// Checks that use the parameter table: shared module shapes and freeze globs.
#include <catch2/catch.hpp>

#include "spec_test_workspace.h"
#include "workbench/parameter_checks.h"

using namespace scion::spec;
using scion::spec::testing::kPrefix;
using scion::spec::testing::TempWorkspace;

namespace {

std::vector<std::string> checked_errors(const std::string& yaml) {
  TempWorkspace ws;
  LoadResult r = ws.load(yaml);
  REQUIRE(r.errors.empty());
  scion::workbench::check_parameters(r);
  CHECK(r.workspace.has_value() == r.errors.empty());
  std::vector<std::string> out;
  for (const Diagnostic& d : r.errors) out.push_back(d.to_string());
  return out;
}

}  // namespace

TEST_CASE("modules shared between models with the same shapes pass") {
  CHECK(checked_errors(
            std::string(kPrefix) +
            "  a: {from: base, adapt: {lora: {rank: 2}, head: {}}, train: {data: reviews, epochs: "
            "1}}\n"
            "  b: {from: base, adapt: {lora: {rank: 2}, head: {}}, train: {data: reviews, epochs: "
            "1}}\n"
            "share:\n"
            "  adapters: {models: [a, b], modules: ['blk.*.lora.$model.*', 'head.$model.*']}\n")
            .empty());
}

TEST_CASE("shared modules whose shapes differ are an error naming both shapes") {
  const auto errors = checked_errors(
      std::string(kPrefix) +
      "  a: {from: base, adapt: {lora: {rank: 2, layers: [0]}}, train: {data: corpus, epochs: 1}}\n"
      "  b: {from: base, adapt: {lora: {rank: 4, layers: [0]}}, train: {data: corpus, epochs: 1}}\n"
      "share:\n"
      "  adapters: {models: [a, b], modules: ['blk.0.attn_q.lora.$model.a']}\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "scion.yaml:13:3: error: share 'adapters': 'blk.0.attn_q.lora.$model.a' has shape (2, "
        "16) in 'a' but (4, 16) in 'b' at share.adapters.modules; shared modules must have the "
        "same shape");
}

TEST_CASE("a share glob that matches nothing in a model is an error") {
  const auto errors =
      checked_errors(std::string(kPrefix) +
                     "  a: {from: base, adapt: {head: {}}, train: {data: reviews, epochs: 1}}\n"
                     "  b: {from: base, adapt: {bitfit: true}, train: {data: corpus, epochs: 1}}\n"
                     "share:\n"
                     "  heads: {models: [a, b], modules: ['head.$model.*']}\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "scion.yaml:13:3: error: share 'heads': modules [head.$model.*] match no "
        "parameter of 'b' at share.heads.modules");
}

TEST_CASE("a freeze glob that matches no parameter is an error") {
  const auto errors = checked_errors(std::string(kPrefix) +
                                     "  a: {from: base, adapt: {full: true}, freeze: ['blk.7.*'], "
                                     "train: {data: corpus, epochs: 1}}\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "scion.yaml:10:3: error: freeze glob 'blk.7.*' matches no parameter of 'a' "
        "at models.a.freeze[0] (names look like blk.0.attn_q.weight; `scion plan "
        "--json` lists them)");
}

TEST_CASE("only a model's own adapters and heads can be shared, between trainable descendants") {
  SECTION("an inherited trunk parameter") {
    const auto errors = checked_errors(
        std::string(kPrefix) +
        "  a: {from: base, adapt: {lora: {rank: 2}}, train: {data: corpus, epochs: 1}}\n"
        "  b: {from: base, adapt: {lora: {rank: 2}}, train: {data: corpus, epochs: 1}}\n"
        "share:\n"
        "  trunk: {models: [a, b], modules: ['blk.0.attn_q.weight']}\n");
    REQUIRE(errors.size() == 2);
    CHECK(errors[0] ==
          "scion.yaml:13:3: error: share 'trunk': 'blk.0.attn_q.weight' of 'a' is an inherited "
          "parameter at share.trunk.modules; only a model's own adapters, prefixes, prompts and "
          "heads can be shared");
  }
  SECTION("a model that retrains its trunk") {
    const auto errors = checked_errors(
        std::string(kPrefix) +
        "  a: {from: base, adapt: {bitfit: true, head: {}}, train: {data: reviews, epochs: 1}}\n"
        "  b: {from: base, adapt: {head: {}}, train: {data: reviews, epochs: 1}}\n"
        "share:\n"
        "  heads: {models: [a, b], modules: ['head.$model.*']}\n");
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] ==
          "scion.yaml:13:3: error: share 'heads': 'a' retrains 'blk.0.ln1.bias' of its trunk, "
          "so it cannot train co-batched with the others at share.heads.models; share only "
          "between models whose trunk stays frozen");
  }
  SECTION("members that step differently") {
    const auto errors =
        checked_errors(std::string(kPrefix) +
                       "  a: {from: base, adapt: {head: {}}, train: {data: reviews, epochs: 1}}\n"
                       "  b: {from: base, adapt: {head: {}}, train: {data: reviews, epochs: 1, "
                       "grad_accumulation: 2}}\n"
                       "share:\n"
                       "  heads: {models: [a, b], modules: ['head.$model.*']}\n");
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] ==
          "scion.yaml:13:3: error: share 'heads': 'b' accumulates 2 micro-batches a step but 'a' 1 "
          "at share.heads.models; models that share modules take their steps together, so give "
          "them the same train.grad_accumulation");
  }
}
