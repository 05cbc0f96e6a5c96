// W3 — trunk training efficiency (see docs/benchmarks.md), on the CPU or (--device cuda) a GPU.
//
// Encoder L=12, d=768, h=12, f=3072, V=256, pre-norm, tied embeddings, masked-LM loss;
// every parameter trainable; AdamW. T=128, batch 16 on the CPU; T=512, batch 64 on a GPU
// (--length, --batch change them). One step = forward + backward + optimizer update.
// Reports, as docs/benchmarks.md asks ("Like with like"): the steady state, the median of the
// timed steps after one warm-up step, and the time to the first step, from the process's
// start to the end of the warm-up step (parameter initialisation, JIT and first page faults
// included); the achieved GFLOP/s (6 × parameters × tokens + attention), then:
//   - on the CPU, the machine's matmul limit at 2048³ measured in the same run (median of
//     one sample before each timed step): in fp32 the best of OpenBLAS (its own threads and
//     scion's split) and oneDNN fp32, in bf16 oneDNN's bf16 matmul; and — when --peer names
//     the PyTorch peer script — the peer's steady step and first step on the same shapes and
//     threads (eager fp32, or bf16 autocast with --precision bf16). The peer runs as a child
//     process in serve mode (bench/.venv's Python where it exists, else /usr/bin/python3;
//     --peer-python overrides) and its steps alternate with scion's (scion step, peer step,
//     ...), so on a shared, noisy machine both see the same load over time;
//   - on a GPU, the MFU: achieved FLOP/s over a stated peak (--peak-tflops; by default the
//     H100/H200 SXM dense figures, 989 TFLOP/s bf16 (docs/benchmarks.md) and 67 TFLOP/s fp32
//     without tensor cores), and with --peer the peer on the same GPU (--device cuda passed
//     on: autocast on "cuda" in bf16, fp32 without TF32 as scion's). Each phase ends with a
//     wait for the device, so the times are the device's, not the queueing's.
//
// Usage: w3_trunk_training [--device cpu|cuda] [--steps N] [--threads N] [--layers N]
//                          [--batch N] [--length N] [--peak-tflops X]
//                          [--peer bench/peers/w3_torch.py] [--peer-python PYTHON]
//                          [--precision fp32|bf16] [--fp32-matmul auto|openblas|onednn]
//                          [--profile]   (the steady steps by class of work, from
//                          runtime/profiling_backend.h; it waits for every operation on a GPU,
//                          so the step times printed beside it are a profiled run's)
#include <cblas.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/device.h"
#include "bench/machine.h"
#include "bench/peer_process.h"
#include "runtime/backend.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/model/model_weights.h"
#include "runtime/model/optimizer.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/transformer.h"
#include "runtime/process_clock.h"
#include "runtime/profiling_backend.h"

extern "C" void openblas_set_num_threads(int num_threads);

using namespace scion;
using namespace scion::runtime;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string device = "cpu";
  int steps = 3;
  int threads = 2;
  int layers = 12;
  int batch = 0;            // 0: 16 on the CPU, 64 on a GPU
  int length = 0;           // 0: 128 on the CPU, 512 on a GPU
  std::string peak_tflops;  // empty: the H100/H200 SXM figure of the precision
  std::string peer;
  std::string peer_python;
  std::string precision = "fp32";
  std::string fp32_matmul = "auto";
  bool profile = false;     // time the steady steps by class of work (waiting per op on a GPU)
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// GFLOP/s of the machine's best 2048³ product on all `threads` cores for `precision` (the
// main loop calls it once per step, so the limit sees the same machine load as the steps;
// the first call warms the libraries up). fp32: the best of OpenBLAS with its own threads,
// OpenBLAS split over scion's OpenMP team (runtime/cpu/gemm.h) and oneDNN fp32, so the
// fraction of the limit is never flattered by a slow library; bf16: oneDNN's bf16 matmul
// (bf16 operands, fp32 accumulation), the rate a bf16 step's products can reach.
double limit_gflops(int threads, bool bf16) {
  const int n = 2048;
  static std::vector<float> a(static_cast<std::size_t>(n) * n, 0.5f), b(a), c(a.size());
  static std::vector<std::uint16_t> a16(a.size(), 0x3f00), b16(a.size(), 0x3f00);
  const double flops = 2.0 * n * n * n;
  auto timed = [&](auto&& product) {
    const auto start = Clock::now();
    product();
    return flops / seconds_since(start) / 1e9;
  };
  if (bf16)
    return timed([&] {
      cpu::onednn_gemm(cpu::GemmInput::kBF16, false, true, n, n, n, 1.0f, a16.data(), n,
                       b16.data(), n, 0.0f, c.data(), n);
    });
  openblas_set_num_threads(threads);
  const double openblas = timed([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
  });
  openblas_set_num_threads(1);
  const double split = timed(
      [&] { cpu::gemm(false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n); });
  const double onednn = timed([&] {
    cpu::gemm_onednn_f32(false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  });
  return std::max({openblas, split, onednn});
}

// The timed steps' time by class of work: the profile less what it held after the warm-up.
void print_profile(const OpProfile& profile, const std::array<OpProfile::Entry, kOpClasses>& at_start,
                   int steps) {
  std::printf("w3 profile (seconds/calls a step, the mean over %d steps%s):", steps,
              profile.waited_per_operation ? ", each operation waited for" : "");
  for (int c = 0; c < kOpClasses; ++c) {
    const OpProfile::Entry& e = profile.entry(static_cast<OpClass>(c));
    const double seconds = (e.seconds - at_start[c].seconds) / steps;
    const double calls = static_cast<double>(e.calls - at_start[c].calls) / steps;
    if (calls > 0)
      std::printf(" %s=%.4fs/%.0f", op_class_name(static_cast<OpClass>(c)), seconds, calls);
  }
  std::printf("\n");
}

Options parse(int argc, char** argv) {
  Options o;
  bench::BenchOptions(
      "usage: w3_trunk_training [--device cpu|cuda] [--steps N] [--threads N] [--layers N]\n"
      "                         [--batch N] [--length N] [--peak-tflops X]\n"
      "                         [--peer bench/peers/w3_torch.py] [--peer-python PYTHON]\n"
      "                         [--precision fp32|bf16] [--fp32-matmul auto|openblas|onednn]\n"
      "                         [--profile]")
      .text("device", o.device)
      .number("batch", o.batch)
      .number("length", o.length)
      .text("peak-tflops", o.peak_tflops)
      .number("steps", o.steps)
      .number("threads", o.threads)
      .number("layers", o.layers)
      .text("peer", o.peer)
      .text("peer-python", o.peer_python)
      .text("precision", o.precision)
      .text("fp32-matmul", o.fp32_matmul)
      .flag("profile", o.profile)
      .parse(argc, argv);
  if (o.steps < 1 || o.threads < 1 || o.layers < 1) {
    std::fprintf(stderr, "error: --steps, --threads and --layers must be at least 1 (a steady "
                         "step is timed after the first)\n");
    std::exit(2);
  }
  const bool gpu = o.device == "cuda";
  if (o.batch == 0) o.batch = gpu ? 64 : 16;
  if (o.length == 0) o.length = gpu ? 512 : 128;
  return o;
}

// The peak the MFU is stated against, TFLOP/s: --peak-tflops, else H100/H200 SXM dense.
double gpu_peak_tflops(const Options& o) {
  if (o.peak_tflops.empty()) return o.precision == "bf16" ? 989.0 : 67.0;
  char* end = nullptr;
  const double peak = std::strtod(o.peak_tflops.c_str(), &end);
  if (*end != '\0' || !(peak > 0)) {
    std::fprintf(stderr, "error: --peak-tflops takes a positive number, not '%s'\n",
                 o.peak_tflops.c_str());
    std::exit(2);
  }
  return peak;
}

}  // namespace

int main(int argc, char** argv) {
  scion::bench::use_scions_openmp_wait(argv);
  const Options opt = parse(argc, argv);
  const bool gpu = opt.device == "cuda";
  auto backend = bench::make_backend(opt.device, opt.threads, opt.precision, opt.fp32_matmul);
  OpProfile profile;
  if (opt.profile) backend = make_profiling_backend(std::move(backend), profile);
  std::array<OpProfile::Entry, kOpClasses> profile_at_step_1{};
  bench::print_device("w3", opt.device);
  std::printf("w3 device=%s precision=%s fp32_matmul=%s batch=%d length=%d\n", opt.device.c_str(),
              opt.precision.c_str(), gpu ? "-" : opt.fp32_matmul.c_str(), opt.batch, opt.length);
  spec::Workspace ws;
  spec::Model base;
  base.name = "w3";
  spec::Architecture a;
  a.layers = opt.layers;
  a.width = 768;
  a.heads = 12;
  a.ffn_width = 3072;
  a.vocab_size = 256;
  a.max_length = opt.length;
  base.architecture = a;
  ws.models.push_back(base);
  const spec::Model& model = ws.models[0];
  const int B = opt.batch, T = opt.length;

  const double setup_start = seconds_since_process_start().value_or(0);
  ParameterStore store(*backend);
  const ParameterBinding params = store.add_model(ws, model).value();
  initialize_new_parameters(*backend, ws, model, params, 1);
  const auto table = parameter_table(ws, model);
  GradientSet grads = GradientSet::create(table, *backend, model.name).value();
  auto weights = resolve_model(ws, model, spec::Objective::kMaskedLm, params, &grads.binding());
  if (!weights.is_ok()) {
    std::fprintf(stderr, "error: %s\n", weights.status().message().c_str());
    return 3;
  }
  spec::OptimizerSpec adam;
  adam.weight_decay = 0.01f;
  const auto optimizer_owner = Optimizer::create(*backend, adam, trainable_tensors(table, params, grads.binding()), "the bench model").value();
  Optimizer& optimizer = *optimizer_owner;
  std::int64_t parameter_count = 0;
  for (const ParameterSpec& p : table) parameter_count += p.numel();

  std::mt19937_64 rng(7);
  std::vector<std::int32_t> tokens(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i) {
    tokens[i] = static_cast<std::int32_t>(rng() % 256);
    targets[i] = rng() % 100 < 15 ? static_cast<std::int32_t>(rng() % 256) : -100;
  }
  SegmentedTransformer net(*backend);
  const FamilyBatch batch{{{&*weights, B, T, tokens.data(), nullptr, targets.data(), 0}}, true};

  const bool bf16 = opt.precision == "bf16";
  const double setup_end = seconds_since_process_start().value_or(0);
  std::vector<double> times, forward_times, backward_times, update_times, peer_times, peaks;
  float loss = 0;
  double first_step_s = 0;
  std::unique_ptr<scion::bench::PeerProcess> peer;
  const Tensor& any = optimizer.tensors().front().param;
  for (int step = 0; step <= opt.steps; ++step) {  // step 0 warms up (plans the arena)
    if (step > 0 && !gpu) peaks.push_back(limit_gflops(opt.threads, bf16));
    bench::wait_for_device(*backend, any);
    const auto start = Clock::now();
    auto out = net.forward(batch);
    if (!out.is_ok()) {
      std::fprintf(stderr, "error: %s\n", out.status().message().c_str());
      return 3;
    }
    loss = out->at(0).loss;
    bench::wait_for_device(*backend, any);
    const double forward_s = seconds_since(start);
    grads.zero();
    if (!net.backward().is_ok()) return 3;
    bench::wait_for_device(*backend, any);
    const double backward_s = seconds_since(start) - forward_s;
    optimizer.step(1e-4f);
    bench::wait_for_device(*backend, any);
    if (const std::string error = backend->error(); !error.empty()) {
      std::fprintf(stderr, "error: the backend failed: %s\n", error.c_str());
      return 3;
    }
    if (step == 0) {
      // Time to the first step, before anything else (the limit's warm-up, the peer) runs.
      first_step_s = seconds_since_process_start().value_or(0);
      if (!gpu) limit_gflops(opt.threads, bf16);  // warm-up
      if (!opt.peer.empty()) {
        const std::string python =
            opt.peer_python.empty() ? scion::bench::default_peer_python(opt.peer) : opt.peer_python;
        peer = std::make_unique<scion::bench::PeerProcess>(
            python, opt.peer,
            std::vector<std::string>{"--threads", std::to_string(opt.threads), "--layers",
                                     std::to_string(opt.layers), "--autocast",
                                     bf16 ? "bf16" : "none", "--device", opt.device,
                                     "--batch", std::to_string(B), "--length", std::to_string(T)});
        if (!peer->ready()) {
          std::printf("w3 torch peer unavailable (needs %s with torch)\n", python.c_str());
          peer.reset();
        }
      }
      for (int c = 0; c < kOpClasses; ++c) profile_at_step_1[c] = profile.entry(static_cast<OpClass>(c));
      continue;
    }
    times.push_back(seconds_since(start));
    forward_times.push_back(forward_s);
    backward_times.push_back(backward_s);
    update_times.push_back(times.back() - forward_s - backward_s);
    if (peer) peer_times.push_back(peer->request("step", "step_seconds"));
  }
  const double step_s = median(times);
  const double tokens_per_step = static_cast<double>(B) * T;
  const double flops = 6.0 * parameter_count * tokens_per_step +
                       12.0 * a.layers * B * static_cast<double>(T) * T * a.width;
  const double gflops = flops / step_s / 1e9;
  std::printf("w3 scion: layers=%d params=%lld threads=%d steady_step_seconds=%.3f "
              "tokens_per_s=%.0f first_step_seconds=%.2f (%.2fx a steady step) loss=%.4f "
              "gflops=%.1f\n",
              a.layers, static_cast<long long>(parameter_count), opt.threads, step_s,
              tokens_per_step / step_s, first_step_s, first_step_s / step_s, loss, gflops);
  std::printf("w3 scion breakdown: forward=%.3f s backward=%.3f s (incl. zeroing grads) adamw=%.3f s\n",
              median(forward_times), median(backward_times), median(update_times));
  std::printf("w3 scion first step: process start to setup %.2f s, setup (parameters "
              "allocated and initialised, gradients, optimizer) %.2f s, step 1 %.2f s\n",
              setup_start, setup_end - setup_start, first_step_s - setup_end);
  if (opt.profile) print_profile(profile, profile_at_step_1, opt.steps);
  if (gpu) {
    const double peak_tflops = gpu_peak_tflops(opt);
    std::printf("w3 gpu peak_tflops=%.1f (%s) mfu=%.3f\n", peak_tflops,
                opt.peak_tflops.empty()
                    ? (opt.precision == "bf16" ? "H100/H200 SXM dense bf16"
                                               : "H100/H200 SXM fp32, no tensor cores")
                    : "--peak-tflops",
                gflops / (peak_tflops * 1e3));
  } else {
    const double peak = median(peaks);
    std::printf("w3 limit_2048_%s_gflops=%.1f fraction_of_limit=%.3f\n",
                bf16 ? "onednn_bf16" : "best_fp32", peak, gflops / peak);
  }
  if (peer) {
    const double peer_s = median(peer_times);
    const char* peer_name = bf16 ? "torch_autocast_bf16" : "torch_eager";
    if (peer_s > 0)
      std::printf("w3 %s: steady_step_seconds=%.3f tokens_per_s=%.0f first_step_seconds=%.2f "
                  "gflops=%.1f\n"
                  "w3 ratio scion_vs_%s=%.3f (torch step / scion step, interleaved; >1 means "
                  "scion faster)\n",
                  peer_name, peer_s, tokens_per_step / peer_s, peer->ready_value("first_step_seconds"),
                  flops / peer_s / 1e9, peer_name, peer_s / step_s);
    else
      std::printf("w3 torch peer failed during the run\n");
  }
  return 0;
}
