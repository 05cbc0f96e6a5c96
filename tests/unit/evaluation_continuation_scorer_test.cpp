// ContinuationScorer: log p(continuation | input) for causal and masked LMs, co-batched
// over one trunk, checked against each model scored alone, against plain forward passes,
// and against a hand computation on a model whose blocks are the identity.
#include <catch2/catch.hpp>
#include <cmath>

#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/evaluation/continuation_scorer.h"
#include "runtime/text/byte_tokenizer.h"
#include "runtime_family.h"

using namespace scion;

namespace {

constexpr spec::Objective kCausal = spec::Objective::kCausalLm;
constexpr spec::Objective kMasked = spec::Objective::kMaskedLm;

spec::Architecture byte_architecture(spec::ArchitectureKind kind, int max_length = 16) {
  spec::Architecture a = test::tiny_architecture(kind);
  a.vocab_size = text::byte_tokenizer_vocab_size();
  a.max_length = max_length;
  return a;
}

runtime::ModelWeights resolve(const test::Family& f, const std::string& name,
                              spec::Objective objective) {
  auto w = runtime::resolve_model(f.workspace(), f.model(name), objective, f.params(name), nullptr);
  REQUIRE(w.is_ok());
  return std::move(w).value();
}

// Adds a LoRA, a prefix, a prompt, a bottleneck, a BitFit (its own trunk) and a LoRA
// grandchild below the base: every kind of branch the trie and the co-batching handle.
void add_descendants(test::Family& f) {
  spec::Adaptation lora;
  lora.set(spec::LoraSpec{
      .rank = 2, .alpha = 4.0f, .dropout = 0.0f, .targets = {"q", "v"}, .layers = {}});
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
  spec::Adaptation bitfit;
  bitfit.bitfit = spec::BitfitSpec{};
  f.add("bitfit", "base", bitfit);
  spec::Adaptation grandchild;
  grandchild.set(
      spec::LoraSpec{.rank = 1, .alpha = 1.0f, .dropout = 0.0f, .targets = {"q"}, .layers = {1}});
  f.add("grandchild", "lora", grandchild);
}

const std::vector<std::string> kModels = {"base",       "lora",   "prefix",    "prompt",
                                          "bottleneck", "bitfit", "grandchild"};

// Co-batched against alone for every model of the family.
void check_shared_equals_alone(spec::ArchitectureKind kind, spec::Objective objective) {
  test::Family f(byte_architecture(kind));
  add_descendants(f);
  f.materialise();
  f.randomise(11);
  std::vector<runtime::ModelWeights> weights;
  weights.reserve(kModels.size());
  for (const std::string& name : kModels) weights.push_back(resolve(f, name, objective));
  text::ByteTokenizer tokenizer;
  std::vector<runtime::ScoredModel> models;
  for (const auto& w : weights) models.push_back({&w, &tokenizer});
  const std::vector<runtime::ContinuationQuery> queries = {
      {"the cat says", " meow"},
      {"the cat says", " woof"},
      {"", "hello"},                                                  // no input at all
      {"a much longer input that must be cut from the left", " ok"},  // truncated
      {"x", "y"},
      {"the dog", " says woof"},
  };
  runtime::ContinuationScorer scorer(f.backend());
  auto together = scorer.score(models, queries, {.chunk_size = 4});  // 2 chunks, the last short
  REQUIRE(together.is_ok());
  REQUIRE(together->size() == models.size());
  bool models_differ = false;
  for (std::size_t m = 0; m < models.size(); ++m) {
    runtime::ContinuationScorer alone_scorer(f.backend());
    auto alone = alone_scorer.score(std::span(&models[m], 1), queries,
                                    {.chunk_size = 1, .share_identical = false});
    REQUIRE(alone.is_ok());
    for (std::size_t q = 0; q < queries.size(); ++q) {
      INFO(kModels[m] << " on \"" << queries[q].input << "\" + \"" << queries[q].continuation
                      << "\"");
      const double a = (*alone)[0][q], b = (*together)[m][q];
      CHECK(b < 0.0);
      // Tolerance: the batch's row count changes only the summation order inside the
      // products (BLAS blocking), a few float ulps per logit; a score sums at most ~10
      // log-probabilities of magnitude ~10, each exact in double after the float logits.
      CHECK(b == Approx(a).epsilon(1e-5).margin(1e-4));
      if (std::abs(b - (*together)[0][q]) > 1e-3) models_differ = true;
    }
  }
  // The models really differ, so the equality above is not one model's output repeated.
  CHECK(models_differ);
  // A row budget far below one chunk of 64 cuts the work into chunks of one or two queries.
  auto budgeted = scorer.score(models, queries, {.max_rows = 256});
  REQUIRE(budgeted.is_ok());
  for (std::size_t m = 0; m < models.size(); ++m)
    for (std::size_t q = 0; q < queries.size(); ++q)
      CHECK((*budgeted)[m][q] == Approx((*together)[m][q]).epsilon(1e-5).margin(1e-4));
}

// log p(continuation | input) from one forward pass of one row, computed here: the sum of
// log softmax at `positions` of the given targets.
double sum_log_softmax(const runtime::Tensor& logits, int row, std::span<const int> positions,
                       std::span<const std::int32_t> targets) {
  const std::int64_t S = logits.shape.at(1), V = logits.shape.at(2);
  double total = 0.0;
  for (std::size_t j = 0; j < positions.size(); ++j) {
    const float* l = logits.f32() + (row * S + positions[j]) * V;
    double top = l[0];
    for (std::int64_t v = 1; v < V; ++v) top = std::max(top, double(l[v]));
    double sum = 0.0;
    for (std::int64_t v = 0; v < V; ++v) sum += std::exp(double(l[v]) - top);
    total += double(l[targets[j]]) - top - std::log(sum);
  }
  return total;
}

std::vector<std::int32_t> bytes(std::string_view text) {
  return text::ByteTokenizer().encode(text);
}

}  // namespace

TEST_CASE("causal LM: co-batched scores equal each model scored alone") {
  check_shared_equals_alone(spec::ArchitectureKind::kDecoder, kCausal);
}

TEST_CASE("masked LM: co-batched pseudo-log-likelihoods equal each model scored alone") {
  check_shared_equals_alone(spec::ArchitectureKind::kEncoder, kMasked);
}

TEST_CASE("causal LM score is the sum of shifted log-probabilities of one full forward pass") {
  test::Family f(byte_architecture(spec::ArchitectureKind::kDecoder));
  add_descendants(f);
  f.materialise();
  f.randomise(3);
  text::ByteTokenizer tokenizer;
  for (const std::string name : {"lora", "prompt"}) {
    const runtime::ModelWeights w = resolve(f, name, kCausal);
    const std::vector<runtime::ScoredModel> models = {{&w, &tokenizer}};
    const std::vector<runtime::ContinuationQuery> queries = {{"cat", " mew"}};
    runtime::ContinuationScorer scorer(f.backend());
    auto scores = scorer.score(models, queries);
    REQUIRE(scores.is_ok());
    // The whole text [BOS] c a t ' ' m e w in one row: with the causal mask, the logit at
    // position t sees tokens 0..t only, so the extra last token changes nothing before it.
    std::vector<std::int32_t> row = {tokenizer.special_tokens().cls};
    for (std::int32_t t : bytes("cat mew")) row.push_back(t);
    const std::vector<std::int32_t> length = {static_cast<std::int32_t>(row.size())};
    runtime::SegmentedTransformer net(f.backend());
    runtime::FamilyBatch batch{.segments = {{.model = &w,
                                             .batch = 1,
                                             .length = static_cast<int>(row.size()),
                                             .tokens = row.data(),
                                             .lengths = length.data()}}};
    auto out = net.forward(batch);
    REQUIRE(out.is_ok());
    // " mew" are tokens 4..7 of the row; each is predicted at the position before it,
    // after the model's prompt tokens.
    const int P = w.prompt_tokens();
    const std::vector<int> positions = {P + 3, P + 4, P + 5, P + 6};
    const std::vector<std::int32_t> targets = bytes(" mew");
    INFO(name);
    CHECK((*scores)[0][0] ==
          Approx(sum_log_softmax((*out)[0].logits, 0, positions, targets)).margin(1e-5));
  }
}

TEST_CASE("causal LM score by hand on a decoder whose blocks are the identity") {
  // One block with every weight and bias zero adds nothing to the residual stream (q, k,
  // v, the attention output and the FFN are all zero), so the final hidden state at
  // position t is layernorm(tok_emb[x_t] + pos_emb[t]) and the logits are tok_emb times it
  // (tied embeddings). Computed below in double, independently of the kernels.
  spec::Architecture a = byte_architecture(spec::ArchitectureKind::kDecoder, 8);
  a.layers = 1;
  a.width = 4;
  a.heads = 1;
  a.ffn_width = 4;
  test::Family f(a);
  f.materialise();
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& [name, view] : f.all_parameters()) {
    float* x = view.f32();
    for (std::int64_t i = 0; i < view.numel(); ++i)
      x[i] = name == "tok_emb.weight" || name == "pos_emb.weight" ? normal(rng)
             : name == "ln_f.weight"                              ? 1.0f
                                                                  : 0.0f;
  }
  const runtime::Tensor tok = f.all_parameters().at("tok_emb.weight");
  const runtime::Tensor pos = f.all_parameters().at("pos_emb.weight");
  const int C = a.width, V = a.vocab_size;
  auto log_p = [&](std::int32_t token_at, int position, std::int32_t next) {
    std::vector<double> h(C);
    double mean = 0.0, var = 0.0;
    for (int c = 0; c < C; ++c) {
      h[c] = double(tok.f32()[token_at * C + c]) + double(pos.f32()[position * C + c]);
      mean += h[c] / C;
    }
    for (int c = 0; c < C; ++c) var += (h[c] - mean) * (h[c] - mean) / C;
    for (int c = 0; c < C; ++c) h[c] = (h[c] - mean) / std::sqrt(var + 1e-5);
    std::vector<double> logits(V);
    for (int v = 0; v < V; ++v)
      for (int c = 0; c < C; ++c) logits[v] += double(tok.f32()[v * C + c]) * h[c];
    double sum = 0.0;
    for (double l : logits) sum += std::exp(l);
    return logits[next] - std::log(sum);
  };
  const std::int32_t bos = text::ByteTokenizer().special_tokens().cls;
  // "ab" + "cd": the row is [BOS] a b c; c is predicted at position 2, d at position 3.
  const double expected = log_p('b', 2, 'c') + log_p('c', 3, 'd');
  // "" + "xy": x is predicted from BOS at position 0.
  const double from_bos = log_p(bos, 0, 'x') + log_p('x', 1, 'y');
  const runtime::ModelWeights w = resolve(f, "base", kCausal);
  text::ByteTokenizer tokenizer;
  const std::vector<runtime::ScoredModel> models = {{&w, &tokenizer}};
  runtime::ContinuationScorer scorer(f.backend());
  auto scores =
      scorer.score(models, std::vector<runtime::ContinuationQuery>{{"ab", "cd"}, {"", "xy"}});
  REQUIRE(scores.is_ok());
  // Tolerance: the kernels work in float (layernorm, logits); a log-probability of
  // magnitude ~5 keeps about 6 significant digits.
  CHECK((*scores)[0][0] == Approx(expected).epsilon(1e-5));
  CHECK((*scores)[0][1] == Approx(from_bos).epsilon(1e-5));
}

TEST_CASE("the input is truncated from the left, the continuation never") {
  test::Family f(byte_architecture(spec::ArchitectureKind::kDecoder, 8));
  add_descendants(f);
  f.materialise();
  f.randomise(9);
  text::ByteTokenizer tokenizer;
  const runtime::ModelWeights base = resolve(f, "base", kCausal);
  const runtime::ModelWeights prompt = resolve(f, "prompt", kCausal);  // 2 prompt tokens
  const std::vector<runtime::ScoredModel> models = {{&base, &tokenizer}, {&prompt, &tokenizer}};
  // A causal row holds [BOS] + input + continuation minus its last token: 8 positions keep
  // the last 6 input tokens for the base and, after 2 prompt tokens, the last 4 for prompt.
  const std::vector<runtime::ContinuationQuery> queries = {{"0123456789", "ab"},
                                                           {"456789", "ab"},
                                                           {"6789", "ab"},
                                                           {"0123456789", "abcdefgh"},
                                                           {"", "abcdefgh"}};
  runtime::ContinuationScorer scorer(f.backend());
  auto s = scorer.score(models, std::span(queries.data(), 3));
  REQUIRE(s.is_ok());
  CHECK((*s)[0][0] == Approx((*s)[0][1]).margin(1e-6));
  CHECK((*s)[0][0] != Approx((*s)[0][2]).margin(1e-4));  // the cut is exactly where it says
  CHECK((*s)[1][0] == Approx((*s)[1][2]).margin(1e-6));
  // A continuation that fills the base's row exactly leaves no input: it is scored from
  // [BOS] alone. For the prompt model it does not fit.
  auto fits = scorer.score(std::span(models.data(), 1), std::span(queries.data() + 3, 2));
  REQUIRE(fits.is_ok());
  CHECK((*fits)[0][0] == Approx((*fits)[0][1]).margin(1e-6));
  auto too_long = scorer.score(models, std::span(queries.data() + 3, 1));
  REQUIRE_FALSE(too_long.is_ok());
  CHECK_THAT(too_long.status().message(),
             Catch::Contains("model 'prompt' cannot score the continuation \"abcdefgh\"") &&
                 Catch::Contains("shorten the continuation"));
}

TEST_CASE("masked LM pseudo-log-likelihood: one masked row per continuation token") {
  test::Family f(byte_architecture(spec::ArchitectureKind::kEncoder));
  add_descendants(f);
  f.materialise();
  f.randomise(4);
  text::ByteTokenizer tokenizer;
  const text::SpecialTokens& sp = tokenizer.special_tokens();
  const runtime::ModelWeights w = resolve(f, "bottleneck", kMasked);
  const std::vector<runtime::ScoredModel> models = {{&w, &tokenizer}};
  auto scores = runtime::ContinuationScorer(f.backend())
                    .score(models, std::vector<runtime::ContinuationQuery>{{"dog", " woof"}});
  REQUIRE(scores.is_ok());
  // By hand: [CLS] d o g ' ' w o o f [SEP] with position 4 + j masked, j = 0..4; each row
  // its own forward pass (bidirectional attention: every token sees the others).
  const std::vector<std::int32_t> continuation = bytes(" woof");
  double expected = 0.0;
  for (std::size_t j = 0; j < continuation.size(); ++j) {
    std::vector<std::int32_t> row = {sp.cls};
    for (std::int32_t t : bytes("dog woof")) row.push_back(t);
    row.push_back(sp.sep);
    const int position = static_cast<int>(4 + j);
    row[static_cast<std::size_t>(position)] = sp.mask;
    runtime::SegmentedTransformer net(f.backend());
    runtime::FamilyBatch batch{.segments = {{.model = &w,
                                             .batch = 1,
                                             .length = static_cast<int>(row.size()),
                                             .tokens = row.data(),
                                             .lengths = nullptr}}};
    auto out = net.forward(batch);
    REQUIRE(out.is_ok());
    const std::vector<int> positions = {position};
    expected += sum_log_softmax((*out)[0].logits, 0, positions, std::span(&continuation[j], 1));
  }
  CHECK((*scores)[0][0] == Approx(expected).margin(1e-5));
  // Masked rows need [CLS] and [SEP]: 16 positions hold 14 continuation tokens.
  auto too_long =
      runtime::ContinuationScorer(f.backend())
          .score(models, std::vector<runtime::ContinuationQuery>{{"", std::string(15, 'a')}});
  CHECK_FALSE(too_long.is_ok());
  CHECK(runtime::ContinuationScorer(f.backend())
            .score(models, std::vector<runtime::ContinuationQuery>{{"", std::string(14, 'a')}})
            .is_ok());
}

TEST_CASE("scoring rejects classifiers, mismatched objectives and empty continuations") {
  test::Family f(byte_architecture(spec::ArchitectureKind::kDecoder));
  spec::Adaptation head;
  head.head = test::two_labels();
  f.add("classifier", "base", head);
  f.materialise();
  text::ByteTokenizer tokenizer;
  runtime::ContinuationScorer scorer(f.backend());
  const std::vector<runtime::ContinuationQuery> queries = {{"a", "b"}};
  const runtime::ModelWeights classifier =
      resolve(f, "classifier", spec::Objective::kClassification);
  CHECK_FALSE(
      scorer.score(std::vector<runtime::ScoredModel>{{&classifier, &tokenizer}}, queries).is_ok());
  const runtime::ModelWeights masked = resolve(f, "base", kMasked);  // a decoder scores causally
  auto wrong = scorer.score(std::vector<runtime::ScoredModel>{{&masked, &tokenizer}}, queries);
  REQUIRE_FALSE(wrong.is_ok());
  CHECK_THAT(wrong.status().message(), Catch::Contains("a decoder scores with causal LM"));
  const runtime::ModelWeights causal = resolve(f, "base", kCausal);
  const std::vector<runtime::ScoredModel> ok = {{&causal, &tokenizer}};
  auto empty = scorer.score(ok, std::vector<runtime::ContinuationQuery>{{"a", ""}});
  REQUIRE_FALSE(empty.is_ok());
  CHECK_THAT(empty.status().message(), Catch::Contains("is empty"));
  CHECK_FALSE(scorer.score(ok, queries, {.chunk_size = 0}).is_ok());
  CHECK(scorer.score(ok, queries).is_ok());
}
