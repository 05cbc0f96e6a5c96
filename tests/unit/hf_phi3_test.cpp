// Phi-3 against a fixture transformers 4.44.2 produced once (transformers 4.40.2 has no
// Phi-3; tests/python/make_hf_fixtures.py, group "phi3"; checked in, so no Python runs
// here):
//   - the name table splits the fused qkv_proj into q, k, v and gate_up_proj into the
//     gate and up (in that order), and names each part's fused tensor back;
//   - config.json: what scion refuses by name (grouped-query attention through the fused
//     qkv_proj, su/longrope rope_scaling, residual dropout);
//   - a random tiny Phi3ForCausalLM folder: scion's logits equal transformers' within 1e-4
//     at every real position, and LoRA on q and v trains it as a causal LM.
#include <catch2/catch.hpp>
#include <string>

#include "lineage/hf_tensor_names.h"
#include "tests/unit/hf_decoder_family.h"
#include "tests/unit/hf_fixtures.h"

using namespace scion;
using namespace scion::test;

namespace {

// The error a tiny phi3 config.json with `extra` members gives.
std::string phi3_refusal(const std::string& extra) {
  const std::string text = R"({"model_type": "phi3", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 8, "intermediate_size": 96, "vocab_size": 300)" +
                           extra + "}";
  auto a = spec::hf_config_architecture(text, "config.json");
  REQUIRE_FALSE(a.is_ok());
  CHECK(a.status().code() == StatusCode::kSpecError);
  return a.status().message();
}

}  // namespace

TEST_CASE("Phi-3's name table splits qkv_proj and gate_up_proj into equal parts") {
  using lineage::HfTensorMapping;
  auto qkv = lineage::map_hf_tensor("phi3", "model.layers.1.self_attn.qkv_proj.weight");
  CHECK(qkv.kind == HfTensorMapping::Kind::kParameter);
  CHECK(qkv.fused == std::vector<std::string>{"blk.1.attn_q.weight", "blk.1.attn_k.weight",
                                              "blk.1.attn_v.weight"});
  CHECK_FALSE(qkv.conv1d);
  // Phi3MLP: gate, up = gate_up_proj(x).chunk(2): the gate's rows come first.
  CHECK(lineage::map_hf_tensor("phi3", "model.layers.0.mlp.gate_up_proj.weight").fused ==
        std::vector<std::string>{"blk.0.ffn_gate.weight", "blk.0.ffn_in.weight"});
  CHECK(lineage::hf_tensor_name("phi3", "blk.0.ffn_in.weight") ==
        "model.layers.0.mlp.gate_up_proj.weight");
  CHECK(lineage::hf_tensor_name("phi3", "blk.0.attn_o.weight") ==
        "model.layers.0.self_attn.o_proj.weight");
  CHECK(lineage::map_hf_tensor("phi3", "model.layers.0.self_attn.q_proj.weight").kind ==
        HfTensorMapping::Kind::kUnknown);
}

TEST_CASE("config.json of Phi-3: what scion refuses by name") {
  CHECK(phi3_refusal(R"(, "num_key_value_heads": 2)").find("num_key_value_heads 2 differs") !=
        std::string::npos);
  CHECK(phi3_refusal(
            R"(, "rope_scaling": {"type": "su", "short_factor": [1.0], "long_factor": [1.0]})")
            .find("rope_scaling type 'su' is not supported for phi3") != std::string::npos);
  CHECK(phi3_refusal(R"(, "rope_scaling": {"type": "longrope"})")
            .find("rope_scaling type 'longrope'") != std::string::npos);
  CHECK(phi3_refusal(R"(, "resid_pdrop": 0.1)").find("resid_pdrop is 0.1") != std::string::npos);
}

TEST_CASE("a tiny Phi3ForCausalLM folder imports, matches transformers within 1e-4 and trains") {
  const nlohmann::json expected = read_json(kFixtures / "tiny-phi3-expected.json");
  DecoderFamily family(kFixtures / "tiny-phi3");
  const spec::Architecture& a = family.architecture();
  CHECK(a.hf_model_type == "phi3");
  CHECK(a.gated_ffn());
  CHECK(a.sliding_window == 0);  // null in the fixture's config.json
  const LogitComparison c = compare_logits(family, expected["tiny-phi3"]);
  INFO("largest difference " << c.worst << " over " << c.compared << " logits");
  CHECK(c.compared == static_cast<std::size_t>(12 + 7 + 4) * a.vocab_size);
  CHECK(c.worst < kTolerance);

  DecoderFamily tuned(kFixtures / "tiny-phi3", /*with_lora=*/true);
  const std::vector<float> losses = train_lora(tuned, 30);
  INFO("loss " << losses.front() << " -> " << losses.back());
  // As for Llama (hf_llama_test.cpp): near ln 272 ≈ 5.6 at first, well below 70% after.
  CHECK(losses.front() > 3.0f);
  CHECK(losses.back() < 0.7f * losses.front());
}
