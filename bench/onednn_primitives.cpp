// scion's CPU kernels against oneDNN's primitives for the operations other than products,
// at W3's shapes (docs/benchmarks.md: batch 16, T=128, d=768, 12 heads, f=3072):
// layer norm forward and backward over 2,048 rows of 768, the attention softmax over
// 16 × 12 × 128 rows of 128 scores, and GELU (tanh form) over 2,048 × 3,072 values. Issue
// #15 asks for oneDNN "where it measures faster"; this is that measurement. Interleaved,
// median of --reps timings of --iters calls each; each pair's outputs are compared, and
// the program exits 1 when they disagree by more than 1e-4.
//
//   ./build/bench/onednn_primitives [--reps 3] [--iters 20] [--threads 2]
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/machine.h"
#include "runtime/cpu/gelu.h"
#include "runtime/cpu/layernorm.h"
#include "runtime/cpu/softmax.h"

using namespace scion::runtime;
using Clock = std::chrono::steady_clock;
using dnnl::memory;

namespace {

constexpr std::int64_t kRows = 16 * 128;           // W3's token rows a step
constexpr int kWidth = 768, kFfn = 3072;
constexpr std::int64_t kScoreRows = 16 * 12 * 128;  // (sequence, head, query) rows
constexpr int kKeys = 128;
constexpr float kEps = 1e-5f;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_of(int iters, const std::function<void()>& fn) {
  fn();  // warm: caches, oneDNN's first-call JIT
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - start).count() / iters;
}

std::vector<float> filled(std::size_t n, int seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((i * 2654435761u + seed * 40503u) % 1000) / 250.0f - 2.0f;
  return v;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  return worst;
}

memory::desc rows_of(std::int64_t rows, std::int64_t cols) {
  return memory::desc({rows, cols}, memory::data_type::f32, memory::format_tag::ab);
}

struct Pair {
  std::string name;
  std::function<void()> scion, onednn;
  std::function<double()> disagreement;
  std::vector<double> scion_s, onednn_s;
};

}  // namespace

int main(int argc, char** argv) {
  scion::bench::use_scions_openmp_wait(argv);
  int reps = 3, iters = 20, threads = 2;
  scion::bench::BenchOptions("usage: onednn_primitives [--reps N] [--iters N] [--threads N]")
      .number("reps", reps)
      .number("iters", iters)
      .number("threads", threads)
      .parse(argc, argv);
  if (reps < 1 || iters < 1 || threads < 1) {
    std::fprintf(stderr, "error: --reps, --iters and --threads must be at least 1\n");
    return 2;
  }
  omp_set_num_threads(threads);
  scion::bench::print_machine("primitives");
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);

  // Layer norm, forward and backward (training: statistics saved, scale and shift).
  const std::size_t ln = static_cast<std::size_t>(kRows) * kWidth;
  std::vector<float> x = filled(ln, 1), dy = filled(ln, 2), gamma = filled(kWidth, 3),
                     beta = filled(kWidth, 4);
  std::vector<float> y_s(ln), y_d(ln), dx_s(ln), dx_d(ln), mean_s(kRows), rstd_s(kRows),
      mean_d(kRows), var_d(kRows), dgamma_s(kWidth), dbeta_s(kWidth), dgamma_d(kWidth),
      dbeta_d(kWidth);
  const memory::desc data = rows_of(kRows, kWidth);
  const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  const dnnl::layer_normalization_forward::primitive_desc ln_fwd_pd(
      {dnnl::prop_kind::forward_training, data, kEps, flags}, engine);
  const dnnl::layer_normalization_backward::primitive_desc ln_bwd_pd(
      {dnnl::prop_kind::backward, data, data, kEps, flags}, engine, ln_fwd_pd);
  const dnnl::layer_normalization_forward ln_fwd(ln_fwd_pd);
  const dnnl::layer_normalization_backward ln_bwd(ln_bwd_pd);
  const memory::desc stats = ln_fwd_pd.mean_desc(), channel({kWidth}, memory::data_type::f32,
                                                           memory::format_tag::a);
  memory m_x(data, engine, x.data()), m_y(data, engine, y_d.data()), m_dy(data, engine, dy.data()),
      m_dx(data, engine, dx_d.data()), m_mean(stats, engine, mean_d.data()),
      m_var(stats, engine, var_d.data()), m_gamma(channel, engine, gamma.data()),
      m_beta(channel, engine, beta.data()), m_dgamma(channel, engine, dgamma_d.data()),
      m_dbeta(channel, engine, dbeta_d.data());

  // Softmax over each row of attention scores.
  const std::size_t sm = static_cast<std::size_t>(kScoreRows) * kKeys;
  const std::vector<float> scores = filled(sm, 5);
  std::vector<float> p_s(sm), p_d(sm);
  const memory::desc score_rows = rows_of(kScoreRows, kKeys);
  const dnnl::softmax_forward softmax(
      dnnl::softmax_forward::primitive_desc({dnnl::prop_kind::forward_training, score_rows, 1},
                                            engine));
  memory m_scores(score_rows, engine, const_cast<float*>(scores.data())),
      m_p(score_rows, engine, p_d.data());

  // GELU, tanh form (scion's native models; GPT-2's gelu_new).
  const std::size_t ge = static_cast<std::size_t>(kRows) * kFfn;
  const std::vector<float> h = filled(ge, 6);
  std::vector<float> g_s(ge), g_d(ge);
  const memory::desc hidden = rows_of(kRows, kFfn);
  const dnnl::eltwise_forward gelu(dnnl::eltwise_forward::primitive_desc(
      {dnnl::prop_kind::forward_training, dnnl::algorithm::eltwise_gelu_tanh, hidden, 0.f, 0.f},
      engine));
  memory m_h(hidden, engine, const_cast<float*>(h.data())), m_g(hidden, engine, g_d.data());

  std::vector<Pair> pairs;
  pairs.push_back({"layernorm forward 2048x768",
                   [&] {
                     cpu::layernorm_forward(y_s.data(), mean_s.data(), rstd_s.data(), x.data(),
                                            gamma.data(), beta.data(), kRows, kWidth, kEps);
                   },
                   [&] {
                     ln_fwd.execute(stream, {{DNNL_ARG_SRC, m_x}, {DNNL_ARG_DST, m_y},
                                             {DNNL_ARG_MEAN, m_mean}, {DNNL_ARG_VARIANCE, m_var},
                                             {DNNL_ARG_SCALE, m_gamma}, {DNNL_ARG_SHIFT, m_beta}});
                     stream.wait();
                   },
                   [&] { return max_diff(y_s, y_d) / 10; }});  // |y| reaches ~10 here
  pairs.push_back({"layernorm backward 2048x768",
                   [&] {
                     std::fill(dgamma_s.begin(), dgamma_s.end(), 0.f);
                     std::fill(dbeta_s.begin(), dbeta_s.end(), 0.f);
                     cpu::layernorm_backward(dx_s.data(), dgamma_s.data(), dbeta_s.data(),
                                             dy.data(), x.data(), gamma.data(), mean_s.data(),
                                             rstd_s.data(), kRows, kWidth, GradMode::kAssign);
                   },
                   [&] {
                     ln_bwd.execute(stream, {{DNNL_ARG_SRC, m_x}, {DNNL_ARG_DIFF_DST, m_dy},
                                             {DNNL_ARG_MEAN, m_mean}, {DNNL_ARG_VARIANCE, m_var},
                                             {DNNL_ARG_SCALE, m_gamma}, {DNNL_ARG_SHIFT, m_beta},
                                             {DNNL_ARG_DIFF_SRC, m_dx},
                                             {DNNL_ARG_DIFF_SCALE, m_dgamma},
                                             {DNNL_ARG_DIFF_SHIFT, m_dbeta}});
                     stream.wait();
                   },
                   [&] { return max_diff(dx_s, dx_d) / 100; }});
  pairs.push_back({"softmax 24576x128",
                   [&] {
                     std::copy(scores.begin(), scores.end(), p_s.begin());
#pragma omp parallel for schedule(static)
                     for (std::int64_t r = 0; r < kScoreRows; ++r)
                       cpu::softmax_row(p_s.data() + r * kKeys, kKeys, kKeys);
                   },
                   [&] {
                     softmax.execute(stream, {{DNNL_ARG_SRC, m_scores}, {DNNL_ARG_DST, m_p}});
                     stream.wait();
                   },
                   [&] { return max_diff(p_s, p_d); }});
  pairs.push_back({"gelu (tanh) 2048x3072",
                   [&] { cpu::gelu_forward(g_s.data(), h.data(), static_cast<std::int64_t>(ge)); },
                   [&] {
                     gelu.execute(stream, {{DNNL_ARG_SRC, m_h}, {DNNL_ARG_DST, m_g}});
                     stream.wait();
                   },
                   [&] { return max_diff(g_s, g_d); }});

  // scion's softmax copies the scores first (it works in place); oneDNN's does not need to.
  // The copy is counted against scion: it is what the comparison would cost in place of it.
  for (int rep = 0; rep < reps; ++rep) {
    for (Pair& p : pairs) {
      p.scion_s.push_back(seconds_of(iters, p.scion));
      p.onednn_s.push_back(seconds_of(iters, p.onednn));
    }
  }
  int status = 0;
  for (Pair& p : pairs) {
    const double s = median(p.scion_s), d = median(p.onednn_s), diff = p.disagreement();
    std::printf("primitives %s: scion %.3f ms, oneDNN %.3f ms, oneDNN/scion speed %.2f, "
                "max difference %.2g%s\n",
                p.name.c_str(), s * 1e3, d * 1e3, s / d, diff, diff > 1e-4 ? " DISAGREE" : "");
    if (diff > 1e-4) status = 1;
  }
  return status;
}
