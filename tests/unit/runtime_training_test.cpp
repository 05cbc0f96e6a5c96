// Co-batched segments equal separate runs; optimizers; overfitting; determinism.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/data/batcher.h"
#include "runtime/model/optimizer.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/transformer.h"
#include "runtime_family.h"
#include "runtime_gradcheck.h"

using namespace scion;
using namespace scion::runtime;
using scion::test::Family;
using scion::test::TinyBatch;

namespace {

struct Snapshot {
  float loss;
  std::map<std::string, std::vector<float>> grads;
};

Snapshot snapshot(Family& f, const std::string& model, float loss) {
  Snapshot s{loss, {}};
  for (const auto& [name, view] : f.grads(model).binding().views())
    s.grads[name] = std::vector<float>(view.f32(), view.f32() + view.numel());
  return s;
}

// ‖a − b‖ / ‖b‖ over one tensor.
double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

}  // namespace

TEST_CASE("a 3-segment batch gives each model exactly its own losses and gradients") {
  auto arch = test::tiny_architecture();
  arch.dropout = 0.1f;  // masks depend on (segment seed, row in segment): same alone or not
  Family f(arch);
  spec::Adaptation lora;
  lora.set(spec::LoraSpec{
      .rank = 2, .alpha = 4.0f, .dropout = 0.1f, .targets = {"q", "v", "ffn_out"}, .layers = {}});
  lora.head = test::two_labels();
  f.add("lora", "base", lora);
  spec::Adaptation prefix;
  prefix.prefix = spec::PrefixSpec{.virtual_tokens = 3, .layers = {}, .reparam_hidden = 0};
  prefix.head = test::two_labels(spec::Pooling::kMean);
  f.add("prefix", "base", prefix);
  spec::Adaptation bottleneck;
  bottleneck.set(spec::BottleneckSpec{.reduction = 2, .placement = spec::BottleneckPlacement::kBoth, .layers = {}});
  bottleneck.prompt = spec::PromptSpec{.virtual_tokens = 2, .init = spec::PromptInit::kRandom, .init_text = {}};
  bottleneck.head = test::two_labels();
  f.add("bottleneck", "base", bottleneck);
  f.materialise(5);
  f.randomise(6);
  ModelWeights wl = f.weights("lora"), wp = f.weights("prefix"), wb = f.weights("bottleneck");
  // Different batch sizes and lengths per segment.
  const TinyBatch dl(3, 6, 16, 2, 11), dp(2, 4, 16, 2, 12), db(4, 5, 16, 2, 13);
  const Segment sl = dl.segment(&wl, 3, 6, 101), sp = dp.segment(&wp, 2, 4, 102),
                sb = db.segment(&wb, 4, 5, 103);
  SegmentedTransformer net(f.backend());
  std::map<std::string, Snapshot> alone;
  for (const auto& [name, seg] : std::vector<std::pair<std::string, Segment>>{{"lora", sl}, {"prefix", sp}, {"bottleneck", sb}}) {
    f.grads(name).zero();
    auto out = net.forward({{seg}, true});
    REQUIRE(out.is_ok());
    REQUIRE(net.backward().is_ok());
    alone[name] = snapshot(f, name, out->at(0).loss);
  }
  for (const char* name : {"lora", "prefix", "bottleneck"}) f.grads(name).zero();
  auto out = net.forward({{sl, sp, sb}, true});
  REQUIRE(out.is_ok());
  REQUIRE(net.backward().is_ok());
  const char* names[] = {"lora", "prefix", "bottleneck"};
  for (int s = 0; s < 3; ++s) {
    const Snapshot together = snapshot(f, names[s], out->at(s).loss);
    INFO(names[s]);
    CHECK(together.loss == Approx(alone[names[s]].loss).epsilon(1e-5));
    REQUIRE(together.grads.size() == alone[names[s]].grads.size());
    for (const auto& [param, g] : together.grads) {
      INFO(param);
      // Rows are independent in every kernel; only BLAS blocking over a taller matrix
      // may reorder sums, so a 1e-5 relative bound holds with ample margin.
      CHECK(relative_error(g, alone[names[s]].grads.at(param)) < 1e-5);
    }
    double norm = 0;
    for (const auto& [param, g] : together.grads)
      for (float x : g) norm += std::fabs(x);
    CHECK(norm > 0);
  }
}

TEST_CASE("a batch rejects mixed trunks and a trained trunk among several segments") {
  Family f(test::tiny_architecture());
  spec::Adaptation bitfit;
  bitfit.bitfit = spec::BitfitSpec{};
  bitfit.head = test::two_labels();
  f.add("bitfit", "base", bitfit);
  spec::Adaptation head;
  head.head = test::two_labels();
  f.add("head", "base", head);
  f.materialise();
  ModelWeights wb = f.weights("bitfit"), wh = f.weights("head");
  const TinyBatch d(2, 4, 16, 2, 1);
  SegmentedTransformer net(f.backend());
  auto out = net.forward({{d.segment(&wb, 2, 4, 0), d.segment(&wh, 2, 4, 0)}, true});
  REQUIRE(!out.is_ok());
  CHECK(out.status().message().find("bitfit") != std::string::npos);

  Family other(test::tiny_architecture());
  other.add("head", "base", head);
  other.materialise();
  ModelWeights wo = other.weights("head");
  auto mixed = net.forward({{d.segment(&wh, 2, 4, 0), d.segment(&wo, 2, 4, 0)}, false});
  REQUIRE(!mixed.is_ok());
  CHECK(mixed.status().message().find("trunk") != std::string::npos);
  std::vector<std::int32_t> bad(8, 99);
  auto out_of_range = net.forward({{{&wh, 2, 4, bad.data(), nullptr, nullptr, 0}}, false});
  REQUIRE(!out_of_range.is_ok());
  CHECK(out_of_range.status().message().find("99") != std::string::npos);
}

TEST_CASE("AdamW and SGD follow their update rules; clipping bounds the global norm") {
  auto backend = make_cpu_backend();
  std::vector<float> p = {1.0f, -2.0f}, g = {0.5f, 0.25f};
  TrainableTensor t{"w", Tensor{p.data(), {2}}, Tensor{g.data(), {2}}};
  spec::OptimizerSpec adam;
  adam.weight_decay = 0.1f;
  const auto opt_owner = Optimizer::create(*backend, adam, {t}, "a test").value();
  Optimizer& opt = *opt_owner;
  opt.step(0.01f);
  // step 1: m̂ = g, v̂ = g², update = g/(|g|+eps) = sign(g); decay θ·lr·wd.
  CHECK(p[0] == Approx(1.0f - 0.01f * (1.0f + 0.1f * 1.0f)).epsilon(1e-6));
  CHECK(p[1] == Approx(-2.0f - 0.01f * (1.0f + 0.1f * -2.0f)).epsilon(1e-6));

  std::vector<float> q = {1.0f}, h = {2.0f};
  spec::OptimizerSpec sgd;
  sgd.kind = spec::OptimizerKind::kSgd;
  sgd.momentum = 0.5f;
  const auto opt2_owner = Optimizer::create(*backend, sgd, {{"w", Tensor{q.data(), {1}}, Tensor{h.data(), {1}}}}, "a test").value();
  Optimizer& opt2 = *opt2_owner;
  opt2.step(0.1f);  // v = 2, θ = 1 - 0.2
  CHECK(q[0] == Approx(0.8f));
  opt2.step(0.1f);  // v = 0.5·2 + 2 = 3, θ = 0.8 - 0.3
  CHECK(q[0] == Approx(0.5f));

  // Clipping: plain SGD at lr 1 moves each parameter by minus its clipped gradient.
  std::vector<float> pa = {0.0f, 0.0f}, pb = {0.0f}, a = {3.0f, 0.0f}, b = {4.0f};
  const std::vector<TrainableTensor> grads = {{"a", Tensor{pa.data(), {2}}, Tensor{a.data(), {2}}},
                                              {"b", Tensor{pb.data(), {1}}, Tensor{b.data(), {1}}}};
  spec::OptimizerSpec clipped;
  clipped.kind = spec::OptimizerKind::kSgd;
  clipped.momentum = 0.0f;
  clipped.weight_decay = 0.0f;
  clipped.grad_clip = 1.0f;
  CHECK(Optimizer::create(*backend, clipped, grads, "a test").value()->step(1.0f) == Approx(5.0f));
  CHECK(a[0] == Approx(0.6f).epsilon(1e-5));
  CHECK(b[0] == Approx(0.8f).epsilon(1e-5));
  CHECK(pa[0] == Approx(-0.6f).epsilon(1e-5));
  CHECK(pb[0] == Approx(-0.8f).epsilon(1e-5));
  clipped.grad_clip = 10.0f;  // below the limit: the norm is reported, nothing is scaled
  CHECK(Optimizer::create(*backend, clipped, grads, "a test").value()->step(1.0f) ==
        Approx(1.0f).epsilon(1e-5));
  CHECK(a[0] == Approx(0.6f).epsilon(1e-5));
}

namespace {

// Trains `model` for `steps` AdamW steps on one fixed batch; returns the losses.
std::vector<float> train(Family& f, const std::string& model, int steps, float lr, bool dropout,
                         spec::Objective objective = spec::Objective::kClassification) {
  ModelWeights w = f.weights(model, objective);
  const auto table = parameter_table(f.workspace(), f.model(model));
  spec::OptimizerSpec spec;
  spec.weight_decay = 0.01f;
  spec.grad_clip = 1.0f;
  const auto opt_owner = Optimizer::create(f.backend(), spec, trainable_tensors(table, f.params(model), f.grads(model).binding()), "a test").value();
  Optimizer& opt = *opt_owner;
  const TinyBatch d(4, 6, 16, 2, 21);
  const bool lm = objective != spec::Objective::kClassification;
  SegmentedTransformer net(f.backend());
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    auto out = net.forward({{d.segment(&w, 4, 6, 1000 + step, lm)}, dropout});
    REQUIRE(out.is_ok());
    losses.push_back(out->at(0).loss);
    f.grads(model).zero();
    REQUIRE(net.backward().is_ok());
    opt.step(lr);
  }
  return losses;
}

}  // namespace

TEST_CASE("an optimizer step leaves frozen parameters untouched") {
  Family f(test::tiny_architecture());
  spec::Adaptation lora;
  lora.set(spec::LoraSpec{
      .rank = 2, .alpha = 4.0f, .dropout = 0.0f, .targets = {"q", "v"}, .layers = {}});
  lora.head = test::two_labels();
  f.add("lora", "base", lora);
  f.materialise(3);
  std::map<std::string, std::vector<float>> before;
  for (const auto& [name, view] : f.params("lora").views())
    before[name] = std::vector<float>(view.f32(), view.f32() + view.numel());
  train(f, "lora", 2, 1e-2f, false);
  for (const ParameterSpec& p : parameter_table(f.workspace(), f.model("lora"))) {
    const Tensor& v = *f.params("lora").find(p.name);
    const bool same = std::memcmp(v.data, before[p.name].data(), v.bytes()) == 0;
    INFO(p.name);
    CHECK(same == !p.trainable);
  }
}

TEST_CASE("a small model overfits a tiny dataset") {
  SECTION("full training, masked LM") {
    Family f(test::tiny_architecture());
    f.materialise(4);
    const auto losses = train(f, "base", 150, 1e-2f, false, spec::Objective::kMaskedLm);
    INFO("first " << losses.front() << " last " << losses.back());
    CHECK(losses.front() > 2.0f);  // ≈ ln 16 at initialisation
    CHECK(losses.back() < 0.1f);
  }
  SECTION("LoRA + head on a frozen trunk, classification") {
    Family f(test::tiny_architecture());
    spec::Adaptation lora;
    lora.set(spec::LoraSpec{
        .rank = 4, .alpha = 8.0f, .dropout = 0.0f, .targets = {"q", "v"}, .layers = {}});
    lora.head = test::two_labels();
    f.add("lora", "base", lora);
    f.materialise(4);
    f.randomise(8);
    const auto losses = train(f, "lora", 100, 3e-2f, false);
    INFO("first " << losses.front() << " last " << losses.back());
    CHECK(losses.back() < 0.05f);
  }
}

TEST_CASE("same seed gives bit-identical parameters, on one thread or two") {
  auto run = [](int threads) {
    auto arch = test::tiny_architecture();
    arch.dropout = 0.1f;
    Family f(arch, threads);
    spec::Adaptation lora;
    lora.set(spec::LoraSpec{
        .rank = 2, .alpha = 4.0f, .dropout = 0.1f, .targets = {"q", "ffn_in"}, .layers = {}});
    lora.head = test::two_labels();
    f.add("lora", "base", lora);
    f.materialise(42);
    train(f, "lora", 5, 1e-2f, true);
    std::vector<float> all;
    for (const auto& [name, view] : f.params("lora").views()) all.insert(all.end(), view.f32(), view.f32() + view.numel());
    return all;
  };
  const auto first = run(2);
  const auto second = run(2);
  CHECK(first == second);
  const auto serial = run(1);
  CHECK(serial == first);
}

TEST_CASE("shared modules bind the very same storage") {
  Family f(test::tiny_architecture());
  spec::Adaptation head;
  head.head = test::two_labels();
  f.add("a", "base", head);
  f.add("b", "base", head);
  f.materialise(3);
  // A `share` of the head between a and b: b's names point at a's buffers.
  ParameterBinding b_params = f.params("b");
  for (const char* suffix : {".weight", ".bias"})
    b_params.bind(std::string("head.b") + suffix, *f.params("a").find(std::string("head.a") + suffix));
  auto wb = resolve_model(f.workspace(), f.model("b"), spec::Objective::kClassification, b_params,
                          &f.grads("b").binding());
  REQUIRE(wb.is_ok());
  const Tensor& a_head = *f.params("a").find("head.a.weight");
  CHECK(wb->classifier.linear.weight == a_head.f32());
  const std::vector<float> before(a_head.f32(), a_head.f32() + a_head.numel());
  const auto table = parameter_table(f.workspace(), f.model("b"));
  const auto opt_owner = Optimizer::create(f.backend(), spec::OptimizerSpec{}, trainable_tensors(table, b_params, f.grads("b").binding()), "a test").value();
  Optimizer& opt = *opt_owner;
  const TinyBatch d(2, 4, 16, 2, 1);
  SegmentedTransformer net(f.backend());
  REQUIRE(net.forward({{d.segment(&*wb, 2, 4, 0)}, true}).is_ok());
  f.grads("b").zero();
  REQUIRE(net.backward().is_ok());
  opt.step(0.1f);
  CHECK(std::vector<float>(a_head.f32(), a_head.f32() + a_head.numel()) != before);
}

TEST_CASE("retrained inherited parameters start from the parent's values in their own storage") {
  Family f(test::tiny_architecture());
  spec::Adaptation bitfit;
  bitfit.bitfit = spec::BitfitSpec{};
  bitfit.head = test::two_labels();
  f.add("bitfit", "base", bitfit);
  f.materialise(5);
  const Tensor& mine = *f.params("bitfit").find("blk.0.ffn_in.bias");
  const Tensor& parents = *f.params("base").find("blk.0.ffn_in.bias");
  CHECK(mine.data != parents.data);
  CHECK(std::memcmp(mine.data, parents.data, mine.bytes()) == 0);
  CHECK(f.params("bitfit").find("blk.0.ffn_in.weight")->data ==
        f.params("base").find("blk.0.ffn_in.weight")->data);
}

TEST_CASE("prompt embeddings can start from text token embeddings") {
  Family f(test::tiny_architecture());
  spec::Adaptation prompt;
  prompt.prompt = spec::PromptSpec{.virtual_tokens = 3, .init = spec::PromptInit::kText, .init_text = "ab"};
  prompt.head = test::two_labels();
  f.add("prompt", "base", prompt);
  f.materialise(5);
  const Tensor& p = *f.params("prompt").find("prompt.prompt.embeddings");
  const Tensor& emb = *f.params("prompt").find("tok_emb.weight");
  init_prompt_from_tokens(f.backend(), p, emb, {7, 2});
  const int C = 8;
  for (int c = 0; c < C; ++c) {
    CHECK(p.f32()[c] == emb.f32()[7 * C + c]);
    CHECK(p.f32()[C + c] == emb.f32()[2 * C + c]);
    CHECK(p.f32()[2 * C + c] == emb.f32()[7 * C + c]);
  }
}

TEST_CASE("an allocation the backend cannot make is an out-of-memory Status, not a crash") {
  auto backend = make_cpu_backend(1);
  // 2^62 bytes: more than any address space, whatever the kernel's overcommit policy.
  auto huge = Arena::create({{"small", {16}, DType::kF32}, {"huge", {std::int64_t{1} << 40, std::int64_t{1} << 20}, DType::kF32}},
                            *backend, "the parameters of 'giant'");
  REQUIRE_FALSE(huge.is_ok());
  CHECK(huge.status().code() == StatusCode::kOutOfMemory);
  CHECK_THAT(huge.status().message(), Catch::StartsWith("out of memory: needs 4194304.0 TiB for the "
                                                        "parameters of 'giant'") &&
                                          Catch::Contains("available"));
  auto fine = Arena::create({{"a", {3, 5}, DType::kF32}}, *backend, "a test");
  REQUIRE(fine.is_ok());
  CHECK(fine->view("a").f32()[14] == 0.0f);  // zero-filled
}

TEST_CASE("recomputed activations give the gradients of kept ones, bit for bit") {
  for (const spec::NormPlacement norm : {spec::NormPlacement::kPre, spec::NormPlacement::kPost}) {
    INFO((norm == spec::NormPlacement::kPre ? "pre-norm" : "post-norm"));
    auto arch = test::tiny_architecture(spec::ArchitectureKind::kEncoder, norm);
    arch.layers = 3;      // two blocks below the top one are run again
    arch.dropout = 0.1f;  // and must draw the same masks again
    Family f(arch);
    f.materialise(3);
    f.randomise(4);
    // The whole trunk trains (every block, the embeddings): every block is recomputed.
    ModelWeights w = f.weights("base", spec::Objective::kMaskedLm);
    const TinyBatch data(3, 7, 16, 2, 21);
    const Segment seg = data.segment(&w, 3, 7, 202, /*lm=*/true);
    SegmentedTransformer net(f.backend());
    std::map<std::string, Snapshot> by_mode;
    for (const bool recompute : {false, true}) {
      f.grads("base").zero();
      auto out = net.forward({.segments = {seg}, .training = true, .recompute = recompute});
      REQUIRE(out.is_ok());
      REQUIRE(net.backward().is_ok());
      by_mode[recompute ? "recompute" : "kept"] = snapshot(f, "base", out->at(0).loss);
    }
    const Snapshot& kept = by_mode.at("kept");
    const Snapshot& recomputed = by_mode.at("recompute");
    CHECK(recomputed.loss == kept.loss);
    REQUIRE(recomputed.grads.size() == kept.grads.size());
    double norm_sum = 0;
    for (const auto& [param, g] : kept.grads) {
      INFO(param);
      CHECK(recomputed.grads.at(param) == g);
      for (float x : g) norm_sum += std::fabs(x);
    }
    CHECK(norm_sum > 0);
  }
}

// Prompt/completion training (runtime/data/batcher.h): the loss is the completion's alone.
// It equals a mean negative log-likelihood computed here from the logits of an inference
// pass, over the completion tokens and EOS only, and its gradient in every trained
// parameter is that function's finite-difference gradient: no prompt position adds to it.
TEST_CASE("prompt tokens get no gradient: the loss and its gradient are the completion's") {
  Family f(test::tiny_architecture(spec::ArchitectureKind::kDecoder));
  spec::Adaptation lora;
  lora.set(spec::LoraSpec{
      .rank = 2, .alpha = 4.0f, .dropout = 0.0f, .targets = {"q", "v", "ffn_out"}, .layers = {}});
  f.add("lora", "base", lora);
  f.materialise(3);
  f.randomise(4);
  const ModelWeights w = f.weights("lora", spec::Objective::kCausalLm);
  data::TokenizedDataset data;
  data.specials = {.pad = 0, .cls = 14, .sep = 15};
  data.vocab_size = 16;
  data.rows = {{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}};
  data.prompt_lengths = {3, 2};  // prompts {1, 2, 3} and {6, 7}
  const data::Batch batch =
      data::make_causal_lm_batch(data, std::vector<std::int64_t>{0, 1}, {.max_length = 10});
  const Segment trained{.model = &w,
                        .batch = 2,
                        .length = batch.length,
                        .tokens = batch.tokens.data(),
                        .lengths = batch.lengths.data(),
                        .targets = batch.targets.data()};
  SegmentedTransformer net(f.backend());

  // -log p of each completion token and EOS, from every position's logits; `all` counts the
  // prompt's tokens too, as training on the whole text would.
  auto reference = [&](bool all) {
    auto out = net.forward({.segments = {{.model = &w,
                                          .batch = 2,
                                          .length = batch.length,
                                          .tokens = batch.tokens.data(),
                                          .lengths = batch.lengths.data()}}});
    REQUIRE(out.is_ok());
    const std::vector<float> logits = copy_to_host(f.backend(), (*out)[0].logits);
    double sum = 0;
    int count = 0;
    for (std::size_t b = 0; b < 2; ++b) {
      std::vector<std::int32_t> next = data.rows[b];  // position j predicts content j, then EOS
      next.push_back(data.specials.sep);
      for (std::size_t j = all ? 0 : data.prompt_lengths[b]; j < next.size(); ++j) {
        const float* l = logits.data() + (b * batch.length + j) * 16;
        double z = 0;
        for (int v = 0; v < 16; ++v) z += std::exp(static_cast<double>(l[v]));
        sum += std::log(z) - l[next[j]];
        ++count;
      }
    }
    return sum / count;
  };

  f.grads("lora").zero();
  auto out = net.forward({.segments = {trained}});
  REQUIRE(out.is_ok());
  CHECK(out->at(0).counted == 2 + 1 + 4 + 1);  // the completions and their EOS
  REQUIRE(net.backward().is_ok());
  CHECK(out->at(0).loss == Approx(reference(false)).epsilon(1e-5));
  // The prompt's terms would change the loss: the comparison above has teeth.
  CHECK(std::abs(reference(true) - reference(false)) > 1e-2);
  for (const char* name :
       {"blk.0.attn_q.lora.lora.a", "blk.1.attn_v.lora.lora.b", "blk.0.ffn_out.lora.lora.b"}) {
    const Tensor& param = *f.params("lora").find(name);
    const Tensor& grad = *f.grads("lora").binding().find(name);
    test::check_gradient(
        name, [&] { return reference(false); }, param.f32(),
        static_cast<std::size_t>(param.numel()), grad.f32());
  }
}
