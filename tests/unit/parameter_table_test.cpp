#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/model/parameter_table.h"

#include <catch2/catch.hpp>
#include <map>

#include "runtime/adapters/lora/lora_spec.h"

using namespace scion;

namespace {

spec::Workspace small_family() {
  spec::Workspace ws;
  spec::Model base;
  base.name = "base";
  base.architecture = spec::Architecture{};
  base.architecture->layers = 2;
  base.architecture->width = 8;
  base.architecture->heads = 2;
  base.architecture->ffn_width = 32;
  base.architecture->max_length = 16;
  ws.models.push_back(base);

  spec::Model lora;
  lora.name = "review";
  lora.from = "base";
  lora.adaptation.set(spec::LoraSpec{.rank = 4, .targets = {"q", "ffn_in"}, .layers = {1}});
  lora.adaptation.head = spec::HeadSpec{.labels = {"neg", "pos"}};
  ws.models.push_back(lora);

  spec::Model child;
  child.name = "tweets";
  child.from = "review";
  child.adaptation.bitfit = spec::BitfitSpec{};
  child.adaptation.set(spec::LoraSpec{.rank = 2, .targets = {"q"}, .layers = {1}});
  child.freeze = {"blk.0.*"};
  ws.models.push_back(child);
  return ws;
}

std::map<std::string, runtime::ParameterSpec> by_name(const std::vector<runtime::ParameterSpec>& t) {
  std::map<std::string, runtime::ParameterSpec> m;
  for (const auto& p : t) m[p.name] = p;
  return m;
}

}  // namespace

TEST_CASE("a base model trains its whole trunk") {
  const auto ws = small_family();
  const auto table = runtime::parameter_table(ws, ws.models[0]);
  std::int64_t total = 0;
  for (const auto& p : table) {
    CHECK(p.trainable);
    CHECK(p.introduced_by == "base");
    total += p.numel();
  }
  // tok 260*8 (the byte vocabulary) + pos 16*8 + 2 layers * (4*(64+8) + 2*(32*8) + 32 + 8 + 4*8) + ln_f 16
  CHECK(total == 2080 + 128 + 2 * (288 + 512 + 40 + 32) + 16);
}

TEST_CASE("a LoRA descendant trains only its adapters and head") {
  const auto ws = small_family();
  const auto t = by_name(runtime::parameter_table(ws, ws.models[1]));
  REQUIRE(t.count("blk.1.attn_q.lora.review.a"));
  CHECK(t.at("blk.1.attn_q.lora.review.a").shape == std::vector<std::int64_t>{4, 8});
  CHECK(t.at("blk.1.ffn_in.lora.review.b").shape == std::vector<std::int64_t>{32, 4});
  CHECK(t.at("head.review.weight").shape == std::vector<std::int64_t>{2, 8});
  CHECK_FALSE(t.count("blk.0.attn_q.lora.review.a"));
  CHECK_FALSE(t.at("blk.0.attn_q.weight").trainable);
  CHECK(t.at("blk.0.attn_q.weight").introduced_by == "base");
  CHECK(t.at("head.review.bias").trainable);
}

TEST_CASE("a descendant of a descendant keeps its parent's adapters frozen") {
  const auto ws = small_family();
  const auto t = by_name(runtime::parameter_table(ws, ws.models[2]));
  CHECK_FALSE(t.at("blk.1.attn_q.lora.review.a").trainable);
  CHECK(t.at("blk.1.attn_q.lora.review.a").introduced_by == "review");
  CHECK(t.at("blk.1.attn_q.lora.tweets.a").trainable);
  // BitFit trains biases, but the freeze glob wins for layer 0.
  CHECK(t.at("blk.1.attn_q.bias").trainable);
  CHECK(t.at("blk.1.attn_q.bias").introduced_by == "tweets");
  CHECK_FALSE(t.at("blk.0.attn_q.bias").trainable);
  CHECK(t.at("blk.0.attn_q.bias").introduced_by == "base");
  CHECK_FALSE(t.at("blk.1.attn_q.weight").trainable);
}

TEST_CASE("BitFit trains the trunk's biases, not an ancestor's adapter or head biases") {
  auto ws = small_family();
  ws.models[1].adaptation.set(spec::BottleneckSpec{.reduction = 2});
  const auto t = by_name(runtime::parameter_table(ws, ws.models[2]));
  CHECK(t.at("blk.1.ffn_in.bias").trainable);
  CHECK_FALSE(t.at("head.review.bias").trainable);
  CHECK_FALSE(t.at("blk.1.adapter_ffn.review.up.bias").trainable);
  CHECK(t.at("blk.1.adapter_ffn.review.up.bias").introduced_by == "review");
}
