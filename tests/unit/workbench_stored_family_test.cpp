// StoredFamily: models committed to a lineage store load back into one parameter pool
// (trunk held once) and classify exactly as the in-memory models they were saved from.
#include <catch2/catch.hpp>

#include "lineage/spec_records.h"
#include "lineage/store.h"
#include "lineage_test_support.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/text/byte_tokenizer.h"
#include "runtime_family.h"
#include "workbench/stored_family.h"

using namespace scion;

namespace {

// Commits every parameter of `model` as the in-memory family holds it.
void commit(lineage::LineageStore& store, const spec::Workspace& ws, const spec::Model& model,
            const runtime::ParameterBinding& params) {
  lineage::RunStart start;
  start.kind = model.is_base() ? lineage::RunKind::kTrain : lineage::RunKind::kAdapt;
  start.recipe_hash = model.recipe_hash;
  auto run = store.start_run(lineage::model_record_for(ws, model), start);
  REQUIRE(run.is_ok());
  std::vector<lineage::ParameterWrite> writes;
  for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, model)) {
    const runtime::Tensor* view = params.find(p.name);
    REQUIRE(view != nullptr);
    lineage::ParameterWrite w;
    w.name = p.name;
    w.shape = p.shape;
    w.bytes = {static_cast<const std::byte*>(view->data), view->bytes()};
    w.trainable = p.trainable;
    w.introduced_by = p.introduced_by;
    writes.push_back(std::move(w));
  }
  REQUIRE(store.commit_model(*run, lineage::model_record_for(ws, model), writes).is_ok());
}

}  // namespace

TEST_CASE("stored models load into one pool and classify as they did in memory") {
  spec::Architecture arch = test::tiny_architecture();
  arch.vocab_size = text::byte_tokenizer_vocab_size();
  test::Family f(arch);
  spec::Adaptation lora;
  lora.set(spec::LoraSpec{
      .rank = 2, .alpha = 4.0f, .dropout = 0.0f, .targets = {"q", "v"}, .layers = {}});
  lora.head = test::two_labels(spec::Pooling::kMean);
  f.add("lora", "base", lora);
  spec::Adaptation bitfit;
  bitfit.bitfit = spec::BitfitSpec{};
  bitfit.head = test::two_labels();
  f.add("bitfit", "base", bitfit);
  spec::Adaptation child;
  child.prefix = spec::PrefixSpec{.virtual_tokens = 2, .layers = {}, .reparam_hidden = 0};
  f.add("child", "lora", child);
  f.materialise();
  f.randomise(11);

  spec::Workspace ws = f.workspace();
  for (spec::Model& m : ws.models)
    m.recipe_hash = std::string(64, 'a' + static_cast<char>(m.name.size()));
  lineage::testing::TempDir dir;
  auto store = lineage::LineageStore::open(dir.path());
  REQUIRE(store.is_ok());

  workbench::StoredFamily family(ws, **store, f.backend());
  const std::vector<std::string> names = {"lora", "bitfit", "child"};
  SECTION("a model that is not stored is an error that says to run `scion run`") {
    Status s = family.load(names);
    REQUIRE(!s.is_ok());
    CHECK(s.message().find("scion run") != std::string::npos);
  }
  SECTION("stored models evaluate exactly as in memory") {
    for (const spec::Model& m : ws.models) commit(**store, ws, m, f.params(m.name));
    REQUIRE(family.load(names).is_ok());
    CHECK(family.classifier("base") == nullptr);  // no head: nothing to classify with
    // An encoder base with no training recipe is a masked language model; it scores with
    // the LM head on the same trunk memory its descendants classify with.
    CHECK(workbench::model_kind(ws, *ws.find_model("base")) ==
          workbench::ModelKind::kLanguageModel);
    REQUIRE(family.language_model("base") != nullptr);
    CHECK(family.language_model("base")->weights->objective == spec::Objective::kMaskedLm);
    CHECK(family.language_model("base")->weights->tok_emb ==
          family.classifier("lora")->weights->tok_emb);
    REQUIRE(family.classifier("child") != nullptr);
    // The frozen trunk is held once: lora and its child read the same memory.
    CHECK(family.classifier("child")->weights->tok_emb ==
          family.classifier("lora")->weights->tok_emb);
    CHECK(family.classifier("child")->labels == std::vector<std::string>{"neg", "pos"});

    std::vector<runtime::EvaluatedModel> stored, memory;
    std::vector<runtime::ModelWeights> weights;
    weights.reserve(names.size());
    text::ByteTokenizer tokenizer;
    for (const std::string& name : names) {
      stored.push_back(*family.classifier(name));
      auto w = runtime::resolve_model(f.workspace(), f.model(name),
                                      spec::Objective::kClassification, f.params(name), nullptr);
      REQUIRE(w.is_ok());
      weights.push_back(std::move(w).value());
      memory.push_back({&weights.back(), &tokenizer, {"neg", "pos"}});
    }
    const std::vector<std::string> texts = {"great", "not great", "a dull film"};
    runtime::FamilyEvaluator evaluator(f.backend());
    auto from_store = evaluator.classify(stored, texts);
    auto in_memory = evaluator.classify(memory, texts);
    REQUIRE(from_store.is_ok());
    REQUIRE(in_memory.is_ok());
    for (std::size_t m = 0; m < names.size(); ++m)
      for (std::size_t t = 0; t < texts.size(); ++t) {
        INFO(names[m] << " on " << texts[t]);
        // Same bytes, same batch composition: bit-identical.
        CHECK((*from_store)[m][t].probabilities == (*in_memory)[m][t].probabilities);
      }
  }
}
