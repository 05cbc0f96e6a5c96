// backend_ops: every operation of a backend against the CPU reference (op_harness.h).
//
// The reference is the CPU backend in fp32 with OpenBLAS products on one thread. The
// candidate is the CPU backend with other settings (threads, oneDNN products, bf16
// products) or the CUDA backend plugin, in fp32 and, where it supports it, bf16. Every
// output of every case is compared; one line per output says op, shape, output, largest
// absolute error, normalised error ‖x − ref‖ / ‖ref‖ and its tolerance.
//
// Tolerances (normalised error):
// - --exact: 0, except the products. The CPU kernels split their loops the same way at
//   any thread count and keep every sum in one fixed order (runtime/cpu/parallel.h), so
//   2 threads must give the bits of 1 thread. The products cannot: gemm() (gemm.h) hands
//   each thread a block of rows or columns and OpenBLAS picks its kernel by the block's
//   size, so the last bits of a product depend on the thread count (measured: normalised
//   error up to 1.2e-7, largest 2e-5 absolute on sums of 384 terms). They get 1e-6:
//   a wrong or missing block errs by O(1). Attention's products are exact here: each
//   (sequence, head) is one serial product on one thread, whatever the team's size.
// - kExact outputs (counts, dropout masks, copies): 0 on every backend. A dropout mask is
//   a function of (seed, stream, element) that co-batched training depends on.
// - fp32: 1e-5. Another implementation sums in another order; over K <= 1024 terms of
//   random sign the difference stays near 1e-7·sqrt(K) (the oneDNN products measure
//   about 1e-7), and exp/erf/tanh implementations agree to a few ulps. A wrong term errs
//   by O(1).
// - bf16 products (and attention's outputs where the backend's attention_precision() is
//   bf16): 5e-3, and at least 1e-5. Rounding an operand to bf16 (8 significant
//   bits) changes it by at most 2^-9 relative, a product of two by about 2^-8; with
//   independent signs the sums keep that relative size (about 2e-3). The lower bound
//   catches a bf16 path that silently computes in fp32. Bias gradients (column sums) and
//   every non-product operation stay fp32 in bf16 backends, with the fp32 tolerance.
//
// --products-on-cublas (CUDA only) makes every linear-layer product take the path it
// takes when cuBLASLt's heuristic offers no algorithm (cublasGemmEx), so that fallback is
// compared on every shape, not only on the shapes where the heuristic happens to fail.
//
// Usage: backend_ops [--backend cpu|cuda] [--precision fp32|bf16|all] [--threads N]
//                    [--fp32-matmul openblas|onednn|auto] [--products-on-cublas] [--exact]
//                    [--op NAME] [--list]
// Exit: 0 all within tolerance, 1 some output is not, or the CUDA backend cannot be made
// although an NVIDIA device is visible (tests/gpu/visible_devices.h), 2 usage, 77 the
// backend cannot run here (no CUDA plugin or no device, and no device visible).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "../gpu/visible_devices.h"
#include "bench/bench_options.h"
#include "op_harness.h"
#include "runtime/cuda_plugin.h"

using namespace scion;
using runtime::Backend;
using runtime::Precision;
using test::OpCase;
using test::OpOutput;
using test::OutputCheck;

namespace {

constexpr double kFp32Tolerance = 1e-5;
constexpr double kThreadedProductTolerance = 1e-6;
constexpr double kBf16Tolerance = 5e-3;
using test::kSkipped;

struct Options {
  std::string backend = "cpu";
  std::string precision = "fp32";
  int threads = 2;
  std::string fp32_matmul = "openblas";
  bool exact = false;
  bool products_on_cublas = false;
  std::string op;
  bool list = false;
};

Options parse(int argc, char** argv) {
  Options o;
  bench::BenchOptions(
      "usage: backend_ops [--backend cpu|cuda] [--precision fp32|bf16|all] [--threads N]\n"
      "                   [--fp32-matmul openblas|onednn|auto] [--products-on-cublas] [--exact]\n"
      "                   [--op NAME] [--list]")
      .text("backend", o.backend)
      .text("precision", o.precision)
      .number("threads", o.threads)
      .text("fp32-matmul", o.fp32_matmul)
      .flag("exact", o.exact)
      .flag("products-on-cublas", o.products_on_cublas)
      .text("op", o.op)
      .flag("list", o.list)
      .parse(argc, argv);
  const bool known =
      (o.backend == "cpu" || o.backend == "cuda") &&
      (o.precision == "fp32" || o.precision == "bf16" || o.precision == "all") &&
      (o.fp32_matmul == "openblas" || o.fp32_matmul == "onednn" || o.fp32_matmul == "auto");
  if (!known || o.threads < 1) {
    std::fprintf(stderr, "backend_ops: unknown --backend, --precision or --fp32-matmul value, or "
                         "--threads below 1 (see --help)\n");
    std::exit(2);
  }
  return o;
}

struct Judgement {
  double tolerance = 0;
  double at_least = 0;  // a bf16 product must show bf16 rounding
};

Judgement judge(OutputCheck check, const Backend& backend, bool exact) {
  if (exact && (check == OutputCheck::kProduct || check == OutputCheck::kBf16Product))
    return {kThreadedProductTolerance, 0};
  if (exact || check == OutputCheck::kExact) return {0, 0};
  if (check == OutputCheck::kProduct && backend.precision() == Precision::kBF16)
    return {kBf16Tolerance, kFp32Tolerance};
  if (check == OutputCheck::kAttentionProduct && backend.attention_precision() == Precision::kBF16)
    return {kBf16Tolerance, kFp32Tolerance};
  return {kFp32Tolerance, 0};
}

struct Errors {
  double max_abs = 0, normalised = 0;
};

Errors errors_of(const std::vector<float>& x, const std::vector<float>& ref) {
  Errors e;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = double(x[i]) - double(ref[i]);
    // NaN in either compares as an infinite error (a NaN difference would pass "<").
    if (std::isnan(d)) return {INFINITY, INFINITY};
    e.max_abs = std::max(e.max_abs, std::fabs(d));
    diff += d * d;
    norm += double(ref[i]) * ref[i];
  }
  e.normalised = diff == 0 ? 0 : norm == 0 ? INFINITY : std::sqrt(diff / norm);
  return e;
}

std::vector<OpOutput> run_case(const OpCase& c, Backend& backend) {
  test::OpRun run(backend);
  c.run(run);
  return run.outputs();
}

// Compares every output of every case; returns how many are out of tolerance.
int compare(const std::vector<OpCase>& cases, const std::vector<std::vector<OpOutput>>& reference,
            Backend& candidate, bool exact) {
  int failures = 0;
  std::printf("%-26s %-44s %-10s %10s %10s %9s  result\n", "op", "shape", "output", "max_abs",
              "norm_err", "tolerance");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::vector<OpOutput> got = run_case(cases[i], candidate);
    // A device backend records failures instead of returning them (Backend::error); once
    // one happened every later output is suspect, so the run stops here.
    if (const std::string error = candidate.error(); !error.empty()) {
      std::printf("%-26s %-44s FAIL: the backend failed: %s\n", cases[i].op.c_str(),
                  cases[i].shape.c_str(), error.c_str());
      return failures + 1;
    }
    for (std::size_t o = 0; o < reference[i].size(); ++o) {
      const OpOutput& ref = reference[i][o];
      const bool present = o < got.size() && got[o].values.size() == ref.values.size();
      const Errors e = present ? errors_of(got[o].values, ref.values) : Errors{INFINITY, INFINITY};
      const Judgement j = judge(ref.check, candidate, exact);
      const bool ok = e.normalised <= j.tolerance && e.normalised >= j.at_least;
      failures += ok ? 0 : 1;
      std::printf("%-26s %-44s %-10s %10.3g %10.3g %9.0e  %s\n", cases[i].op.c_str(),
                  cases[i].shape.c_str(), ref.name.c_str(), e.max_abs, e.normalised, j.tolerance,
                  ok ? "ok"
                  : e.normalised < j.at_least ? "FAIL (no bf16 rounding: computed in fp32?)"
                                              : "FAIL");
    }
  }
  return failures;
}

// The candidate in `precision`, or why it cannot run here.
Result<std::unique_ptr<Backend>> make_candidate(const Options& o, Precision precision) {
  if (o.backend == "cuda")
    return runtime::make_cuda_backend(precision, {.products_on_cublas = o.products_on_cublas});
  return std::unique_ptr<Backend>(runtime::make_cpu_backend(runtime::CpuBackendOptions{
      .threads = o.threads,
      .precision = precision,
      .fp32_matmul = o.fp32_matmul == "onednn" ? runtime::MatmulLibrary::kOnednn
                     : o.fp32_matmul == "auto" ? runtime::MatmulLibrary::kAuto
                                               : runtime::MatmulLibrary::kOpenBlas}));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::vector<OpCase> cases = test::all_op_cases();
  if (o.list) {
    for (const OpCase& c : cases) std::printf("%s %s\n", c.op.c_str(), c.shape.c_str());
    return 0;
  }
  if (!o.op.empty())
    std::erase_if(cases, [&](const OpCase& c) { return c.op != o.op; });
  if (cases.empty()) {
    std::fprintf(stderr, "backend_ops: no case exercises '%s' (see --list)\n", o.op.c_str());
    return 2;
  }

  // The reference runs first and alone: the CPU backends share one OpenMP team, whose size
  // the backend made last sets.
  std::vector<std::vector<OpOutput>> reference;
  {
    auto cpu = runtime::make_cpu_backend(
        runtime::CpuBackendOptions{.threads = 1, .fp32_matmul = runtime::MatmulLibrary::kOpenBlas});
    for (const OpCase& c : cases) reference.push_back(run_case(c, *cpu));
  }

  std::vector<Precision> precisions;
  if (o.precision != "bf16") precisions.push_back(Precision::kF32);
  if (o.precision != "fp32") precisions.push_back(Precision::kBF16);
  int failures = 0, ran = 0;
  for (const Precision precision : precisions) {
    auto candidate = make_candidate(o, precision);
    if (!candidate) {
      const std::string reason = o.backend + " in " + runtime::precision_name(precision) + ": " +
                                 candidate.status().message();
      if (test::cannot_run_here("backend_ops", reason) != kSkipped) ++failures;
      continue;
    }
    Backend& backend = **candidate;
    if (backend.precision() != precision) {
      std::printf("backend_ops: asked for %s, %s runs in %s\n", runtime::precision_name(precision),
                  backend.name().c_str(), runtime::precision_name(backend.precision()));
      ++failures;
      continue;
    }
    std::printf("backend_ops: %s in %s (%s products, %d OpenMP threads) against the CPU reference "
                "(fp32, OpenBLAS, 1 thread)%s\n",
                backend.name().c_str(), runtime::precision_name(precision),
                precision == Precision::kBF16 ? "bf16" : o.fp32_matmul.c_str(), omp_get_max_threads(),
                o.exact ? ", bit for bit but the products" : "");
    failures += compare(cases, reference, backend, o.exact);
    ++ran;
  }
  if (ran == 0 && failures == 0) return kSkipped;
  std::printf("backend_ops: %d output(s) out of tolerance over %zu case(s)\n", failures, cases.size());
  return failures == 0 ? 0 : 1;
}
