// EvaluationPlan::shard (the ranks' shares cover the plan once, in order), FamilyOutputs::
// merge, and the wire form the ranks send to rank 0 (every float and double exactly,
// NaN too).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "workbench/sharded_evaluation.h"

using namespace scion;

namespace {

workbench::EvaluationPlan sample_plan() {
  workbench::EvaluationPlan plan;
  for (const char* text : {"a", "b", "c", "d", "e"}) plan.add_text(text);
  plan.add_continuation("x", " one", "spec:1");
  plan.add_continuation("x", " two", "spec:2");
  plan.add_continuation("y", " one", "spec:3");  // " one" keeps its first origin
  plan.add_continuation("y", " three", "spec:4");
  return plan;
}

}  // namespace

TEST_CASE("the ranks' shares hold every text and query once, in order") {
  const workbench::EvaluationPlan plan = sample_plan();
  for (int ranks : {1, 2, 3, 7}) {
    std::vector<std::string> texts;
    std::vector<std::pair<std::string, std::string>> queries;
    for (int rank = 0; rank < ranks; ++rank) {
      const workbench::EvaluationPlan shard = plan.shard(rank, ranks);
      texts.insert(texts.end(), shard.texts().begin(), shard.texts().end());
      for (const runtime::ContinuationQuery& q : shard.queries()) {
        queries.emplace_back(q.input, q.continuation);
        CHECK(shard.continuation_origins().at(q.continuation) ==
              plan.continuation_origins().at(q.continuation));
      }
    }
    CHECK(texts == plan.texts());
    REQUIRE(queries.size() == plan.queries().size());
    for (std::size_t i = 0; i < queries.size(); ++i) {
      CHECK(queries[i].first == plan.queries()[i].input);
      CHECK(queries[i].second == plan.queries()[i].continuation);
    }
  }
  // Two ranks: the first two texts and queries on rank 0, the rest on rank 1.
  CHECK(plan.shard(0, 2).texts() == std::vector<std::string>{"a", "b"});
  CHECK(plan.shard(1, 2).texts() == std::vector<std::string>{"c", "d", "e"});
  CHECK(plan.shard(1, 2).queries().front().input == "y");
}

TEST_CASE("shards' outputs sent as bytes and merged equal the whole pass's") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  workbench::FamilyOutputs first, second;
  first.of("clf")["a"] = {.labels = {"neg", "pos"}, .probabilities = {0.1f, 0.9f}};
  second.of("clf")["b"] = {.labels = {"neg", "pos"}, .probabilities = {nan, 1.0f / 3.0f}};
  first.of("lm")["x"].continuation_logprobs[" one"] = -1.0 / 3.0;
  first.of("lm")["x"].continuation_tokens[" one"] = 1;
  second.of("lm")["x"].continuation_logprobs[" two"] = -std::numeric_limits<double>::infinity();
  second.of("lm")["x"].continuation_tokens[" two"] = 2;

  workbench::FamilyOutputs merged;
  for (const workbench::FamilyOutputs* shard : {&first, &second}) {
    auto decoded = workbench::decode_outputs(workbench::encode_outputs(*shard));
    REQUIRE(decoded.is_ok());
    merged.merge(std::move(*decoded));
  }
  CHECK(merged.at("clf", "a").probabilities == std::vector<float>{0.1f, 0.9f});
  CHECK(merged.at("clf", "a").labels == std::vector<std::string>{"neg", "pos"});
  CHECK(std::isnan(merged.at("clf", "b").probabilities[0]));
  CHECK(merged.at("clf", "b").probabilities[1] == 1.0f / 3.0f);
  CHECK(merged.at("lm", "x").continuation_logprobs.at(" one") == -1.0 / 3.0);
  CHECK(std::isinf(merged.at("lm", "x").continuation_logprobs.at(" two")));
  CHECK(merged.at("lm", "x").continuation_tokens.at(" two") == 2);
}

TEST_CASE("bytes that are not a rank's outputs are a corruption error") {
  auto decoded = workbench::decode_outputs("not cbor at all");
  REQUIRE_FALSE(decoded.is_ok());
  CHECK(decoded.status().code() == StatusCode::kCorruption);
}
