// The heads beyond single-label classification (regression, multi-label, token
// classification), class-weighted losses and sentence pairs' token types: gradients by
// finite differences, losses against their definitions computed here, and co-batching
// with a classifier equal to each model alone.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/transformer.h"
#include "runtime_family.h"
#include "runtime_gradcheck.h"
#include "runtime_model_gradcheck.h"

using namespace scion;
using namespace scion::runtime;
using scion::test::Family;

namespace {

constexpr int kB = 3, kT = 5;

// BERT as imported: token types, exact GELU, the pooler (which token classification skips).
spec::Architecture bert_architecture() {
  spec::Architecture a =
      test::tiny_architecture(spec::ArchitectureKind::kEncoder, spec::NormPlacement::kPost);
  a.type_vocab_size = 2;
  a.pooler = true;
  a.activation = spec::Activation::kGeluErf;
  a.norm_eps = 1e-12f;
  a.hf_model_type = "bert";
  return a;
}

spec::HeadSpec head(spec::HeadTask task, std::vector<std::string> labels) {
  spec::HeadSpec h;
  h.task = task;
  h.labels = std::move(labels);
  return h;
}

// Inputs and every kind of target for kB sequences of kT tokens (the second padded).
struct TaskBatch {
  std::vector<std::int32_t> tokens, lengths, labels, tags, types;
  std::vector<float> values, bits;
  TaskBatch(int V, int K, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int i = 0; i < kB * kT; ++i) tokens.push_back(static_cast<std::int32_t>(rng() % V));
    for (int b = 0; b < kB; ++b) lengths.push_back(b % 2 ? kT - 2 : kT);
    for (int b = 0; b < kB; ++b) labels.push_back(static_cast<std::int32_t>(rng() % K));
    for (int b = 0; b < kB; ++b)
      for (int t = 0; t < kT; ++t) {
        // A tag on some real positions only, as on each word's first sub-word.
        const bool tagged = t > 0 && t < lengths[b] - 1 && t % 2 == 1;
        tags.push_back(tagged ? static_cast<std::int32_t>(rng() % K) : -100);
        types.push_back(t >= 3 ? 1 : 0);  // a pair: the second text from position 3
      }
    for (int i = 0; i < kB * K; ++i) {
      values.push_back(normal(rng));
      bits.push_back(static_cast<float>(rng() % 2));
    }
  }
  Segment segment(const ModelWeights* model, spec::HeadTask task, bool pair = false) const {
    Segment s{.model = model,
              .batch = kB,
              .length = kT,
              .tokens = tokens.data(),
              .lengths = lengths.data(),
              .dropout_seed = 7};
    switch (task) {
      case spec::HeadTask::kClassification:
        s.targets = labels.data();
        break;
      case spec::HeadTask::kTokenClassification:
        s.targets = tags.data();
        break;
      case spec::HeadTask::kRegression:
        s.values = values.data();
        break;
      case spec::HeadTask::kMultiLabel:
        s.values = bits.data();
        break;
    }
    if (pair) s.token_types = types.data();
    return s;
  }
};

// d loss / d θ of every trainable tensor of `name` against central differences.
void check_gradients(Family& f, const std::string& name, const Segment& segment) {
  const int checked = test::check_segment_gradients(
      f, name, segment, [](const ParameterSpec& p) { return p.trainable; }, {.max_checks = 24});
  CHECK(checked > 0);
}

// The model's logits of `segment`, on the host.
std::vector<float> logits_of(Family& f, const Segment& segment, float* loss = nullptr) {
  SegmentedTransformer net(f.backend());
  auto out = net.forward({{segment}, false});
  REQUIRE(out.is_ok());
  if (loss) *loss = out->at(0).loss;
  return copy_to_host(f.backend(), out->at(0).logits);
}

Family task_family() {
  Family f(bert_architecture());
  const std::pair<const char*, spec::HeadSpec> heads[] = {
      {"classify", head(spec::HeadTask::kClassification, {"a", "b", "c"})},
      {"regress", head(spec::HeadTask::kRegression, {"x", "y", "z"})},
      {"multi", head(spec::HeadTask::kMultiLabel, {"a", "b", "c"})},
      {"tag", head(spec::HeadTask::kTokenClassification, {"O", "B-X", "I-X"})}};
  for (const auto& [name, h] : heads) {
    spec::Adaptation ad;
    ad.set(spec::LoraSpec{
        .rank = 2, .alpha = 4.0f, .dropout = 0.0f, .targets = {"q", "v"}, .layers = {}});
    ad.head = h;
    f.add(name, "base", ad);
  }
  spec::Adaptation full;  // trains the token-type embeddings a pair's second text reads
  full.full = spec::FullSpec{};
  full.head = head(spec::HeadTask::kRegression, {"score"});
  f.add("full", "base", full);
  f.materialise(3);
  f.randomise(4);
  return f;
}

}  // namespace

TEST_CASE("task heads: gradients match finite differences") {
  Family f = task_family();
  const TaskBatch data(16, 3, 21);
  const std::pair<const char*, spec::HeadTask> models[] = {
      {"classify", spec::HeadTask::kClassification},
      {"regress", spec::HeadTask::kRegression},
      {"multi", spec::HeadTask::kMultiLabel},
      {"tag", spec::HeadTask::kTokenClassification}};
  for (const auto& [name, task] : models) {
    SECTION(name) {
      ModelWeights w = f.weights(name);
      CHECK(w.classifier.task == task);
      check_gradients(f, name, data.segment(&w, task, /*pair=*/true));
    }
  }
  SECTION("a trained trunk reads a pair's token types") {
    const TaskBatch one(16, 1, 22);
    ModelWeights w = f.weights("full");
    check_gradients(f, "full", one.segment(&w, spec::HeadTask::kRegression, /*pair=*/true));
  }
}

TEST_CASE("class weights scale each target's loss and gradient by its class's weight") {
  Family f = task_family();
  const TaskBatch data(16, 3, 23);
  const std::vector<float> weights = {0.5f, 2.0f, 1.25f};
  auto arena = Arena::create({{"w", {3}, DType::kF32}}, f.backend(), "class weights");
  REQUIRE(arena.is_ok());
  std::copy(weights.begin(), weights.end(), arena->view("w").f32());
  for (const auto& [name, task] : {std::pair{"classify", spec::HeadTask::kClassification},
                                   std::pair{"tag", spec::HeadTask::kTokenClassification}}) {
    SECTION(name) {
      ModelWeights w = f.weights(name);
      const Segment segment = data.segment(&w, task);
      const std::vector<float> logits = logits_of(f, segment);
      w.classifier.class_weights = arena->view("w").f32();
      w.classifier.host_class_weights = weights;
      // torch.nn.CrossEntropyLoss(weight=w): Σ w[y]·(−log p_y) / Σ w[y].
      const std::vector<std::int32_t>& targets =
          task == spec::HeadTask::kClassification ? data.labels : data.tags;
      REQUIRE(logits.size() == targets.size() * 3);  // a row of 3 per sequence or position
      double sum = 0, total = 0;
      for (std::size_t i = 0; i < targets.size(); ++i) {
        if (targets[i] == -100) continue;
        const float* z = logits.data() + i * 3;
        const double top = std::max({z[0], z[1], z[2]});
        const double lse =
            top + std::log(std::exp(z[0] - top) + std::exp(z[1] - top) + std::exp(z[2] - top));
        sum += weights[static_cast<std::size_t>(targets[i])] * (lse - z[targets[i]]);
        total += weights[static_cast<std::size_t>(targets[i])];
      }
      float loss = 0;
      logits_of(f, segment, &loss);
      CHECK(loss == Approx(sum / total).epsilon(1e-5));
      check_gradients(f, name, segment);
    }
  }
}

TEST_CASE("regression and multi-label losses are torch's MSE and BCE-with-logits means") {
  Family f = task_family();
  const TaskBatch data(16, 3, 24);
  SECTION("regression: mean squared error over every value") {
    ModelWeights w = f.weights("regress");
    float loss = 0;
    const std::vector<float> predicted =
        logits_of(f, data.segment(&w, spec::HeadTask::kRegression), &loss);
    double sum = 0;
    for (std::size_t i = 0; i < predicted.size(); ++i)
      sum += (predicted[i] - data.values[i]) * (predicted[i] - data.values[i]);
    CHECK(loss == Approx(sum / static_cast<double>(predicted.size())).epsilon(1e-5));
  }
  SECTION("multi-label: binary cross-entropy over every label") {
    ModelWeights w = f.weights("multi");
    float loss = 0;
    const std::vector<float> z = logits_of(f, data.segment(&w, spec::HeadTask::kMultiLabel), &loss);
    double sum = 0;
    for (std::size_t i = 0; i < z.size(); ++i) {
      const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(z[i])));
      sum -= data.bits[i] * std::log(p) + (1 - data.bits[i]) * std::log(1 - p);
    }
    CHECK(loss == Approx(sum / static_cast<double>(z.size())).epsilon(1e-5));
  }
  SECTION("token classification: one row of logits per position") {
    ModelWeights w = f.weights("tag");
    const std::vector<float> z =
        logits_of(f, data.segment(&w, spec::HeadTask::kTokenClassification));
    CHECK(z.size() == static_cast<std::size_t>(kB * kT * 3));
  }
}

TEST_CASE("every task head co-batched with a classifier gets its own loss and gradients") {
  Family f = task_family();
  const TaskBatch data(16, 3, 25);
  const std::pair<const char*, spec::HeadTask> models[] = {
      {"classify", spec::HeadTask::kClassification},
      {"regress", spec::HeadTask::kRegression},
      {"multi", spec::HeadTask::kMultiLabel},
      {"tag", spec::HeadTask::kTokenClassification}};
  std::vector<ModelWeights> weights;
  for (const auto& [name, task] : models) weights.push_back(f.weights(name));
  SegmentedTransformer net(f.backend());
  std::map<std::string, std::pair<float, std::map<std::string, std::vector<float>>>> alone;
  const auto grads_of = [&](const std::string& name) {
    std::map<std::string, std::vector<float>> g;
    for (const auto& [param, view] : f.grads(name).binding().views())
      g[param] = std::vector<float>(view.f32(), view.f32() + view.numel());
    return g;
  };
  std::vector<Segment> segments;
  for (std::size_t m = 0; m < weights.size(); ++m) {
    segments.push_back(data.segment(&weights[m], models[m].second, /*pair=*/true));
    f.grads(models[m].first).zero();
    auto out = net.forward({{segments.back()}, true});
    REQUIRE(out.is_ok());
    REQUIRE(net.backward().is_ok());
    alone[models[m].first] = {out->at(0).loss, grads_of(models[m].first)};
  }
  for (const auto& [name, task] : models) f.grads(name).zero();
  auto out = net.forward({segments, true});
  REQUIRE(out.is_ok());
  REQUIRE(net.backward().is_ok());
  for (std::size_t m = 0; m < weights.size(); ++m) {
    const std::string name = models[m].first;
    INFO(name);
    CHECK(out->at(m).loss == Approx(alone[name].first).epsilon(1e-5));
    for (const auto& [param, g] : grads_of(name)) {
      INFO(param);
      const std::vector<float>& a = alone[name].second.at(param);
      double diff = 0, norm = 0;
      for (std::size_t i = 0; i < g.size(); ++i) {
        diff += (g[i] - a[i]) * (g[i] - a[i]);
        norm += a[i] * a[i];
      }
      // Rows are independent in every kernel; only BLAS blocking may reorder sums.
      CHECK(std::sqrt(diff) <= 1e-5 * std::sqrt(norm) + 1e-12);
    }
  }
}

TEST_CASE("a batch checks task targets: values for value heads, tags in range, token types") {
  Family f = task_family();
  const TaskBatch data(16, 3, 26);
  SegmentedTransformer net(f.backend());
  ModelWeights multi = f.weights("multi");
  Segment s = data.segment(&multi, spec::HeadTask::kMultiLabel);
  std::vector<float> bad = data.bits;
  bad[1] = 2.0f;
  s.values = bad.data();
  auto out = net.forward({{s}, true});
  REQUIRE_FALSE(out.is_ok());
  CHECK_THAT(out.status().message(), Catch::Contains("outside 0..1"));
  ModelWeights regress = f.weights("regress");
  Segment r = data.segment(&regress, spec::HeadTask::kRegression);
  r.targets = data.labels.data();
  out = net.forward({{r}, true});
  REQUIRE_FALSE(out.is_ok());
  CHECK_THAT(out.status().message(), Catch::Contains("trains on values"));
  ModelWeights tag = f.weights("tag");
  Segment t = data.segment(&tag, spec::HeadTask::kTokenClassification, true);
  std::vector<std::int32_t> types = data.types;
  types[0] = 2;
  t.token_types = types.data();
  out = net.forward({{t}, true});
  REQUIRE_FALSE(out.is_ok());
  CHECK_THAT(out.status().message(), Catch::Contains("token type 2"));
}
