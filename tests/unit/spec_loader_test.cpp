// The loader on valid specs: typed values, defaults, ordering, inheritance of labels.
#include <catch2/catch.hpp>

#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "spec/file_digest.h"
#include "spec_test_workspace.h"

using namespace scion::spec;
using scion::spec::testing::kPrefix;
using scion::spec::testing::TempWorkspace;

namespace {

std::string all_errors(const LoadResult& r) {
  std::string out;
  for (const Diagnostic& d : r.errors) out += d.to_string() + "\n";
  return out;
}

}  // namespace

TEST_CASE("a minimal base model loads with its defaults") {
  TempWorkspace ws;
  const LoadResult r = ws.load(kPrefix);
  INFO(all_errors(r));
  REQUIRE(r.workspace);
  REQUIRE(r.workspace->models.size() == 1);
  const Model& base = r.workspace->models[0];
  CHECK(base.is_base());
  CHECK(base.location.line == 7);
  const Architecture& a = *base.architecture;
  CHECK(a.kind == ArchitectureKind::kEncoder);
  CHECK(a.ffn_width == 64);  // 4 x width
  CHECK(a.vocab_size == kByteTokenizerVocabSize);
  CHECK(a.norm == NormPlacement::kPre);
  CHECK(base.training->objective == Objective::kMaskedLm);  // an encoder pretrains with mlm
  CHECK(base.training->steps == 10);
  CHECK(base.recipe_hash.size() == 64);
}

TEST_CASE("datasets resolve against the spec's directory and carry their digest") {
  TempWorkspace ws;
  const LoadResult r = ws.load(kPrefix);
  REQUIRE(r.workspace);
  const Dataset* reviews = r.workspace->find_dataset("reviews");
  REQUIRE(reviews);
  CHECK(reviews->path == ws.dir() / "reviews.jsonl");
  CHECK(reviews->format == DatasetFormat::kJsonl);
  CHECK(reviews->digest == sha256_file(ws.dir() / "reviews.jsonl").value());
  CHECK(reviews->labels == std::vector<std::string>{"negative", "positive"});
  const Dataset* corpus = r.workspace->find_dataset("corpus");
  CHECK(corpus->format == DatasetFormat::kText);  // implied by .txt
  CHECK(corpus->label_field.empty());
}

TEST_CASE("a known SHA-256 digest") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("children written before their parents are ordered parents first") {
  TempWorkspace ws;
  const std::string yaml = std::string(kPrefix) +
                           "  grandchild:\n"
                           "    from: child\n"
                           "    adapt: {lora: {rank: 2}}\n"
                           "    train: {data: reviews, epochs: 1}\n"
                           "  child:\n"
                           "    from: base\n"
                           "    adapt: {head: {pooling: mean}, bitfit: true}\n"
                           "    train: {data: reviews, epochs: 1}\n";
  const LoadResult r = ws.load(yaml);
  INFO(all_errors(r));
  REQUIRE(r.workspace);
  const auto& models = r.workspace->models;
  REQUIRE(models.size() == 3);
  CHECK(models[0].name == "base");
  CHECK(models[1].name == "child");
  CHECK(models[2].name == "grandchild");
  // A head without labels takes its dataset's; the grandchild classifies through it.
  CHECK(models[1].adaptation.head->labels == std::vector<std::string>{"negative", "positive"});
  CHECK(models[1].adaptation.head->pooling == Pooling::kMean);
  CHECK(models[1].adaptation.bitfit.has_value());
  CHECK(models[2].training->objective == Objective::kClassification);
  CHECK(models[2].adaptation.find<LoraSpec>()->targets == std::vector<std::string>{"q", "v"});
  CHECK(r.workspace->ancestry(models[2]).size() == 3);
}

TEST_CASE("every adaptation method and training key reads into its typed field") {
  TempWorkspace ws;
  const std::string yaml =
      std::string(kPrefix) +
      "  all:\n"
      "    from: base\n"
      "    adapt:\n"
      "      lora: {rank: 4, alpha: 8, dropout: 0.1, targets: [q, ffn_in], layers: [1]}\n"
      "      prefix: {virtual_tokens: 3, layers: [0], reparam_hidden: 32}\n"
      "      prompt: {virtual_tokens: 2, init: text, text: \"it was\"}\n"
      "      bottleneck: {reduction: 4, placement: both}\n"
      "      head: {labels: [negative, positive], pooling: last}\n"
      "      full: {}\n"
      "    freeze: ['blk.0.*']\n"
      "    unfreeze: ['ln_f.*']\n"
      "    train:\n"
      "      data: reviews\n"
      "      steps: 50\n"
      "      batch_size: 4\n"
      "      grad_accumulation: 2\n"
      "      max_length: 16\n"
      "      validation_split: 0.25\n"
      "      eval_every: 10\n"
      "      optimizer: {type: sgd, lr: 0.5, momentum: 0.8, grad_clip: 1}\n"
      "      schedule: {type: linear, warmup_steps: 5}\n"
      "      early_stopping: {metric: val_accuracy, patience: 2}\n"
      "      seed: 18446744073709551615\n";
  const LoadResult r = ws.load(yaml);
  INFO(all_errors(r));
  REQUIRE(r.workspace);
  const Model& m = r.workspace->models[1];
  CHECK(m.adaptation.find<LoraSpec>()->rank == 4);
  CHECK(m.adaptation.find<LoraSpec>()->alpha == 8.0f);
  CHECK(m.adaptation.find<LoraSpec>()->layers == std::vector<int>{1});
  CHECK(m.adaptation.prefix->reparam_hidden == 32);
  CHECK(m.adaptation.prompt->init == PromptInit::kText);
  CHECK(m.adaptation.prompt->init_text == "it was");
  CHECK(m.adaptation.find<BottleneckSpec>()->placement == BottleneckPlacement::kBoth);
  CHECK(m.adaptation.head->pooling == Pooling::kLast);
  CHECK(m.adaptation.full.has_value());
  CHECK(m.freeze == std::vector<std::string>{"blk.0.*"});
  const TrainingSpec& t = *m.training;
  CHECK(t.objective == Objective::kClassification);
  CHECK(t.grad_accumulation == 2);
  CHECK(t.max_length == 16);
  CHECK(t.validation_split == 0.25f);
  CHECK(t.optimizer.kind == OptimizerKind::kSgd);
  CHECK(t.optimizer.momentum == 0.8f);
  CHECK(t.schedule.kind == ScheduleKind::kLinear);
  CHECK(t.early_stopping.metric == "val_accuracy");
  CHECK(t.seed == 18446744073709551615ull);
}

TEST_CASE("tests, assertions, shares and lexicons keep their structure") {
  TempWorkspace ws;
  const std::string yaml =
      std::string(kPrefix) +
      "  a: {from: base, adapt: {head: {}}, train: {data: reviews, epochs: 1}}\n"
      "  b: {from: base, adapt: {head: {}}, train: {data: reviews, epochs: 1}}\n"
      "share:\n"
      "  heads: {models: [a, b], modules: ['head.$model.*']}\n"
      "lexicons:\n"
      "  adj: [good, great]\n"
      "tests:\n"
      "  vocab:\n"
      "    type: mft\n"
      "    capability: Vocabulary\n"
      "    models: [a]\n"
      "    template: \"it was {adj}\"\n"
      "    expect: positive\n"
      "    repeat: 3\n"
      "    quoted: \"3\"\n"
      "assertions:\n"
      "  sure: {kind: low_confidence, models: [b], threshold: 0.6}\n";
  const LoadResult r = ws.load(yaml);
  INFO(all_errors(r));
  REQUIRE(r.workspace);
  const Workspace& w = *r.workspace;
  REQUIRE(w.tests.size() == 1);
  CHECK(w.tests[0].type == "mft");
  CHECK(w.tests[0].models == std::vector<std::string>{"a"});
  CHECK(w.tests[0].body["template"] == "it was {adj}");
  CHECK(w.tests[0].body["repeat"] == 3);
  CHECK(w.tests[0].body["quoted"] == "3");
  CHECK_FALSE(w.tests[0].body.contains("type"));
  REQUIRE(w.assertions.size() == 1);
  CHECK(w.assertions[0].body["threshold"] == 0.6);
  CHECK(w.lexicons.at("adj") == std::vector<std::string>{"good", "great"});
  REQUIRE(w.shares.size() == 1);
  CHECK(w.shares[0].modules == std::vector<std::string>{"head.$model.*"});
}

TEST_CASE("load_workspace reads a file and reports a missing one") {
  TempWorkspace ws;
  ws.write("scion.yaml", kPrefix);
  const LoadResult ok = load_workspace(ws.dir() / "scion.yaml");
  INFO(all_errors(ok));
  REQUIRE(ok.workspace);
  CHECK(ok.workspace->root_dir == ws.dir());
  const LoadResult missing = load_workspace(ws.dir() / "nope.yaml");
  REQUIRE(missing.errors.size() == 1);
  CHECK(missing.errors[0].message.find("spec file not found") == 0);
}
