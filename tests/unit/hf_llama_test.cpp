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

#include "lineage/hf_tensor_names.h"
#include "lineage/store.h"
#include "tests/unit/hf_decoder_family.h"
#include "tests/unit/hf_fixtures.h"
#include "tests/unit/lineage_test_support.h"

using namespace scion;
using namespace scion::test;
namespace fs = std::filesystem;

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
      DecoderFamily family(kFixtures / name);
      const spec::Architecture& a = family.architecture();
      CHECK(a.kind == spec::ArchitectureKind::kDecoder);
      CHECK(a.norm_kind == spec::NormKind::kRmsNorm);
      CHECK(a.positions == spec::PositionKind::kRotary);
      CHECK(a.gated_ffn());
      CHECK(a.kv_heads == (std::string(name) == "tiny-llama" ? 2 : 1));
      CHECK(a.tie_embeddings == (std::string(name) == "tiny-llama-tied"));
      CHECK(a.rope_scale == (std::string(name) == "tiny-llama" ? 1.0f : 2.0f));
      CHECK(a.tokenizer.kind == spec::TokenizerKind::kBpe);

      const LogitComparison c = compare_logits(family, expected[name]);
      INFO(name << ": largest difference " << c.worst << " over " << c.compared << " logits");
      CHECK(c.compared == static_cast<std::size_t>(12 + 7 + 4) * a.vocab_size);
      CHECK(c.worst < kTolerance);
    }
  }
}

TEST_CASE("LoRA on q and v fine-tunes an imported Llama as a causal LM and is stored") {
  DecoderFamily family(kFixtures / "tiny-llama", /*with_lora=*/true);
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

  const std::vector<float> losses = train_lora(family, 30);
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
