// Test support for the Llama-shaped decoders (Llama, Qwen2, Mistral) imported from the
// checked-in folders of tests/python/make_hf_fixtures.py: the folder as a base "base"
// (optionally with a LoRA descendant "lora" on q and v), its weights filled from the
// checkpoint through the architecture's name table, and the parity check of its logits
// against transformers' at every real position.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lineage/dtype.h"
#include "lineage/env.h"
#include "lineage/hf_checkpoint.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/backend.h"
#include "runtime/model/model_weights.h"
#include "runtime/model/optimizer.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/transformer.h"
#include "spec/hf_model_folder.h"

namespace scion::test {

class DecoderFamily {
 public:
  // `edit` changes the architecture config.json gave before the model is built (a test
  // of what one setting does); the checkpoint must still fit it.
  explicit DecoderFamily(const std::filesystem::path& folder, bool with_lora = false,
                         void (*edit)(spec::Architecture&) = nullptr)
      : backend_(runtime::make_cpu_backend()), store_(*backend_) {
    auto read = spec::read_hf_model_folder(folder, folder.string());
    REQUIRE(read.is_ok());
    spec::Model base;
    base.name = "base";
    base.architecture = read->architecture;
    if (edit) edit(*base.architecture);
    base.import_path = folder.string();
    ws_.models.push_back(base);
    if (with_lora) {
      spec::Model lora;
      lora.name = "lora";
      lora.from = "base";
      lora.adaptation.set(spec::LoraSpec{
          .rank = 4, .alpha = 8.0f, .dropout = 0.0f, .targets = {"q", "v"}, .layers = {}});
      ws_.models.push_back(lora);
    }
    fill_base(folder);
    if (with_lora) {
      params_["lora"] = store_.add_model(ws_, ws_.models[1]).value();
      runtime::initialize_new_parameters(*backend_, ws_, ws_.models[1], params_["lora"], 3);
    }
  }

  const spec::Workspace& workspace() const { return ws_; }
  const spec::Architecture& architecture() const { return *ws_.models[0].architecture; }
  runtime::Backend& backend() { return *backend_; }
  const runtime::ParameterBinding& params(const std::string& model) { return params_.at(model); }

 private:
  // Every trunk parameter from the checkpoint, each tensor used exactly once.
  void fill_base(const std::filesystem::path& folder) {
    auto checkpoint =
        lineage::read_hf_checkpoint(lineage::default_env(), folder, architecture().hf_model_type);
    REQUIRE(checkpoint.is_ok());
    INFO((checkpoint->problems.empty() ? "" : checkpoint->problems.front()));
    REQUIRE(checkpoint->problems.empty());
    params_["base"] = store_.add_model(ws_, ws_.models[0]).value();
    std::map<std::string, const lineage::SafetensorsTensor*> by_name;
    for (const auto& t : checkpoint->contents.tensors) by_name[t.name] = &t;
    for (const auto& p : runtime::parameter_table(ws_, ws_.models[0])) {
      INFO(p.name);
      auto it = by_name.find(p.name);
      REQUIRE(it != by_name.end());
      REQUIRE(it->second->shape == p.shape);
      const std::vector<float> values = lineage::to_float32(it->second->dtype, it->second->bytes);
      std::copy(values.begin(), values.end(), params_["base"].find(p.name)->f32());
      by_name.erase(it);
    }
    CHECK(by_name.empty());
  }

  spec::Workspace ws_;
  std::unique_ptr<runtime::Backend> backend_;
  runtime::ParameterStore store_;
  std::map<std::string, runtime::ParameterBinding> params_;
};

// Right-padded (B, T) tokens and lengths of rows of ids.
struct Rows {
  std::vector<std::int32_t> tokens, lengths;
  int B = 0, T = 0;
  explicit Rows(const std::vector<std::vector<std::int32_t>>& rows) {
    B = static_cast<int>(rows.size());
    for (const auto& r : rows) T = std::max<int>(T, static_cast<int>(r.size()));
    tokens.assign(static_cast<std::size_t>(B) * T, 0);
    for (int b = 0; b < B; ++b) {
      std::copy(rows[b].begin(), rows[b].end(),
                tokens.begin() + static_cast<std::ptrdiff_t>(b) * T);
      lengths.push_back(static_cast<std::int32_t>(rows[b].size()));
    }
  }
};

// The base's logits on rows of ids: (B, T, V) floats, padded positions included.
inline std::vector<float> base_logits(DecoderFamily& family, const Rows& rows) {
  auto w = runtime::resolve_model(family.workspace(), family.workspace().models[0],
                                  spec::Objective::kCausalLm, family.params("base"), nullptr);
  REQUIRE(w.is_ok());
  runtime::SegmentedTransformer net(family.backend());
  runtime::FamilyBatch batch{
      {{&*w, rows.B, rows.T, rows.tokens.data(), rows.lengths.data(), nullptr, 0}}, false};
  auto out = net.forward(batch);
  REQUIRE(out.is_ok());
  const runtime::Tensor& logits = out->at(0).logits;
  return {logits.f32(), logits.f32() + static_cast<std::size_t>(rows.B) * rows.T *
                                           family.architecture().vocab_size};
}

struct LogitComparison {
  double worst = 0;          // the largest |scion - transformers|
  std::size_t compared = 0;  // logits compared: every real position's V
};

// The base's logits against `expected` ({"ids": rows, "logits": [row][position][V]}) at
// every real position.
inline LogitComparison compare_logits(DecoderFamily& family, const nlohmann::json& expected) {
  const Rows rows(expected["ids"].get<std::vector<std::vector<std::int32_t>>>());
  const std::vector<float> logits = base_logits(family, rows);
  const int V = family.architecture().vocab_size;
  LogitComparison c;
  for (int b = 0; b < rows.B; ++b)
    for (int t = 0; t < rows.lengths[b]; ++t)
      for (int v = 0; v < V; ++v) {
        const double want = expected["logits"][b][t][v].get<double>();
        const double got = logits[(static_cast<std::size_t>(b) * rows.T + t) * V + v];
        c.worst = std::max(c.worst, std::abs(got - want));
        ++c.compared;
      }
  return c;
}

// Trains the family's "lora" as a causal LM for `steps` AdamW steps (lr 1e-2) on one fixed
// batch of 4 sequences of 10 tokens (next-token targets, the last position ignored); its
// parameters are trained in place. The loss of each step, in order.
inline std::vector<float> train_lora(DecoderFamily& family, int steps) {
  const spec::Workspace& ws = family.workspace();
  const spec::Model& lora = ws.models.at(1);
  const auto table = runtime::parameter_table(ws, lora);
  auto grads = runtime::GradientSet::create(table, family.backend(), "lora");
  REQUIRE(grads.is_ok());
  auto w = runtime::resolve_model(ws, lora, spec::Objective::kCausalLm, family.params("lora"),
                                  &grads->binding());
  REQUIRE(w.is_ok());
  spec::OptimizerSpec adam;
  adam.lr = 1e-2f;
  auto optimizer = runtime::Optimizer::create(
      family.backend(), adam,
      runtime::trainable_tensors(table, family.params("lora"), grads->binding()), "'lora'");
  REQUIRE(optimizer.is_ok());
  const Rows rows({{1, 45, 200, 7, 88, 130, 7, 3, 64, 99},
                   {1, 5, 250, 33, 17, 222, 9, 9, 9, 9},
                   {1, 140, 60, 60, 140, 60, 60, 140, 60, 2},
                   {1, 8, 16, 32, 64, 128, 8, 16, 32, 64}});
  std::vector<std::int32_t> targets(rows.tokens.size(), -100);
  for (int b = 0; b < rows.B; ++b)
    for (int t = 0; t + 1 < rows.T; ++t)
      targets[static_cast<std::size_t>(b) * rows.T + t] =
          rows.tokens[static_cast<std::size_t>(b) * rows.T + t + 1];
  runtime::SegmentedTransformer net(family.backend());
  runtime::FamilyBatch batch{
      {{&*w, rows.B, rows.T, rows.tokens.data(), rows.lengths.data(), targets.data(), 7}}, true};
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    auto out = net.forward(batch);
    REQUIRE(out.is_ok());
    losses.push_back(out->at(0).loss);
    grads->zero();
    REQUIRE(net.backward().is_ok());
    (*optimizer)->step(adam.lr);
  }
  return losses;
}

}  // namespace scion::test
