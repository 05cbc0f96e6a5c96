// Qwen2 and Mistral against fixtures transformers 4.40.2 produced once
// (tests/python/make_hf_fixtures.py, group "decoders"; checked in, so no Python runs here):
//   - config.json: Qwen2's q/k/v biases, Mistral's sliding window (null: none, absent:
//     transformers' 4096), and the keys scion refuses by name;
//   - the name tables (Qwen2's biases on q_proj, k_proj and v_proj only);
//   - random tiny Qwen2ForCausalLM (untied; tied with a key/value head per query head) and
//     MistralForCausalLM (sliding_window 3, shorter than two of the rows) folders: scion's
//     logits equal transformers' within 1e-4 at every real position, and the window is
//     what makes Mistral's match (without it the positions past the window differ);
//   - LoRA on q and v trains each as a causal LM: the loss falls.
#include <catch2/catch.hpp>
#include <string>

#include "lineage/hf_tensor_names.h"
#include "tests/unit/hf_decoder_family.h"
#include "tests/unit/hf_fixtures.h"

using namespace scion;
using namespace scion::test;

namespace {

// A tiny config.json of `model_type` with `extra` members ("" or `, "key": value`); 32
// heads, so that Qwen2Config's default of 32 key/value heads and Mistral's 8 divide them.
std::string config_text(const std::string& model_type, const std::string& extra) {
  return R"({"model_type": ")" + model_type +
         R"(", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 32,
             "intermediate_size": 96, "vocab_size": 300)" +
         extra + "}";
}

spec::Architecture architecture_of(const std::string& model_type, const std::string& extra) {
  auto a = spec::hf_config_architecture(config_text(model_type, extra), "config.json");
  INFO((a.is_ok() ? "" : a.status().message()));
  REQUIRE(a.is_ok());
  return *a;
}

// The error config.json gives; it must name `key`.
std::string refusal(const std::string& model_type, const std::string& extra) {
  auto a = spec::hf_config_architecture(config_text(model_type, extra), "config.json");
  REQUIRE_FALSE(a.is_ok());
  CHECK(a.status().code() == StatusCode::kSpecError);
  return a.status().message();
}

bool has_parameter(const DecoderFamily& family, const std::string& name) {
  for (const auto& p : runtime::parameter_table(family.workspace(), family.workspace().models[0]))
    if (p.name == name) return true;
  return false;
}

}  // namespace

TEST_CASE("Qwen2's name table adds q, k and v biases to Llama's; Mistral's is Llama's") {
  using lineage::HfTensorMapping;
  auto bias = lineage::map_hf_tensor("qwen2", "model.layers.1.self_attn.k_proj.bias");
  CHECK(bias.kind == HfTensorMapping::Kind::kParameter);
  CHECK(bias.scion_name == "blk.1.attn_k.bias");
  CHECK(lineage::map_hf_tensor("qwen2", "model.layers.0.self_attn.o_proj.bias").kind ==
        HfTensorMapping::Kind::kUnknown);
  CHECK(lineage::map_hf_tensor("qwen2", "layers.0.mlp.up_proj.weight").scion_name ==
        "blk.0.ffn_in.weight");
  CHECK(lineage::hf_tensor_name("qwen2", "blk.0.attn_q.bias") ==
        "model.layers.0.self_attn.q_proj.bias");
  CHECK(lineage::map_hf_tensor("mistral", "model.layers.2.mlp.gate_proj.weight").scion_name ==
        "blk.2.ffn_gate.weight");
  CHECK(lineage::map_hf_tensor("mistral", "model.layers.0.self_attn.q_proj.bias").kind ==
        HfTensorMapping::Kind::kUnknown);
  CHECK(lineage::map_hf_tensor("mistral", "model.layers.0.self_attn.rotary_emb.inv_freq").kind ==
        HfTensorMapping::Kind::kSkipped);
}

TEST_CASE("config.json of Qwen2 and Mistral: what scion honours and what it refuses by name") {
  const spec::Architecture qwen2 = architecture_of("qwen2", "");
  CHECK(qwen2.qkv_bias);
  CHECK_FALSE(qwen2.linear_bias);
  CHECK(qwen2.sliding_window == 0);
  CHECK(qwen2.max_length == 32768);  // Qwen2Config's default
  CHECK(architecture_of("qwen2", R"(, "use_sliding_window": false, "sliding_window": 8)")
            .sliding_window == 0);
  CHECK(refusal("qwen2", R"(, "use_sliding_window": true)").find("use_sliding_window is true") !=
        std::string::npos);
  CHECK(refusal("qwen2", R"(, "rope_scaling": {"type": "linear", "factor": 2.0})")
            .find("rope_scaling type 'linear' is not supported for qwen2") != std::string::npos);

  const spec::Architecture mistral = architecture_of("mistral", "");
  CHECK_FALSE(mistral.qkv_bias);
  CHECK(mistral.sliding_window == 4096);  // MistralConfig's default
  CHECK(mistral.kv_heads == 8);           // likewise
  CHECK(architecture_of("mistral", R"(, "sliding_window": null)").sliding_window == 0);
  CHECK(architecture_of("mistral", R"(, "sliding_window": 5)").sliding_window == 5);
  CHECK(refusal("mistral", R"(, "sliding_window": 0)").find("sliding_window") != std::string::npos);
  CHECK(refusal("mistral", R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0})")
            .find("rope_scaling type 'yarn' is not supported for mistral") != std::string::npos);
  CHECK(refusal("mistral", R"(, "head_dim": 8)").find("head_dim 8") != std::string::npos);
  CHECK(refusal("mistral", R"(, "hidden_act": "gelu")").find("hidden_act 'gelu'") !=
        std::string::npos);
}

TEST_CASE("tiny Qwen2 and Mistral folders import and match transformers within 1e-4") {
  const nlohmann::json expected = read_json(kFixtures / "tiny-decoders-expected.json");
  for (const char* name : {"tiny-qwen2", "tiny-qwen2-tied", "tiny-mistral"}) {
    SECTION(name) {
      DecoderFamily family(kFixtures / name);
      const spec::Architecture& a = family.architecture();
      const bool qwen2 = std::string(name).starts_with("tiny-qwen2");
      CHECK(a.hf_model_type == (qwen2 ? "qwen2" : "mistral"));
      CHECK(a.tie_embeddings == (std::string(name) == "tiny-qwen2-tied"));
      CHECK(a.sliding_window == (qwen2 ? 0 : 3));
      // Biases on q, k and v only (Qwen2), none on Mistral.
      CHECK(has_parameter(family, "blk.1.attn_v.bias") == qwen2);
      CHECK_FALSE(has_parameter(family, "blk.1.attn_o.bias"));
      CHECK_FALSE(has_parameter(family, "blk.1.ffn_in.bias"));

      const LogitComparison c = compare_logits(family, expected[name]);
      INFO(name << ": largest difference " << c.worst << " over " << c.compared << " logits");
      CHECK(c.compared == static_cast<std::size_t>(12 + 7 + 4) * a.vocab_size);
      CHECK(c.worst < kTolerance);
    }
  }
}

TEST_CASE("Mistral's sliding window masks the keys more than sliding_window positions back") {
  const nlohmann::json expected =
      read_json(kFixtures / "tiny-decoders-expected.json")["tiny-mistral"];
  const Rows rows(expected["ids"].get<std::vector<std::vector<std::int32_t>>>());
  DecoderFamily unwindowed(kFixtures / "tiny-mistral", false,
                           [](spec::Architecture& a) { a.sliding_window = 0; });
  const std::vector<float> full = base_logits(unwindowed, rows);
  const int V = unwindowed.architecture().vocab_size;
  // Positions 0..3 see every earlier key either way (3 - 0 <= 3); from position 4 on the
  // window hides key 0, and transformers' logits (made with the window) differ from the
  // unwindowed ones by far more than the tolerance.
  for (int b = 0; b < rows.B; ++b)
    for (int t = 0; t < rows.lengths[b]; ++t) {
      double worst = 0;
      for (int v = 0; v < V; ++v)
        worst = std::max(worst, std::abs(full[(static_cast<std::size_t>(b) * rows.T + t) * V + v] -
                                         expected["logits"][b][t][v].get<double>()));
      INFO("row " << b << " position " << t << ": " << worst);
      if (t <= 3) CHECK(worst < kTolerance);
      if (t > 3) CHECK(worst > 1e-2);
    }
  // A window as long as the longest row (12 positions: 11 back) is no window at all.
  DecoderFamily wide(kFixtures / "tiny-mistral", false,
                     [](spec::Architecture& a) { a.sliding_window = 11; });
  CHECK(base_logits(wide, rows) == full);
}

TEST_CASE("LoRA on q and v fine-tunes an imported Qwen2 and Mistral as causal LMs") {
  for (const char* name : {"tiny-qwen2", "tiny-mistral"}) {
    SECTION(name) {
      DecoderFamily family(kFixtures / name, /*with_lora=*/true);
      const std::vector<float> losses = train_lora(family, 30);
      INFO(name << ": loss " << losses.front() << " -> " << losses.back());
      // As for Llama (hf_llama_test.cpp): a fresh LoRA starts at the random base's loss,
      // near ln 272 ≈ 5.6, and 30 AdamW steps on one batch cut it well below 70% of that.
      CHECK(losses.front() > 3.0f);
      CHECK(losses.back() < 0.7f * losses.front());
    }
  }
}
