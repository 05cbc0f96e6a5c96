// Hugging Face interop against fixtures `transformers` and `tokenizers` produced once
// (tests/python/make_hf_fixtures.py; checked in, so no Python runs here):
//   - tokenizer.json WordPiece ids equal `tokenizers`' on a hostile corpus;
//   - a random tiny BertModel folder imports by its name table (the I64 position_ids
//     buffer skipped with a note) and scion's outputs equal transformers' within 1e-4.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "lineage/hf_tensor_names.h"
#include "lineage/peft_adapter.h"
#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "tests/unit/hf_fixtures.h"
#include "tests/unit/hf_model_support.h"
#include "tests/unit/lineage_test_support.h"

using namespace scion;
using namespace scion::test;
namespace fs = std::filesystem;

TEST_CASE("tokenizer.json WordPiece gives the ids of Hugging Face tokenizers") {
  const nlohmann::json golden = read_json(kFixtures / "tokenizer-golden.json");
  const auto texts = golden["texts"].get<std::vector<std::string>>();
  for (const auto& [file, all_ids] : golden["ids"].items()) {
    spec::TokenizerSpec spec{spec::TokenizerKind::kWordPiece, file};
    auto tokenizer = text::make_tokenizer(spec, kFixtures);
    REQUIRE(tokenizer.is_ok());
    const auto& specials = (*tokenizer)->special_tokens();
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const auto expected = all_ids[i].get<std::vector<std::int32_t>>();
      std::vector<std::int32_t> got{specials.cls};
      for (std::int32_t id : (*tokenizer)->encode(texts[i])) got.push_back(id);
      got.push_back(specials.sep);
      INFO(file << ": \"" << texts[i] << "\"");
      CHECK(got == expected);
    }
  }
}

TEST_CASE("a tokenizer.json scion cannot run exactly is refused, naming the key") {
  lineage::testing::TempDir dir;
  std::ofstream(dir.path() / "tokenizer.json")
      << R"({"model": {"type": "BPE", "vocab": {}}, "normalizer": null})";
  auto made = text::make_tokenizer({spec::TokenizerKind::kWordPiece, "tokenizer.json"}, dir.path());
  REQUIRE_FALSE(made.is_ok());
  CHECK(made.status().message().find("model.type is BPE") != std::string::npos);
}

TEST_CASE("a tiny BertModel folder imports and matches transformers within 1e-4") {
  const nlohmann::json expected = read_json(kFixtures / "tiny-bert-expected.json");
  const auto texts = expected["texts"].get<std::vector<std::string>>();
  const int labels = static_cast<int>(expected["classifier_logits"][0].size());
  test::HfBert bert(kFixtures / "tiny-bert", labels);
  bert.load_classifier(kFixtures / "tiny-bert-classifier.safetensors");

  const spec::Architecture& a = bert.architecture();
  CHECK(a.layers == 2);
  CHECK(a.width == 32);
  CHECK(a.norm == spec::NormPlacement::kPost);
  CHECK(a.activation == spec::Activation::kGeluErf);
  CHECK(a.norm_eps == 1e-12f);
  REQUIRE(bert.notes().size() == 1);
  CHECK(bert.notes()[0].find("embeddings.position_ids") != std::string::npos);

  const auto rows = bert.framed(texts);
  for (std::size_t b = 0; b < rows.size(); ++b)
    CHECK(rows[b] == expected["ids"][b].get<std::vector<std::int32_t>>());

  using Output = test::HfBert::Output;
  SECTION("[CLS] hidden states") {
    CHECK(max_difference(bert.run(rows, Output::kClsHidden), flatten(expected["cls_hidden"])) <
          kTolerance);
  }
  SECTION("pooler outputs") {
    CHECK(max_difference(bert.run(rows, Output::kPoolerOutput),
                         flatten(expected["pooler_output"])) < kTolerance);
  }
  SECTION("BertForSequenceClassification logits") {
    CHECK(max_difference(bert.run(rows, Output::kClassifierLogits),
                         flatten(expected["classifier_logits"])) < kTolerance);
  }
  SECTION("every real position's hidden state, through the word embeddings") {
    const std::vector<float> logits = bert.run(rows, Output::kTokenLogits);
    std::size_t T = 0;
    for (const auto& r : rows) T = std::max(T, r.size());
    const std::size_t V = static_cast<std::size_t>(a.vocab_size);
    double worst = 0;
    for (std::size_t b = 0; b < rows.size(); ++b)
      for (std::size_t t = 0; t < rows[b].size(); ++t)
        for (std::size_t v = 0; v < V; ++v)
          worst = std::max(worst, std::abs(logits[(b * T + t) * V + v] -
                                           expected["token_logits"][b][t][v].get<double>()));
    CHECK(worst < kTolerance);
  }
}

TEST_CASE("the BERT name table maps both ways and skips buffers and pretraining heads") {
  using Kind = lineage::HfTensorMapping::Kind;
  auto q = lineage::map_hf_tensor("bert", "encoder.layer.11.attention.self.query.weight");
  CHECK(q.kind == Kind::kParameter);
  CHECK(q.scion_name == "blk.11.attn_q.weight");
  CHECK(lineage::map_hf_tensor("bert", "bert.encoder.layer.0.output.LayerNorm.bias").scion_name ==
        "blk.0.ln2.bias");
  CHECK(lineage::map_hf_tensor("bert", "embeddings.position_ids").kind == Kind::kSkipped);
  CHECK(lineage::map_hf_tensor("bert", "cls.predictions.bias").kind == Kind::kSkipped);
  CHECK(lineage::map_hf_tensor("bert", "encoder.layer.x.output.dense.weight").kind ==
        Kind::kUnknown);
  CHECK(lineage::map_hf_tensor("bert", "classifier.weight").kind == Kind::kUnknown);
  CHECK(lineage::hf_tensor_name("bert", "blk.3.attn_v.bias") ==
        "encoder.layer.3.attention.self.value.bias");
  CHECK(lineage::hf_tensor_name("bert", "pooler.weight") == "pooler.dense.weight");
  CHECK_FALSE(lineage::hf_tensor_name("bert", "blk.0.attn_q.lora.m.a").has_value());
}

TEST_CASE("a folder of another model type, or without weights, is refused clearly") {
  lineage::testing::TempDir dir;
  std::ofstream(dir.path() / "config.json") << R"({"model_type": "t5", "num_layers": 2})";
  auto t5 = spec::read_hf_model_folder(dir.path(), dir.path().string());
  REQUIRE_FALSE(t5.is_ok());
  CHECK(t5.status().message().find("model_type 't5' is not supported") != std::string::npos);
  std::ofstream(dir.path() / "config.json")
      << R"({"model_type": "bert", "num_hidden_layers": 2, "hidden_size": 8,
             "num_attention_heads": 2, "intermediate_size": 16, "vocab_size": 10})";
  auto no_weights = spec::read_hf_model_folder(dir.path(), dir.path().string());
  REQUIRE_FALSE(no_weights.is_ok());
  CHECK(no_weights.status().message().find("neither model.safetensors") != std::string::npos);
  std::ofstream(dir.path() / "config.json")
      << R"({"model_type": "bert", "num_hidden_layers": 2, "hidden_size": 8,
             "num_attention_heads": 3, "intermediate_size": 16, "vocab_size": 10})";
  auto heads = spec::read_hf_model_folder(dir.path(), dir.path().string());
  REQUIRE_FALSE(heads.is_ok());
  CHECK(heads.status().message().find("does not divide") != std::string::npos);
}

namespace {

// The tiny BERT fixture as an imported base named "bert".
spec::Model tiny_bert_base() {
  auto folder = spec::read_hf_model_folder(kFixtures / "tiny-bert", "tiny-bert");
  REQUIRE(folder.is_ok());
  spec::Model base;
  base.name = "bert";
  base.architecture = folder->architecture;
  base.import_path = "/models/tiny-bert";
  return base;
}

// `model`'s parameter table as stored parameters without values: what the PEFT layout
// reads of them (names, shapes, owners).
lineage::LoadedParameters empty_parameters(const spec::Workspace& ws, const spec::Model& model) {
  lineage::LoadedParameters params;
  for (const auto& p : runtime::parameter_table(ws, model)) {
    lineage::LoadedParameter value;
    value.shape = p.shape;
    value.introduced_by = p.introduced_by;
    params[p.name] = value;
  }
  return params;
}

}  // namespace

TEST_CASE("a LoRA descendant of a BERT folder gets PEFT's names and config") {
  spec::Workspace ws;
  const spec::Model base = tiny_bert_base();
  spec::Model child;
  child.name = "qv";
  child.from = "bert";
  child.adaptation.set(
      spec::LoraSpec{.rank = 4, .alpha = 8, .dropout = 0, .targets = {"q", "v"}, .layers = {}});
  child.adaptation.head = spec::HeadSpec{.task = spec::HeadTask::kClassification,
                                         .labels = {"a", "b"},
                                         .pooling = spec::Pooling::kCls};
  ws.models = {base, child};
  lineage::LoadedParameters params = empty_parameters(ws, ws.models[1]);
  auto files = lineage::peft_adapter_files(ws, ws.models[1], params);
  REQUIRE(files.is_ok());
  std::set<std::string> names;
  for (const auto& t : files->tensors) names.insert(t.name);
  CHECK(names.size() == 2 * 2 * 2 + 2);  // 2 layers × (query, value) × (A, B) + head
  CHECK(names.count("base_model.model.bert.encoder.layer.1.attention.self.value.lora_B.weight"));
  CHECK(names.count("base_model.model.bert.encoder.layer.0.attention.self.query.lora_A.weight"));
  CHECK(names.count("base_model.model.classifier.weight"));
  CHECK(files->config["target_modules"] == nlohmann::json({"query", "value"}));
  CHECK(files->config["modules_to_save"] == nlohmann::json({"classifier"}));
  CHECK(files->config["r"] == 4);
  CHECK(files->config["base_model_name_or_path"] == "/models/tiny-bert");

  spec::LoraSpec moved = *ws.models[1].adaptation.find<spec::LoraSpec>();
  moved.targets = {"o", "ffn_out"};
  moved.layers = {1};
  ws.models[1].adaptation.set(moved);
  params = empty_parameters(ws, ws.models[1]);
  auto scattered = lineage::peft_adapter_files(ws, ws.models[1], params);
  REQUIRE(scattered.is_ok());
  CHECK(scattered->config["target_modules"] ==
        "bert\\.encoder\\.layer\\.(1)\\.(attention\\.output\\.dense|output\\.dense)");

  ws.models[1].adaptation.prefix =
      spec::PrefixSpec{.virtual_tokens = 2, .layers = {}, .reparam_hidden = 0};
  auto prefixed = lineage::peft_adapter_files(ws, ws.models[1], params);
  REQUIRE_FALSE(prefixed.is_ok());
  CHECK(prefixed.status().message().find("prefix") != std::string::npos);
}

TEST_CASE("a bottleneck adapter has no PEFT form, of its own or as an ancestor's") {
  // Its parameters are not a change of the trunk's weights (spec::MethodBlock::
  // unfoldable_adapter): the messages are the ones from before the method was a unit.
  spec::Workspace ws;
  const spec::Model base = tiny_bert_base();
  spec::Model adapter;
  adapter.name = "bn";
  adapter.from = "bert";
  adapter.adaptation.set(spec::BottleneckSpec{.reduction = 4});
  adapter.adaptation.head = spec::HeadSpec{.task = spec::HeadTask::kClassification,
                                           .labels = {"a", "b"},
                                           .pooling = spec::Pooling::kCls};
  spec::Model child;
  child.name = "child";
  child.from = "bn";
  child.adaptation.set(spec::LoraSpec{.rank = 2, .alpha = 4, .targets = {"q"}});
  ws.models = {base, adapter, child};
  for (const std::size_t m : {1u, 2u}) {
    auto files = lineage::peft_adapter_files(ws, ws.models[m], empty_parameters(ws, ws.models[m]));
    REQUIRE_FALSE(files.is_ok());
    CHECK(files.status().message() ==
          (m == 1 ? "model 'bn' cannot be exported in PEFT's layout: PEFT has no bottleneck "
                    "adapter, and --format huggingface cannot hold one either (it is not a "
                    "change of the trunk's weights); export it with the default format "
                    "(safetensors)"
                  : "model 'child' cannot be exported in PEFT's layout: its ancestor 'bn' has "
                    "a bottleneck adapter, which cannot be merged into the weights of the base "
                    "folder that a PEFT adapter of a descendant of a descendant loads over (PEFT "
                    "runs one adapter over a plain transformers model); export it with the "
                    "default format (safetensors) instead"));
  }
}
