// FamilyEvaluator: co-batched inference of many models equals running each model alone.
#include <catch2/catch.hpp>
#include <cmath>

#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/evaluation/family_evaluator.h"
#include "runtime/text/byte_tokenizer.h"
#include "runtime_family.h"

using namespace scion;

namespace {

spec::Architecture byte_architecture() {
  spec::Architecture a = test::tiny_architecture();
  a.vocab_size = text::byte_tokenizer_vocab_size();
  a.max_length = 16;  // shorter than some texts below, so truncation is exercised
  return a;
}

}  // namespace

TEST_CASE("co-batched evaluation equals evaluating each model alone") {
  test::Family f(byte_architecture());
  spec::Adaptation lora;
  lora.set(spec::LoraSpec{
      .rank = 2, .alpha = 4.0f, .dropout = 0.0f, .targets = {"q", "v"}, .layers = {}});
  lora.head = test::two_labels(spec::Pooling::kMean);
  f.add("lora", "base", lora);
  spec::Adaptation prefix;
  prefix.prefix = spec::PrefixSpec{.virtual_tokens = 3, .layers = {}, .reparam_hidden = 0};
  prefix.head = test::two_labels();
  f.add("prefix", "base", prefix);
  spec::Adaptation prompt;
  prompt.prompt = spec::PromptSpec{.virtual_tokens = 2, .init = spec::PromptInit::kRandom, .init_text = {}};
  prompt.head = test::two_labels(spec::Pooling::kMean);
  f.add("prompt", "base", prompt);
  spec::Adaptation bottleneck;
  bottleneck.set(spec::BottleneckSpec{.reduction = 2, .placement = spec::BottleneckPlacement::kBoth, .layers = {}});
  bottleneck.head = test::two_labels(spec::Pooling::kLast);
  f.add("bottleneck", "base", bottleneck);
  spec::Adaptation bitfit;  // retrains trunk biases: a trunk of its own, batched apart
  bitfit.bitfit = spec::BitfitSpec{};
  bitfit.head = test::two_labels();
  f.add("bitfit", "base", bitfit);
  spec::Adaptation grandchild;  // no head of its own: classifies with lora's
  grandchild.set(
      spec::LoraSpec{.rank = 1, .alpha = 1.0f, .dropout = 0.0f, .targets = {"q"}, .layers = {1}});
  f.add("grandchild", "lora", grandchild);
  f.materialise();
  f.randomise(7);

  const std::vector<std::string> names = {"lora", "prefix", "prompt", "bottleneck", "bitfit", "grandchild"};
  std::vector<runtime::ModelWeights> weights;
  weights.reserve(names.size());
  for (const std::string& name : names) {
    auto w = runtime::resolve_model(f.workspace(), f.model(name), spec::Objective::kClassification,
                                    f.params(name), nullptr);
    REQUIRE(w.is_ok());
    weights.push_back(std::move(w).value());
  }
  text::ByteTokenizer tokenizer;
  std::vector<runtime::EvaluatedModel> models;
  for (const auto& w : weights) models.push_back({&w, &tokenizer, {"neg", "pos"}});
  const std::vector<std::string> texts = {
      "good", "the film was not great at all, sadly", "", "ok.", "a much longer review that will be truncated",
      "bad", "fine", "meh"};

  runtime::FamilyEvaluator evaluator(f.backend());
  auto together = evaluator.classify(models, texts, {.chunk_size = 3});  // 3 chunks, the last short
  REQUIRE(together.is_ok());
  REQUIRE(together->size() == names.size());

  bool any_difference_between_models = false;
  for (std::size_t m = 0; m < models.size(); ++m) {
    runtime::FamilyEvaluator alone_evaluator(f.backend());
    auto alone = alone_evaluator.classify(std::span(&models[m], 1), texts, {.chunk_size = 1});
    REQUIRE(alone.is_ok());
    REQUIRE((*together)[m].size() == texts.size());
    for (std::size_t t = 0; t < texts.size(); ++t) {
      const auto& a = (*alone)[0][t];
      const auto& b = (*together)[m][t];
      REQUIRE(b.labels == std::vector<std::string>{"neg", "pos"});
      REQUIRE(a.probabilities.size() == 2);
      REQUIRE(b.probabilities.size() == 2);
      CHECK(std::abs(a.probabilities[0] + a.probabilities[1] - 1.0f) < 1e-5f);
      for (int k = 0; k < 2; ++k) {
        INFO(names[m] << " on \"" << texts[t] << "\" class " << k);
        // Tolerance: only the summation order of the trunk products changes with the
        // batch's row count (BLAS blocking), a few float ulps after softmax.
        CHECK(b.probabilities[k] == Approx(a.probabilities[k]).margin(1e-5));
      }
      if (m > 0 && std::abs(b.probabilities[0] - (*together)[0][t].probabilities[0]) > 1e-4f)
        any_difference_between_models = true;
    }
  }
  // The models really differ, so equality above is not an artefact of one model's output.
  CHECK(any_difference_between_models);
}

TEST_CASE("evaluation rejects a model without a classifier and a bad chunk size") {
  test::Family f(byte_architecture());
  spec::Adaptation lora;
  lora.set(
      spec::LoraSpec{.rank = 1, .alpha = 1.0f, .dropout = 0.0f, .targets = {"q"}, .layers = {}});
  lora.head = test::two_labels();
  f.add("lora", "base", lora);
  f.materialise();
  text::ByteTokenizer tokenizer;
  auto w = runtime::resolve_model(f.workspace(), f.model("lora"), spec::Objective::kClassification,
                                  f.params("lora"), nullptr);
  REQUIRE(w.is_ok());
  runtime::FamilyEvaluator evaluator(f.backend());
  const std::vector<std::string> texts = {"x"};
  std::vector<runtime::EvaluatedModel> wrong_labels = {{&*w, &tokenizer, {"only-one"}}};
  CHECK(!evaluator.classify(wrong_labels, texts).is_ok());
  std::vector<runtime::EvaluatedModel> ok = {{&*w, &tokenizer, {"neg", "pos"}}};
  CHECK(!evaluator.classify(ok, texts, {.chunk_size = 0}).is_ok());
  CHECK(evaluator.classify(ok, texts).is_ok());
}

TEST_CASE("text_capacity is exactly the tokens of a text that a classifier reads") {
  test::Family f(byte_architecture());  // max_length 16
  spec::Adaptation lora;
  lora.set(
      spec::LoraSpec{.rank = 1, .alpha = 1.0f, .dropout = 0.0f, .targets = {"q"}, .layers = {}});
  lora.head = test::two_labels(spec::Pooling::kMean);
  f.add("lora", "base", lora);
  spec::Adaptation prompt;
  prompt.prompt =
      spec::PromptSpec{.virtual_tokens = 2, .init = spec::PromptInit::kRandom, .init_text = {}};
  prompt.head = test::two_labels(spec::Pooling::kMean);
  f.add("prompt", "base", prompt);
  f.materialise();
  f.randomise(11);
  text::ByteTokenizer tokenizer;
  for (const auto& [name, expected] : {std::pair{"lora", 14}, std::pair{"prompt", 12}}) {
    INFO(name);
    auto w = runtime::resolve_model(f.workspace(), f.model(name), spec::Objective::kClassification,
                                    f.params(name), nullptr);
    REQUIRE(w.is_ok());
    const runtime::EvaluatedModel model{&*w, &tokenizer, {"neg", "pos"}};
    const std::size_t capacity = runtime::text_capacity(model);
    CHECK(capacity == static_cast<std::size_t>(expected));  // 16 - [CLS] - [SEP] - prompt tokens
    // Texts that agree on their first `capacity` tokens classify alike; texts that differ
    // in the last token read do not.
    const std::string kept(capacity, 'a'), shorter(capacity - 1, 'a');
    const std::vector<std::string> texts = {kept + "zzzz", kept + "qqqq", shorter + "zzzz",
                                            shorter + "qqqq"};
    auto out = runtime::FamilyEvaluator(f.backend()).classify(std::span(&model, 1), texts);
    REQUIRE(out.is_ok());
    const auto& p = (*out)[0];
    // Alike to rounding (rows at other offsets may be summed in another order), where the
    // last token read moves the probability by far more.
    CHECK(std::fabs(p[0].probabilities[0] - p[1].probabilities[0]) <= 1e-6f);
    CHECK(std::fabs(p[2].probabilities[0] - p[3].probabilities[0]) > 1e-4f);
  }
}
