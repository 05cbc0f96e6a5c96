// W2 — family evaluation on shared inputs (see docs/benchmarks.md).
//
// Trunk: pre-norm encoder L=4, d=256, h=4, f=1024, T=128, V=260 (the byte tokenizer's).
// 16 descendants: 8 head-only linear probes (2 classes, CLS pooling), 4 with LoRA rank 8
// on q and v of the top layer only (+ a head), 4 with prefix tuning (8 virtual tokens in
// every layer, + a head). Every parameter is random (LoRA B too), so every branch really
// differs. All 16 classify the same inputs: byte strings framed to exactly T=128 tokens.
//
// Configurations, interleaved within one run (a, b, a, b, ...), medians reported:
//   (a) scion with dedup and co-batching: one FamilyEvaluator call over the 16 models
//       (the trie of layer applications; distinct branches co-batched over one frozen
//       product per layer);
//   (b) scion evaluating each model alone: one FamilyEvaluator call per model, sharing off.
// Both go through the whole evaluator (tokenising, framing, softmax) with the same chunk.
//
// Ideal speedup: forward FLOPs of (b) — 16 single-model plans — divided by the FLOPs of
// (a)'s plan (runtime::forward_flops of the shared FamilyBatch: each unit of the trie
// once). The program checks that (a) and (b) give the same probabilities (max abs diff
// ≤ 1e-4) and exits 1 when they do not.
//
// Usage: w2_family_eval [--reps N] [--threads N] [--inputs N] [--chunk N]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/machine.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/backend.h"
#include "runtime/evaluation/family_evaluator.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/model/transformer.h"
#include "runtime/text/byte_tokenizer.h"

using namespace scion;
using namespace scion::runtime;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kLayers = 4, kWidth = 256, kHeads = 4, kFfn = 1024, kLength = 128;
constexpr int kProbes = 8, kLoras = 4, kPrefixes = 4;
constexpr double kTolerance = 1e-4;

struct Options {
  int reps = 3;
  int threads = 2;
  int inputs = 2048;
  int chunk = 64;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

spec::Workspace make_workspace() {
  spec::Workspace ws;
  spec::Model trunk;
  trunk.name = "trunk";
  spec::Architecture a;  // pre-norm encoder, no dropout
  a.layers = kLayers;
  a.width = kWidth;
  a.heads = kHeads;
  a.ffn_width = kFfn;
  a.max_length = kLength;
  trunk.architecture = a;
  ws.models.push_back(trunk);
  auto add = [&](const std::string& name, spec::Adaptation adaptation) {
    spec::Model m;
    m.name = name;
    m.from = "trunk";
    adaptation.head = spec::HeadSpec{};
    adaptation.head->labels = {"neg", "pos"};
    m.adaptation = std::move(adaptation);
    ws.models.push_back(std::move(m));
  };
  for (int i = 0; i < kProbes; ++i) add("probe-" + std::to_string(i), {});
  for (int i = 0; i < kLoras; ++i) {
    spec::Adaptation lora;
    lora.set(spec::LoraSpec{.rank = 8,
                            .alpha = 16.0f,
                            .dropout = 0.0f,
                            .targets = {"q", "v"},
                            .layers = {kLayers - 1}});
    add("lora-top-" + std::to_string(i), lora);
  }
  for (int i = 0; i < kPrefixes; ++i) {
    spec::Adaptation prefix;
    prefix.prefix = spec::PrefixSpec{.virtual_tokens = 8, .layers = {}, .reparam_hidden = 0};
    add("prefix-" + std::to_string(i), prefix);
  }
  return ws;
}

// Fills every parameter a model introduces with N(0, 0.02²) (norm weights keep their 1s),
// so LoRA's B is not zero and every branch changes the output.
void randomise(Backend& backend, const ParameterBinding& binding, const spec::Model& model,
               std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (const auto& [name, view] : binding.views()) {
    if (!is_new_parameter(name, model) && !model.is_base()) continue;
    if (name.find("ln") != std::string::npos && name.ends_with(".weight")) continue;
    std::vector<float> x(static_cast<std::size_t>(view.numel()));
    for (float& value : x) value = normal(gen);
    backend.copy_to_device(view.data, x.data(), view.bytes());
  }
}

std::vector<std::string> make_inputs(int count) {
  std::mt19937_64 gen(2024);
  const int content = kLength - 2;  // [CLS] text [SEP] fills T exactly
  std::vector<std::string> texts(count);
  for (auto& t : texts)
    for (int i = 0; i < content; ++i) t.push_back(static_cast<char>('a' + gen() % 26));
  return texts;
}

}  // namespace

int main(int argc, char** argv) {
  scion::bench::use_scions_openmp_wait(argv);
  Options opt;
  bench::BenchOptions("usage: w2_family_eval [--reps N] [--threads N] [--inputs N] [--chunk N]")
      .number("reps", opt.reps)
      .number("threads", opt.threads)
      .number("inputs", opt.inputs)
      .number("chunk", opt.chunk)
      .parse(argc, argv);
  auto backend = make_cpu_backend(opt.threads);
  const spec::Workspace ws = make_workspace();
  ParameterStore pool(*backend);
  std::vector<ModelWeights> weights;
  weights.reserve(ws.models.size());
  std::uint64_t seed = 1;
  for (const spec::Model& m : ws.models) {
    const ParameterBinding binding = pool.add_model(ws, m).value();
    initialize_new_parameters(*backend, ws, m, binding, seed);
    randomise(*backend, binding, m, seed++);
    if (m.is_base()) continue;
    auto w = resolve_model(ws, m, spec::Objective::kClassification, binding, nullptr);
    if (!w) {
      std::fprintf(stderr, "error: %s\n", w.status().message().c_str());
      return 3;
    }
    weights.push_back(std::move(*w));
  }
  text::ByteTokenizer tokenizer;
  std::vector<EvaluatedModel> models;
  for (const ModelWeights& w : weights) models.push_back({&w, &tokenizer, {"neg", "pos"}});
  const std::vector<std::string> texts = make_inputs(opt.inputs);

  // The two plans' FLOPs, from the same shapes the evaluator builds (every input framed
  // to T, identical across models).
  const std::vector<std::int32_t> tokens(static_cast<std::size_t>(opt.inputs) * kLength, 5);
  FamilyBatch shared{.share_identical = true};
  double alone_flops = 0;
  for (const ModelWeights& w : weights) {
    const Segment seg{.model = &w, .batch = opt.inputs, .length = kLength, .tokens = tokens.data()};
    shared.segments.push_back(seg);
    alone_flops += forward_flops(FamilyBatch{.segments = {seg}});
  }
  const double shared_flops = forward_flops(shared);

  FamilyEvaluator evaluator(*backend);
  std::vector<double> shared_times, alone_times;
  std::vector<std::vector<runtime::HeadOutput>> shared_out, alone_out(models.size());
  for (int rep = 0; rep < opt.reps; ++rep) {
    auto start = Clock::now();
    auto together = evaluator.classify(models, texts, {.chunk_size = opt.chunk, .share_identical = true});
    shared_times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    if (!together) {
      std::fprintf(stderr, "error: %s\n", together.status().message().c_str());
      return 3;
    }
    shared_out = std::move(*together);
    start = Clock::now();
    for (std::size_t m = 0; m < models.size(); ++m) {
      auto alone = evaluator.classify(std::span(&models[m], 1), texts,
                                      {.chunk_size = opt.chunk, .share_identical = false});
      if (!alone) {
        std::fprintf(stderr, "error: %s\n", alone.status().message().c_str());
        return 3;
      }
      alone_out[m] = std::move((*alone)[0]);
    }
    alone_times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    std::printf("w2 rep %d: shared=%.2f s alone=%.2f s\n", rep, shared_times.back(), alone_times.back());
    std::fflush(stdout);
  }

  double max_diff = 0;
  for (std::size_t m = 0; m < models.size(); ++m)
    for (std::size_t t = 0; t < texts.size(); ++t)
      for (std::size_t k = 0; k < 2; ++k)
        max_diff = std::max(max_diff, static_cast<double>(std::fabs(
                                          shared_out[m][t].probabilities[k] - alone_out[m][t].probabilities[k])));
  const bool same = max_diff <= kTolerance;
  std::printf("w2 check shared_vs_alone: max_abs_diff=%.3g over %zu models x %zu inputs %s\n", max_diff,
              models.size(), texts.size(), same ? "OK" : "FAILED");

  const double a = median(shared_times), b = median(alone_times);
  const double ideal = alone_flops / shared_flops;
  std::printf("w2 config: models=%zu (probes=%d lora_top=%d prefix=%d) inputs=%d T=%d chunk=%d threads=%d\n",
              models.size(), kProbes, kLoras, kPrefixes, opt.inputs, kLength, opt.chunk, opt.threads);
  std::printf("w2 scion_shared: seconds=%.2f plan_gflop=%.1f gflops=%.1f\n", a, shared_flops / 1e9,
              shared_flops / a / 1e9);
  std::printf("w2 scion_alone: seconds=%.2f plan_gflop=%.1f gflops=%.1f\n", b, alone_flops / 1e9,
              alone_flops / b / 1e9);
  std::printf("w2 ratio speedup=%.3f ideal=%.3f achieved/ideal=%.3f\n", b / a, ideal, b / a / ideal);
  return same ? 0 : 1;
}
