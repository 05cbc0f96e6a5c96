// Llama-family interop against fixtures `transformers` produced once
// (tests/python/make_hf_fixtures.py; checked in, so no Python runs here):
//   - a random tiny LlamaForCausalLM folder (grouped-query attention, untied head) and its
//     tied, multi-query, linearly scaled RoPE variant import by their name table, and
//     scion's logits equal transformers' within 1e-4 at every real position;
//   - LoRA on q and v (PEFT's q_proj/v_proj) fine-tunes the imported model as a causal
//     LM: the loss falls, and the trained model is committed to a lineage store and
//     loads back with the values it trained.
// Token ids are given directly: the Llama tokenizer (byte-level BPE) is not used here.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "lineage/dtype.h"
#include "lineage/env.h"
#include "lineage/hf_checkpoint.h"
#include "lineage/hf_tensor_names.h"
#include "lineage/store.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/backend.h"
#include "runtime/model/model_weights.h"
#include "runtime/model/optimizer.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/transformer.h"
#include "spec/hf_model_folder.h"
#include "tests/unit/hf_fixtures.h"
#include "tests/unit/lineage_test_support.h"

using namespace scion;
using namespace scion::test;
namespace fs = std::filesystem;

namespace {

// An imported Llama folder as base "base", optionally with a LoRA descendant "lora" on
// q and v, its weights filled from the checkpoint through the name table.
class LlamaFamily {
 public:
  explicit LlamaFamily(const fs::path& folder, bool with_lora = false)
      : backend_(runtime::make_cpu_backend()), store_(*backend_) {
    auto read = spec::read_hf_model_folder(folder, folder.string());
    REQUIRE(read.is_ok());
    spec::Model base;
    base.name = "base";
    base.architecture = read->architecture;
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
    auto checkpoint = lineage::read_hf_checkpoint(lineage::default_env(), folder, "llama");
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
      std::copy(rows[b].begin(), rows[b].end(), tokens.begin() + static_cast<std::ptrdiff_t>(b) * T);
      lengths.push_back(static_cast<std::int32_t>(rows[b].size()));
    }
  }
};

}  // namespace

TEST_CASE("the Llama name table maps both ways and skips rotary buffers") {
  using lineage::HfTensorMapping;
  auto mapped = lineage::map_hf_tensor("llama", "model.layers.3.mlp.gate_proj.weight");
  CHECK(mapped.kind == HfTensorMapping::Kind::kParameter);
  CHECK(mapped.scion_name == "blk.3.ffn_gate.weight");
  // A LlamaModel saved without the causal-LM wrapper.
  CHECK(lineage::map_hf_tensor("llama", "layers.0.self_attn.k_proj.weight").scion_name ==
        "blk.0.attn_k.weight");
  CHECK(lineage::map_hf_tensor("llama", "model.layers.0.self_attn.rotary_emb.inv_freq").kind ==
        HfTensorMapping::Kind::kSkipped);
  CHECK(lineage::map_hf_tensor("llama", "model.layers.0.self_attn.q_proj.bias").kind ==
        HfTensorMapping::Kind::kUnknown);
  CHECK(lineage::hf_tensor_name("llama", "blk.1.attn_v.weight") ==
        "model.layers.1.self_attn.v_proj.weight");
  CHECK(lineage::hf_tensor_name("llama", "lm_head.weight") == "lm_head.weight");
}

TEST_CASE("tiny LlamaForCausalLM folders import and match transformers within 1e-4") {
  const nlohmann::json expected = read_json(kFixtures / "tiny-llama-expected.json");
  for (const char* name : {"tiny-llama", "tiny-llama-tied"}) {
    SECTION(name) {
      LlamaFamily family(kFixtures / name);
      const spec::Architecture& a = family.architecture();
      CHECK(a.kind == spec::ArchitectureKind::kDecoder);
      CHECK(a.norm_kind == spec::NormKind::kRmsNorm);
      CHECK(a.positions == spec::PositionKind::kRotary);
      CHECK(a.gated_ffn());
      CHECK(a.kv_heads == (std::string(name) == "tiny-llama" ? 2 : 1));
      CHECK(a.tie_embeddings == (std::string(name) == "tiny-llama-tied"));
      CHECK(a.rope_scale == (std::string(name) == "tiny-llama" ? 1.0f : 2.0f));
      CHECK(a.tokenizer.kind == spec::TokenizerKind::kBpe);

      const auto& cases = expected[name];
      const Rows rows(cases["ids"].get<std::vector<std::vector<std::int32_t>>>());
      auto w = runtime::resolve_model(family.workspace(), family.workspace().models[0],
                                      spec::Objective::kCausalLm, family.params("base"), nullptr);
      REQUIRE(w.is_ok());
      runtime::SegmentedTransformer net(family.backend());
      runtime::FamilyBatch batch{
          {{&*w, rows.B, rows.T, rows.tokens.data(), rows.lengths.data(), nullptr, 0}}, false};
      auto out = net.forward(batch);
      REQUIRE(out.is_ok());
      const runtime::Tensor& logits = out->at(0).logits;
      const int V = a.vocab_size;
      double worst = 0;
      std::size_t compared = 0;
      for (int b = 0; b < rows.B; ++b)
        for (int t = 0; t < rows.lengths[b]; ++t)
          for (int v = 0; v < V; ++v) {
            const double want = cases["logits"][b][t][v].get<double>();
            const double got = logits.f32()[(static_cast<std::size_t>(b) * rows.T + t) * V + v];
            worst = std::max(worst, std::abs(got - want));
            ++compared;
          }
      INFO(name << ": largest difference " << worst << " over " << compared << " logits");
      CHECK(compared == static_cast<std::size_t>(12 + 7 + 4) * V);
      CHECK(worst < kTolerance);
    }
  }
}

TEST_CASE("LoRA on q and v fine-tunes an imported Llama as a causal LM and is stored") {
  LlamaFamily family(kFixtures / "tiny-llama", /*with_lora=*/true);
  const spec::Workspace& ws = family.workspace();
  const spec::Model& lora = ws.models[1];
  const auto table = runtime::parameter_table(ws, lora);
  int trainable = 0;
  for (const auto& p : table) {
    if (!p.trainable) continue;
    ++trainable;
    INFO(p.name);
    CHECK((p.name.find(".attn_q.lora.lora.") != std::string::npos ||
           p.name.find(".attn_v.lora.lora.") != std::string::npos));
  }
  CHECK(trainable == 2 * 2 * 2);  // layers × {q, v} × {A, B}
  // attn_v's LoRA B is (key/value width, r): grouped-query attention's narrower output.
  CHECK(family.params("lora").find("blk.0.attn_v.lora.lora.b")->shape ==
        std::vector<std::int64_t>{16, 4});

  auto grads = runtime::GradientSet::create(table, family.backend(), "lora");
  REQUIRE(grads.is_ok());
  auto w = runtime::resolve_model(ws, lora, spec::Objective::kCausalLm, family.params("lora"),
                                  &grads->binding());
  REQUIRE(w.is_ok());
  spec::OptimizerSpec adam;
  adam.lr = 1e-2f;
  auto optimizer = runtime::Optimizer::create(
      family.backend(), adam, runtime::trainable_tensors(table, family.params("lora"), grads->binding()),
      "'lora'");
  REQUIRE(optimizer.is_ok());

  // A fixed batch of 4 sequences: next-token targets, one ignored position at the end.
  const Rows rows({{1, 45, 200, 7, 88, 130, 7, 3, 64, 99},
                   {1, 5, 250, 33, 17, 222, 9, 9, 9, 9},
                   {1, 140, 60, 60, 140, 60, 60, 140, 60, 2},
                   {1, 8, 16, 32, 64, 128, 8, 16, 32, 64}});
  std::vector<std::int32_t> targets(rows.tokens.size(), -100);
  for (int b = 0; b < rows.B; ++b)
    for (int t = 0; t + 1 < rows.T; ++t)
      targets[static_cast<std::size_t>(b) * rows.T + t] = rows.tokens[static_cast<std::size_t>(b) * rows.T + t + 1];
  runtime::SegmentedTransformer net(family.backend());
  runtime::FamilyBatch batch{
      {{&*w, rows.B, rows.T, rows.tokens.data(), rows.lengths.data(), targets.data(), 7}}, true};
  std::vector<float> losses;
  for (int step = 0; step < 30; ++step) {
    auto out = net.forward(batch);
    REQUIRE(out.is_ok());
    losses.push_back(out->at(0).loss);
    grads->zero();
    REQUIRE(net.backward().is_ok());
    (*optimizer)->step(adam.lr);
  }
  INFO("loss " << losses.front() << " -> " << losses.back());
  // A fresh LoRA (B = 0) starts at the random base's loss (about 6, above ln 272 ≈ 5.6);
  // 30 AdamW steps on one batch cut it by about half (6.16 -> 3.34 when written), so a
  // loss that does not fall below 70% of its start means training does not work.
  CHECK(losses.front() > 3.0f);
  CHECK(losses.back() < 0.7f * losses.front());

  // Store the trained model (its own parameters) and load it back.
  lineage::testing::TempDir dir;
  auto store = lineage::LineageStore::open(dir.path());
  REQUIRE(store.is_ok());
  lineage::ModelRecord base_record{"base", "", std::string(64, 'b'), nlohmann::json::object(),
                                   nlohmann::json::object()};
  lineage::ModelRecord record{"lora", "base", std::string(64, 'c'), nlohmann::json::object(),
                              nlohmann::json::object()};
  std::vector<lineage::ParameterWrite> writes;
  for (const auto& p : table) {
    const runtime::Tensor& view = *family.params("lora").find(p.name);
    writes.push_back({p.name, lineage::DType::kF32, p.shape,
                      std::span<const std::byte>(static_cast<const std::byte*>(view.data), view.bytes()),
                      p.trainable, p.introduced_by});
  }
  auto base_run = (*store)->start_run(base_record, {lineage::RunKind::kImport, base_record.recipe_hash, {}, 0, {}});
  REQUIRE(base_run.is_ok());
  std::vector<lineage::ParameterWrite> base_writes;
  for (const auto& wr : writes)
    if (!wr.trainable) base_writes.push_back(wr);
  REQUIRE((*store)->commit_model(*base_run, base_record, base_writes).is_ok());
  auto run = (*store)->start_run(record, {lineage::RunKind::kTrain, record.recipe_hash, {}, 1, {}});
  REQUIRE(run.is_ok());
  REQUIRE((*store)->commit_model(*run, record, writes).is_ok());
  auto loaded = (*store)->load_parameters("lora");
  REQUIRE(loaded.is_ok());
  int matched = 0;
  for (const auto& p : table) {
    if (!p.trainable) continue;
    INFO(p.name);
    const runtime::Tensor& view = *family.params("lora").find(p.name);
    auto it = loaded->find(p.name);
    REQUIRE(it != loaded->end());
    REQUIRE(it->second.bytes.size() == view.bytes());
    CHECK(std::memcmp(it->second.bytes.data(), view.data, view.bytes()) == 0);
    ++matched;
  }
  CHECK(matched == trainable);
}
