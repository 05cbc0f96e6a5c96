// Generation from causal LMs: the key/value cache against whole-text forward passes (every
// adapter kind, learned positions shifted by a prefix, rotary positions with grouped
// keys), greedy generation against argmax over recomputed texts, co-batched generation
// against each model alone, stop strings, EOS and max_length, and the token sampler's
// rules (greedy ties, top-k ties, top-p's nucleus, temperature) by their frequencies.
#include <catch2/catch.hpp>
#include <cmath>

#include "host_fault_backend.h"
#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/evaluation/text_generator.h"
#include "runtime/model/kv_cache.h"
#include "runtime/text/byte_tokenizer.h"
#include "runtime_family.h"

using namespace scion;

namespace {

constexpr spec::Objective kCausal = spec::Objective::kCausalLm;

// A GPT-2-shaped decoder as imported from Hugging Face (learned positions a prefix
// shifts), a native one (positions never shifted) and a Llama-shaped one (RMSNorm, rotary
// positions, SwiGLU, two query heads sharing one key/value head).
enum class Shape { kGpt2, kNative, kLlama };

spec::Architecture architecture(Shape shape) {
  spec::Architecture a = shape == Shape::kLlama
                             ? test::tiny_llama_architecture()
                             : test::tiny_architecture(spec::ArchitectureKind::kDecoder);
  a.vocab_size = text::byte_tokenizer_vocab_size();
  a.max_length = 24;
  if (shape == Shape::kGpt2) a.hf_model_type = "gpt2";
  if (shape == Shape::kLlama) a.rope_theta = 100.0f;
  return a;
}

// Every kind of branch a generated batch mixes: LoRA, prefix, prompt, bottleneck, a LoRA
// grandchild, and prefix tuning on a LoRA.
void add_descendants(test::Family& f) {
  spec::Adaptation lora;
  lora.set(spec::LoraSpec{
      .rank = 2, .alpha = 4.0f, .dropout = 0.0f, .targets = {"q", "v", "ffn_out"}, .layers = {}});
  f.add("lora", "base", lora);
  spec::Adaptation prefix;
  prefix.prefix = spec::PrefixSpec{.virtual_tokens = 3, .layers = {}, .reparam_hidden = 0};
  f.add("prefix", "base", prefix);
  spec::Adaptation prompt;
  prompt.prompt =
      spec::PromptSpec{.virtual_tokens = 2, .init = spec::PromptInit::kRandom, .init_text = {}};
  f.add("prompt", "base", prompt);
  spec::Adaptation bottleneck;
  bottleneck.set(spec::BottleneckSpec{
      .reduction = 2, .placement = spec::BottleneckPlacement::kBoth, .layers = {}});
  f.add("bottleneck", "base", bottleneck);
  spec::Adaptation grandchild;
  grandchild.set(
      spec::LoraSpec{.rank = 1, .alpha = 1.0f, .dropout = 0.0f, .targets = {"k"}, .layers = {1}});
  f.add("grandchild", "lora", grandchild);
  spec::Adaptation lora_prefix;
  lora_prefix.prefix = spec::PrefixSpec{.virtual_tokens = 2, .layers = {}, .reparam_hidden = 0};
  f.add("lora-prefix", "lora", lora_prefix);
}

const std::vector<std::string> kModels = {"base",       "lora",       "prefix",     "prompt",
                                          "bottleneck", "grandchild", "lora-prefix"};

struct Models {
  bool randomised;  // random values everywhere, or the initial ones
  test::Family family;
  std::vector<runtime::ModelWeights> weights;
  text::ByteTokenizer tokenizer;
  std::vector<runtime::ScoredModel> scored;

  // On the CPU backend with random values everywhere, or on `backend` with the initial
  // values (randomise() writes them on the host, where another backend's memory may not be).
  explicit Models(Shape shape, std::unique_ptr<runtime::Backend> backend = nullptr)
      : randomised(!backend),
        family(backend ? test::Family(architecture(shape), std::move(backend))
                       : test::Family(architecture(shape))) {
    add_descendants(family);
    family.materialise();
    if (randomised) family.randomise(5);
    weights.reserve(kModels.size());
    for (const std::string& name : kModels) {
      auto w = runtime::resolve_model(family.workspace(), family.model(name), kCausal,
                                      family.params(name), nullptr);
      REQUIRE(w.is_ok());
      weights.push_back(std::move(w).value());
    }
    for (const auto& w : weights) scored.push_back({&w, &tokenizer});
  }
};

// The logits of every position of `tokens` under `model`, from one forward pass.
std::vector<std::vector<float>> whole_text_logits(runtime::Backend& backend,
                                                  const runtime::ModelWeights& model,
                                                  const std::vector<std::int32_t>& tokens) {
  runtime::SegmentedTransformer net(backend);
  runtime::FamilyBatch batch{.segments = {{.model = &model,
                                           .batch = 1,
                                           .length = static_cast<int>(tokens.size()),
                                           .tokens = tokens.data()}}};
  auto out = net.forward(batch);
  REQUIRE(out.is_ok());
  const std::vector<float> all = runtime::copy_to_host(backend, (*out)[0].logits);
  const std::size_t V = static_cast<std::size_t>(model.arch.vocab_size);
  const std::size_t P = static_cast<std::size_t>(model.prompt_tokens());
  std::vector<std::vector<float>> rows;
  for (std::size_t t = 0; t < tokens.size(); ++t)
    rows.emplace_back(all.begin() + static_cast<std::ptrdiff_t>((P + t) * V),
                      all.begin() + static_cast<std::ptrdiff_t>((P + t + 1) * V));
  return rows;
}

float largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float worst = 0.0f;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// Runs every model over `tokens` in ONE batch per step with its own cache: the first
// `first` tokens at once, then one at a time. Returns [model][position] logits.
std::vector<std::vector<std::vector<float>>> cached_logits(Models& m,
                                                           const std::vector<std::int32_t>& tokens,
                                                           int first) {
  runtime::Backend& backend = m.family.backend();
  std::vector<runtime::KvCache> caches;
  for (const auto& w : m.weights) {
    auto cache = runtime::KvCache::create(backend, w, w.prompt_tokens() + 16);
    REQUIRE(cache.is_ok());
    caches.push_back(std::move(*cache));
  }
  std::vector<std::vector<std::vector<float>>> out(m.weights.size());
  runtime::SegmentedTransformer net(backend);
  for (int begin = 0; begin < static_cast<int>(tokens.size());) {
    const int length = begin == 0 ? first : 1;
    runtime::FamilyBatch batch;
    for (std::size_t i = 0; i < m.weights.size(); ++i)
      batch.segments.push_back({.model = &m.weights[i],
                                .batch = 1,
                                .length = length,
                                .tokens = tokens.data() + begin,
                                .cache = &caches[i],
                                .last_position_logits = true});
    auto result = net.forward(batch);
    REQUIRE(result.is_ok());
    for (std::size_t i = 0; i < m.weights.size(); ++i) {
      CHECK((*result)[i].logits.shape == std::vector<std::int64_t>{1, 1, 260});
      out[i].push_back(runtime::copy_to_host(backend, (*result)[i].logits));
    }
    begin += length;
  }
  for (std::size_t i = 0; i < m.weights.size(); ++i)
    CHECK(caches[i].cached() == m.weights[i].prompt_tokens() + static_cast<int>(tokens.size()));
  return out;
}

void check_cache_matches_whole_text(Shape shape) {
  Models m(shape);
  const std::vector<std::int32_t> tokens = {257, 't', 'h', 'e', ' ', 'c', 'a', 't', ' ', 's'};
  const int first = 4;
  const auto cached = cached_logits(m, tokens, first);
  bool models_differ = false;
  for (std::size_t i = 0; i < m.weights.size(); ++i) {
    const auto whole = whole_text_logits(m.family.backend(), m.weights[i], tokens);
    // Step 0 gives the logits of position first - 1, step j those of position first - 1 + j.
    REQUIRE(cached[i].size() == tokens.size() - first + 1);
    for (std::size_t j = 0; j < cached[i].size(); ++j) {
      INFO(kModels[i] << ", position " << first - 1 + j);
      // Tolerance: the same kernels over other row counts (one row a step against the
      // whole text) sum in another order inside the products: a few float ulps of logits
      // of magnitude ~10.
      CHECK(largest_difference(cached[i][j], whole[first - 1 + j]) < 1e-4f);
    }
    if (largest_difference(cached[i].back(), cached[0].back()) > 1e-2f) models_differ = true;
  }
  CHECK(models_differ);  // the adapters change the logits: the comparison has teeth
}

// Greedy generation by recomputing the whole text each step: the reference for the cache.
std::vector<std::int32_t> greedy_by_recomputation(runtime::Backend& backend,
                                                  const runtime::ModelWeights& model,
                                                  std::vector<std::int32_t> tokens, int steps) {
  std::vector<std::int32_t> generated;
  for (int i = 0; i < steps; ++i) {
    const auto logits = whole_text_logits(backend, model, tokens).back();
    const auto next =
        static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    generated.push_back(next);
    if (next == 258) break;  // EOS
    tokens.push_back(next);
  }
  return generated;
}

// The byte tokenizer with another token as its EOS.
class EosTokenizer final : public text::Tokenizer {
 public:
  explicit EosTokenizer(std::int32_t eos) : specials_(bytes_.special_tokens()) {
    specials_.sep = eos;
  }
  std::vector<std::int32_t> encode(std::string_view text) const override {
    return bytes_.encode(text);
  }
  std::string decode(const std::vector<std::int32_t>& ids) const override {
    return bytes_.decode(ids);
  }
  int vocab_size() const override { return bytes_.vocab_size(); }
  const text::SpecialTokens& special_tokens() const override { return specials_; }

 private:
  text::ByteTokenizer bytes_;
  text::SpecialTokens specials_;
};

}  // namespace

TEST_CASE("a key/value cache gives the logits of the whole text, position by position") {
  SECTION("GPT-2-shaped: learned positions, shifted after a prefix") {
    check_cache_matches_whole_text(Shape::kGpt2);
  }
  SECTION("native decoder") { check_cache_matches_whole_text(Shape::kNative); }
  SECTION("Llama-shaped: rotary positions, grouped keys and values") {
    check_cache_matches_whole_text(Shape::kLlama);
  }
}

TEST_CASE("greedy generation equals argmax over the recomputed text, every model in one batch") {
  for (Shape shape : {Shape::kGpt2, Shape::kLlama}) {
    Models m(shape);
    runtime::TextGenerator generator(m.family.backend());
    const std::vector<std::string> prompts = {"the cat", "a", "hello there"};
    runtime::GenerationOptions options{.max_new_tokens = 6};
    auto out = generator.generate(m.scored, prompts, options);
    REQUIRE(out.is_ok());
    for (std::size_t i = 0; i < m.weights.size(); ++i)
      for (std::size_t q = 0; q < prompts.size(); ++q) {
        INFO(kModels[i] << " on \"" << prompts[q] << "\"");
        const runtime::Generation& g = (*out)[i][q];
        std::vector<std::int32_t> framed = {257};
        for (char c : prompts[q]) framed.push_back(static_cast<unsigned char>(c));
        CHECK(g.prompt_tokens == framed);
        const auto expected = greedy_by_recomputation(m.family.backend(), m.weights[i], framed, 6);
        CHECK(g.tokens == expected);
        CHECK(g.text == m.tokenizer.decode(g.tokens));
        CHECK(g.finish == (expected.back() == 258 ? runtime::FinishReason::kEos
                                                  : runtime::FinishReason::kLength));
      }
  }
}

TEST_CASE("sampled generation does not depend on what generates beside it") {
  Models m(Shape::kGpt2);
  const std::vector<std::string> prompts = {"the cat", "a dog", "x"};
  runtime::GenerationOptions options{
      .max_new_tokens = 8,
      .sampling = {.temperature = 1.5f, .top_k = 40, .top_p = 0.95f, .seed = 7},
      .chunk_size = 5};
  runtime::TextGenerator generator(m.family.backend());
  auto together = generator.generate(m.scored, prompts, options);
  REQUIRE(together.is_ok());
  options.chunk_size = 1;
  bool differs_from_greedy = false;
  auto greedy_options = options;
  greedy_options.sampling.temperature = 0.0f;
  auto greedy = generator.generate(m.scored, prompts, greedy_options);
  REQUIRE(greedy.is_ok());
  for (std::size_t i = 0; i < m.weights.size(); ++i) {
    auto alone = generator.generate(std::span(&m.scored[i], 1), prompts, options);
    REQUIRE(alone.is_ok());
    for (std::size_t q = 0; q < prompts.size(); ++q) {
      INFO(kModels[i] << " on \"" << prompts[q] << "\"");
      CHECK((*alone)[0][q].tokens == (*together)[i][q].tokens);
      differs_from_greedy |= (*greedy)[i][q].tokens != (*together)[i][q].tokens;
    }
  }
  CHECK(differs_from_greedy);  // it did sample
  // Another seed gives other texts.
  options.sampling.seed = 8;
  auto reseeded = generator.generate(m.scored, prompts, options);
  REQUIRE(reseeded.is_ok());
  bool seed_matters = false;
  for (std::size_t i = 0; i < m.weights.size(); ++i)
    for (std::size_t q = 0; q < prompts.size(); ++q)
      seed_matters |= (*reseeded)[i][q].tokens != (*together)[i][q].tokens;
  CHECK(seed_matters);
}

TEST_CASE("generation ends at a stop string, at EOS and at max_length") {
  Models m(Shape::kNative);
  runtime::TextGenerator generator(m.family.backend());
  const std::vector<std::string> prompts = {"ab"};
  const std::span<const runtime::ScoredModel> base(&m.scored[0], 1);
  auto free = generator.generate(base, prompts, {.max_new_tokens = 12});
  REQUIRE(free.is_ok());
  const runtime::Generation& full = (*free)[0][0];

  SECTION("stop string: the text is cut before it, the tokens end where it appeared") {
    // The free run (fixed weights, so always the same) is 12 tokens: take a stop string
    // from its middle.
    REQUIRE(full.finish == runtime::FinishReason::kLength);
    const std::string& text = full.text;
    REQUIRE(text.size() >= 6);
    const std::string stop = text.substr(3, 2);
    auto cut =
        generator.generate(base, prompts, {.max_new_tokens = 12, .stop = {"\x01\x02", stop}});
    REQUIRE(cut.is_ok());
    const runtime::Generation& g = (*cut)[0][0];
    CHECK(g.finish == runtime::FinishReason::kStop);
    CHECK(g.text == text.substr(0, text.find(stop)));
    REQUIRE(g.tokens.size() <= full.tokens.size());
    CHECK(std::equal(g.tokens.begin(), g.tokens.end(), full.tokens.begin()));
    CHECK(m.tokenizer.decode(g.tokens).find(stop) != std::string::npos);
  }
  SECTION("max_length: the positions run out before max_new_tokens") {
    const std::string long_prompt(20, 'a');  // [BOS] + 20 of max_length 24
    auto out =
        generator.generate(base, std::vector<std::string>{long_prompt}, {.max_new_tokens = 12});
    REQUIRE(out.is_ok());
    const runtime::Generation& g = (*out)[0][0];
    // 21 positions framed, 3 more run: 4 tokens picked (the last one never runs).
    CHECK(g.finish == runtime::FinishReason::kLength);
    CHECK(g.tokens.size() == 4);
    // The prompt model's 2 prompt tokens take 2 of the positions.
    auto prompted = generator.generate(
        std::span(&m.scored[3], 1), std::vector<std::string>{long_prompt}, {.max_new_tokens = 12});
    REQUIRE(prompted.is_ok());
    CHECK((*prompted)[0][0].finish == runtime::FinishReason::kLength);
    CHECK((*prompted)[0][0].tokens.size() == 2);
    auto too_long = generator.generate(base, std::vector<std::string>{std::string(24, 'a')},
                                       {.max_new_tokens = 1});
    REQUIRE_FALSE(too_long.is_ok());
    CHECK_THAT(too_long.status().message(),
               Catch::Contains("prompt 1 is 25 tokens") && Catch::Contains("shorten the prompt"));
  }
  SECTION("EOS ends a sequence and stays its last token") {
    // A tokenizer whose EOS is the second token the free run picked: generation must stop
    // right there.
    REQUIRE(full.tokens.size() >= 3);
    const std::int32_t eos = full.tokens[1];
    const auto first = std::find(full.tokens.begin(), full.tokens.end(), eos);
    const EosTokenizer tokenizer(eos);
    const runtime::ScoredModel model{&m.weights[0], &tokenizer};
    auto out = generator.generate(std::span(&model, 1), prompts, {.max_new_tokens = 12});
    REQUIRE(out.is_ok());
    const runtime::Generation& g = (*out)[0][0];
    CHECK(g.finish == runtime::FinishReason::kEos);
    CHECK(g.tokens == std::vector<std::int32_t>(full.tokens.begin(), first + 1));
  }
}

TEST_CASE("generation refuses what it cannot run") {
  Models m(Shape::kNative);
  runtime::TextGenerator generator(m.family.backend());
  const std::vector<std::string> prompts = {"a"};
  const std::span<const runtime::ScoredModel> base(&m.scored[0], 1);
  CHECK_FALSE(generator.generate(base, prompts, {.max_new_tokens = 0}).is_ok());
  CHECK_FALSE(generator.generate(base, prompts, {.stop = {""}}).is_ok());
  CHECK_FALSE(generator.generate(base, prompts, {.sampling = {.temperature = -1.0f}}).is_ok());
  CHECK_FALSE(generator.generate(base, prompts, {.sampling = {.top_p = 0.0f}}).is_ok());
  CHECK_FALSE(generator.generate(base, prompts, {.sampling = {.top_k = -2}}).is_ok());
  auto classifier =
      runtime::resolve_model(m.family.workspace(), m.family.model("base"),
                             spec::Objective::kMaskedLm, m.family.params("base"), nullptr);
  REQUIRE(classifier.is_ok());
  const runtime::ScoredModel masked{&*classifier, &m.tokenizer};
  auto refused = generator.generate(std::span(&masked, 1), prompts, {});
  REQUIRE_FALSE(refused.is_ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("not a causal language model"));
}

TEST_CASE("a cache refuses batches it cannot serve") {
  Models m(Shape::kNative);
  auto cache = runtime::KvCache::create(m.family.backend(), m.weights[0], 4);
  REQUIRE(cache.is_ok());
  runtime::SegmentedTransformer net(m.family.backend());
  const std::vector<std::int32_t> tokens = {257, 'a', 'b', 'c', 'd', 'e'};
  const std::vector<std::int32_t> targets = {'a', 'b', 'c', 'd', 'e', 258};
  auto run = [&](runtime::Segment seg, bool share = false) {
    return net.forward({.segments = {seg}, .share_identical = share}).status().message();
  };
  const runtime::Segment ok{
      .model = &m.weights[0], .batch = 1, .length = 2, .tokens = tokens.data(), .cache = &*cache};
  auto too_many = ok;
  too_many.length = 5;
  CHECK_THAT(run(too_many), Catch::Contains("room for 4 positions, 5 needed"));
  auto other_model = ok;
  other_model.model = &m.weights[1];
  CHECK_THAT(run(other_model), Catch::Contains("made for 'base'"));
  auto two_rows = ok;
  two_rows.batch = 2;
  CHECK_THAT(run(two_rows), Catch::Contains("holds one sequence"));
  auto with_targets = ok;
  with_targets.targets = targets.data();
  CHECK_THAT(run(with_targets), Catch::Contains("for inference"));
  CHECK_THAT(run(ok, true), Catch::Contains("shares no layer applications"));
  CHECK(cache->cached() == 0);  // nothing ran
  CHECK(net.forward({.segments = {ok}}).is_ok());
  CHECK(cache->cached() == 2);
}

// ---- the token sampler ------------------------------------------------------------------

namespace {

// How often each token comes out of `draws` picks.
std::vector<double> frequencies(const std::vector<float>& logits,
                                const runtime::SamplingOptions& options, int draws) {
  base::SeededRng rng(options.seed, base::RngPurpose::kTokenSampling, 0);
  std::vector<double> counts(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i)
    counts[static_cast<std::size_t>(runtime::pick_token(logits, options, rng))] += 1;
  for (double& c : counts) c /= draws;
  return counts;
}

}  // namespace

TEST_CASE("the token sampler follows transformers' warpers") {
  base::SeededRng rng(1, base::RngPurpose::kTokenSampling, 0);
  SECTION("greedy takes the lowest id of equal maxima and draws nothing") {
    const base::SeededRng before = rng;
    CHECK(runtime::pick_token(std::vector<float>{1, 3, 0, 3}, {}, rng) == 1);
    CHECK(rng.next() == base::SeededRng(before).next());
  }
  // probabilities 1/6, 2/6, 3/6
  const std::vector<float> logits = {0.0f, std::log(2.0f), std::log(3.0f)};
  // Tolerance: 200000 draws give a standard error of at most 0.0012 per frequency.
  constexpr int kDraws = 200000;
  constexpr double kTolerance = 0.006;
  SECTION("temperature 1: the softmax") {
    const auto f = frequencies(logits, {.temperature = 1.0f, .seed = 3}, kDraws);
    CHECK(f[0] == Approx(1.0 / 6).margin(kTolerance));
    CHECK(f[1] == Approx(2.0 / 6).margin(kTolerance));
    CHECK(f[2] == Approx(3.0 / 6).margin(kTolerance));
  }
  SECTION("temperature 2: the softmax of half the logits") {
    const double z = 1 + std::sqrt(2.0) + std::sqrt(3.0);
    const auto f = frequencies(logits, {.temperature = 2.0f, .seed = 4}, kDraws);
    CHECK(f[0] == Approx(1 / z).margin(kTolerance));
    CHECK(f[2] == Approx(std::sqrt(3.0) / z).margin(kTolerance));
  }
  SECTION("top-k keeps the k largest, and every token tied with the k-th") {
    const auto f = frequencies(logits, {.temperature = 1.0f, .top_k = 2, .seed = 5}, kDraws);
    CHECK(f[0] == 0.0);
    CHECK(f[1] == Approx(0.4).margin(kTolerance));
    const auto tied =
        frequencies({1.0f, 1.0f, 2.0f, 0.0f}, {.temperature = 1.0f, .top_k = 2, .seed = 6}, 1000);
    CHECK(tied[0] > 0.0);
    CHECK(tied[1] > 0.0);
    CHECK(tied[3] == 0.0);
  }
  SECTION("top-p keeps the tokens before the mass reaches it, and the one that crosses") {
    const auto half = frequencies(logits, {.temperature = 1.0f, .top_p = 0.5f, .seed = 7}, 1000);
    CHECK(half[2] == 1.0);  // the most probable token alone holds 0.5
    const auto more = frequencies(logits, {.temperature = 1.0f, .top_p = 0.6f, .seed = 8}, kDraws);
    CHECK(more[0] == 0.0);
    CHECK(more[1] == Approx(0.4).margin(kTolerance));
    CHECK(more[2] == Approx(0.6).margin(kTolerance));
    const auto tiny = frequencies(logits, {.temperature = 1.0f, .top_p = 1e-6f, .seed = 9}, 1000);
    CHECK(tiny[2] == 1.0);  // at least one token always stays
  }
  SECTION("options out of range are refused, naming them") {
    CHECK_THAT(runtime::check_sampling({.temperature = -0.5f}).message(),
               Catch::Contains("temperature"));
    CHECK_THAT(runtime::check_sampling({.top_k = -1}).message(), Catch::Contains("top-k"));
    CHECK_THAT(runtime::check_sampling({.top_p = 1.5f}).message(), Catch::Contains("top-p"));
    CHECK(runtime::check_sampling({.temperature = 0.7f, .top_k = 5, .top_p = 0.9f}).is_ok());
  }
}

TEST_CASE("generation never reads the backend's memory on the host") {
  // The caches, the prompt rows and the last positions' logits stay on the backend; only
  // copy_to_host brings the logits back (tests/unit/host_fault_backend.h faults otherwise).
  for (Shape shape : {Shape::kGpt2, Shape::kLlama}) {
    Models cpu(shape, runtime::make_cpu_backend(runtime::CpuBackendOptions{.threads = 1}));
    Models fault(
        shape, std::make_unique<test::HostFaultBackend>(runtime::CpuBackendOptions{.threads = 1}));
    const std::vector<std::string> prompts = {"the cat", "a"};
    for (const float temperature : {0.0f, 1.0f}) {
      const runtime::GenerationOptions options{.max_new_tokens = 5,
                                               .sampling = {.temperature = temperature, .seed = 2}};
      auto expected =
          runtime::TextGenerator(cpu.family.backend()).generate(cpu.scored, prompts, options);
      auto got =
          runtime::TextGenerator(fault.family.backend()).generate(fault.scored, prompts, options);
      REQUIRE(expected.is_ok());
      REQUIRE(got.is_ok());
      for (std::size_t i = 0; i < kModels.size(); ++i)
        for (std::size_t q = 0; q < prompts.size(); ++q)
          CHECK((*got)[i][q].tokens == (*expected)[i][q].tokens);
    }
  }
}
