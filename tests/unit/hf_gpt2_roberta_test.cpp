// GPT-2 and RoBERTa folders against transformers' outputs produced once
// (tests/python/make_hf_bpe_fixtures.py; checked in, so no Python runs here): a random tiny
// GPT2LMHeadModel and RobertaModel (+ RobertaForSequenceClassification head) import by
// their name tables, tokenise with the byte-level BPE, and give transformers' logits
// within 1e-4.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lineage/hf_tensor_names.h"
#include "lineage/peft_adapter.h"
#include "spec/workspace.h"
#include "tests/unit/hf_fixtures.h"
#include "tests/unit/hf_model_support.h"
#include "tests/unit/lineage_test_support.h"

using namespace scion;
using namespace scion::test;
namespace fs = std::filesystem;

namespace {

// Rows of positions of values (texts of different lengths), flattened.
std::vector<double> flatten_3d(const nlohmann::json& texts) {
  std::vector<double> out;
  for (const auto& positions : texts)
    for (double v : flatten(positions)) out.push_back(v);
  return out;
}

std::vector<std::vector<std::int32_t>> ids_of(const nlohmann::json& expected) {
  return expected["ids"].get<std::vector<std::vector<std::int32_t>>>();
}

// (B, T, V) logits at the real positions of each row, flattened.
std::vector<float> real_positions(const std::vector<float>& logits,
                                  const std::vector<std::vector<std::int32_t>>& rows, int V) {
  std::size_t T = 0;
  for (const auto& r : rows) T = std::max(T, r.size());
  std::vector<float> out;
  for (std::size_t b = 0; b < rows.size(); ++b)
    for (std::size_t t = 0; t < rows[b].size(); ++t) {
      const auto* first = logits.data() + (b * T + t) * static_cast<std::size_t>(V);
      out.insert(out.end(), first, first + V);
    }
  return out;
}

}  // namespace

TEST_CASE("a tiny GPT2LMHeadModel folder imports and matches transformers within 1e-4", "[gpt2]") {
  const nlohmann::json expected = read_json(kFixtures / "tiny-gpt2-expected.json");
  test::HfBert gpt2(kFixtures / "tiny-gpt2");
  const spec::Architecture& a = gpt2.architecture();
  CHECK(a.kind == spec::ArchitectureKind::kDecoder);
  CHECK(a.norm == spec::NormPlacement::kPre);
  CHECK(a.activation == spec::Activation::kGeluTanh);
  CHECK(a.tokenizer.kind == spec::TokenizerKind::kBpe);
  CHECK(a.ffn_width == 4 * a.width);

  // The fixture frames each text as <|endoftext|> text, scion's [BOS] text.
  const auto texts = expected["texts"].get<std::vector<std::string>>();
  const auto rows = ids_of(expected);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    std::vector<std::int32_t> got{gpt2.tokenizer().special_tokens().cls};
    for (std::int32_t id : gpt2.tokenizer().encode(texts[i])) got.push_back(id);
    INFO(texts[i]);
    CHECK(got == rows[i]);
  }
  const std::vector<float> logits =
      real_positions(gpt2.run(rows, test::HfBert::Output::kTokenLogits), rows, a.vocab_size);
  const double worst = max_difference(logits, flatten_3d(expected["logits"]));
  INFO("GPT-2 logits: max |scion - transformers| = " << worst);
  CHECK(worst < kTolerance);
}

TEST_CASE("a tiny RobertaModel folder imports and matches transformers within 1e-4", "[roberta]") {
  const nlohmann::json expected = read_json(kFixtures / "tiny-roberta-expected.json");
  test::HfBert roberta(kFixtures / "tiny-roberta", 3);
  const spec::Architecture& a = roberta.architecture();
  CHECK(a.kind == spec::ArchitectureKind::kEncoder);
  CHECK(a.max_length == 40);  // max_position_embeddings 42 less padding_idx + 1
  CHECK(a.type_vocab_size == 1);
  CHECK(a.tokenizer.kind == spec::TokenizerKind::kBpe);

  const auto rows = ids_of(expected);
  CHECK(roberta.framed(expected["texts"].get<std::vector<std::string>>()) == rows);
  struct Case {
    const char* key;
    test::HfBert::Output output;
  };
  roberta.load_roberta_classifier(kFixtures / "tiny-roberta-classifier.safetensors");
  for (const Case& c : {Case{"cls_hidden", test::HfBert::Output::kClsHidden},
                        Case{"pooler_output", test::HfBert::Output::kPoolerOutput},
                        Case{"classifier_logits", test::HfBert::Output::kClassifierLogits}}) {
    const double worst = max_difference(roberta.run(rows, c.output), flatten(expected[c.key]));
    INFO("RoBERTa " << c.key << ": max |scion - transformers| = " << worst);
    CHECK(worst < kTolerance);
  }
  const std::vector<float> token_logits =
      real_positions(roberta.run(rows, test::HfBert::Output::kTokenLogits), rows, a.vocab_size);
  const double worst = max_difference(token_logits, flatten_3d(expected["token_logits"]));
  INFO("RoBERTa token logits: max |scion - transformers| = " << worst);
  CHECK(worst < kTolerance);
}

TEST_CASE("GPT-2 and RoBERTa name tables map both ways", "[gpt2][roberta]") {
  using Kind = lineage::HfTensorMapping::Kind;
  const auto qkv = lineage::map_hf_tensor("gpt2", "transformer.h.3.attn.c_attn.weight");
  CHECK(qkv.kind == Kind::kParameter);
  CHECK(qkv.conv1d);
  CHECK(qkv.fused == std::vector<std::string>{"blk.3.attn_q.weight", "blk.3.attn_k.weight",
                                              "blk.3.attn_v.weight"});
  CHECK_FALSE(lineage::map_hf_tensor("gpt2", "h.0.attn.c_attn.bias").conv1d);
  CHECK(lineage::map_hf_tensor("gpt2", "h.0.mlp.c_fc.weight").scion_name == "blk.0.ffn_in.weight");
  CHECK(lineage::map_hf_tensor("gpt2", "lm_head.weight").kind == Kind::kSkipped);
  CHECK(lineage::map_hf_tensor("gpt2", "h.0.attn.bias").kind == Kind::kSkipped);
  CHECK(lineage::map_hf_tensor("gpt2", "h.0.attn.c_proj.bias").kind == Kind::kParameter);
  CHECK(lineage::hf_tensor_name("gpt2", "blk.1.attn_v.weight") == "h.1.attn.c_attn.weight");
  CHECK(lineage::hf_tensor_name("gpt2", "ln_f.bias") == "ln_f.bias");
  CHECK(lineage::hf_base_model_prefix("gpt2") == "transformer.");

  const auto pos =
      lineage::map_hf_tensor("roberta", "roberta.embeddings.position_embeddings.weight");
  CHECK(pos.scion_name == "pos_emb.weight");
  CHECK(pos.position_rows);
  CHECK_FALSE(
      lineage::map_hf_tensor("bert", "embeddings.position_embeddings.weight").position_rows);
  CHECK(lineage::map_hf_tensor("roberta", "lm_head.dense.weight").kind == Kind::kSkipped);
  CHECK(lineage::hf_tensor_name("roberta", "blk.0.attn_q.weight") ==
        "encoder.layer.0.attention.self.query.weight");
}

// What a method's PEFT form (spec/peft_form.h) is told of GPT-2's modules: c_attn fuses q,
// k and v (so LoRA writes one c_attn adapter for its three), and the names PEFT matches.
TEST_CASE("GPT-2's PEFT layout gives c_attn's parts and the module names PEFT matches",
          "[gpt2]") {
  spec::Architecture a;
  a.hf_model_type = "gpt2";
  a.layers = 2;
  const auto layout = lineage::peft_layout(a);
  REQUIRE(layout);
  CHECK(layout->module_targets("k") == std::vector<std::string>{"q", "k", "v"});
  CHECK(layout->module_targets("o") == std::vector<std::string>{"o"});
  CHECK(layout->module_suffix("v") == "c_attn");
  CHECK(layout->module_suffix("o") == "attn.c_proj");  // mlp.c_proj ends in c_proj too
  CHECK(layout->linear_module(1, "q") == "transformer.h.1.attn.c_attn");
  CHECK(layout->linears_regex({"q", "ffn_out"}, {1}) ==
        "transformer\\.h\\.(1)\\.(attn\\.c_attn|mlp\\.c_proj)");

  const auto p = spec::linear_parameter("blk.12.attn_q.lora.m.1.a", ".lora.m.1.");
  REQUIRE(p);
  CHECK((p->layer == 12 && p->target == "q" && p->rest == "a"));
  CHECK(spec::linear_parameter("blk.0.ffn_out.ia3.m.out", ".ia3.m.")->target == "ffn_out");
  CHECK_FALSE(spec::linear_parameter("blk.x.attn_q.lora.m.a", ".lora.m."));
  CHECK_FALSE(spec::linear_parameter("head.m.weight", ".lora.m."));
}

TEST_CASE("a GPT-2 config scion does not run is refused, naming the key", "[gpt2]") {
  lineage::testing::TempDir dir;
  std::ofstream(dir.path() / "config.json")
      << R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 8, "n_head": 2, "vocab_size": 10,
             "scale_attn_by_inverse_layer_idx": true})";
  auto read = spec::read_hf_model_folder(dir.path(), dir.path().string());
  REQUIRE_FALSE(read.is_ok());
  CHECK(read.status().message().find("scale_attn_by_inverse_layer_idx") != std::string::npos);
  std::ofstream(dir.path() / "config.json")
      << R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 8, "n_head": 2, "vocab_size": 10,
             "activation_function": "relu"})";
  read = spec::read_hf_model_folder(dir.path(), dir.path().string());
  REQUIRE_FALSE(read.is_ok());
  CHECK(read.status().message().find("activation_function 'relu'") != std::string::npos);
}
