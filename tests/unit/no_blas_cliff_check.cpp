// The BLAS cliff check (issue #24): with OpenBLAS forced onto its generic kernels
// (OPENBLAS_CORETYPE=Prescott, which tests/meson.build sets for this program) on a CPU
// with AVX2, no fp32 product may go to OpenBLAS. It checks the choice itself
// (runtime/cpu/matmul_choice.h) and then where the products of a default CPU backend
// really went, counted by the libraries' tallies (runtime/cpu/product_tally.h), for
// linear, thin and attention products, forward and backward, in fp32 and bf16.
//
// Exit: 0 checked, 1 a product went to OpenBLAS (or the choice says so), 77 not
// applicable here: OpenBLAS is not a DYNAMIC_ARCH build (the core type cannot be forced)
// or the CPU has no AVX2 (then OpenBLAS's generic kernels are no cliff).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/cpu/matmul_choice.h"
#include "runtime/cpu/product_tally.h"

using namespace scion::runtime;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

std::int64_t calls(cpu::ProductLibrary library) { return cpu::product_tally(library).calls; }

// Linear (512 x 256 -> 256), thin (512 x 256 -> 8) and attention (T = 128, 4 heads of 64)
// products, forward and backward, on `backend`.
void run_products(Backend& backend) {
  const int N = 512, C = 256, R = 8, B = 2, T = 128, NH = 4;
  auto buffer = [&](std::size_t n) {
    std::vector<float> host(n, 0.01f);
    void* data = backend.allocate(n * sizeof(float));
    backend.copy_to_device(data, host.data(), n * sizeof(float));
    return static_cast<float*>(data);
  };
  float *x = buffer(N * C), *w = buffer(C * C), *y = buffer(N * C), *dx = buffer(N * C),
        *dw = buffer(C * C), *a = buffer(R * C), *xa = buffer(N * R), *da = buffer(R * C);
  backend.matmul_forward(y, x, w, nullptr, N, C, C);
  backend.matmul_backward(dx, dw, nullptr, y, x, w, 1.0f, N, C, C, GradMode::kAssign);
  backend.matmul_forward(xa, x, a, nullptr, N, C, R);
  backend.matmul_backward(dx, da, nullptr, xa, x, a, 1.0f, N, C, R, GradMode::kAssign);
  float *q = buffer(B * T * C), *k = buffer(B * T * C), *v = buffer(B * T * C),
        *out = buffer(B * T * C), *probs = buffer(B * NH * T * T), *dq = buffer(B * T * C),
        *dk = buffer(B * T * C), *dv = buffer(B * T * C);
  backend.attention_forward(out, probs, q, k, v, nullptr, nullptr, nullptr, B, T, 0, C, NH, false, 0);
  backend.attention_backward(dq, dk, dv, nullptr, nullptr, out, probs, q, k, v, nullptr, nullptr,
                             B, T, 0, C, NH);
  for (float* p : {x, w, y, dx, dw, a, xa, da, q, k, v, out, probs, dq, dk, dv}) backend.deallocate(p);
}

}  // namespace

int main() {
  const cpu::MatmulChoice& choice = cpu::fp32_matmul_choice();
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  std::printf("OPENBLAS_CORETYPE=%s; OpenBLAS runs its %s kernels (%s)\n", forced ? forced : "",
              choice.openblas_core.c_str(), choice.openblas_config.c_str());
  if (choice.openblas_core != "Prescott") {
    std::printf("skipped: OpenBLAS did not take OPENBLAS_CORETYPE=Prescott (not a DYNAMIC_ARCH "
                "build, or the variable is not set)\n");
    return 77;
  }
  if (!choice.cpu_has_avx2) {
    std::printf("skipped: this CPU has no AVX2, so OpenBLAS's generic kernels are no cliff\n");
    return 77;
  }
  check(!cpu::openblas_core_is_wide("Prescott") && cpu::openblas_core_is_wide("SkylakeX") &&
            cpu::openblas_core_is_wide("Haswell") && !cpu::openblas_core_is_wide("Sandybridge"),
        "the rule knows generic and wide OpenBLAS cores");
  for (int c = 0; c < cpu::kProductClasses; ++c)
    check(choice.classes[c].library == MatmulLibrary::kOnednn,
          std::string("the choice for ") +
              cpu::product_class_name(static_cast<cpu::ProductClass>(c)) + " products is " +
              cpu::matmul_library_name(choice.classes[c].library) + " (" + choice.how + ")");
  for (const Precision precision : {Precision::kF32, Precision::kBF16}) {
    auto backend = make_cpu_backend(CpuBackendOptions{.threads = 2, .precision = precision});
    const std::int64_t openblas = calls(cpu::ProductLibrary::kOpenBlasF32);
    const std::int64_t onednn = calls(cpu::ProductLibrary::kOnednnF32) + calls(cpu::ProductLibrary::kOnednnBf16);
    run_products(*backend);
    const std::int64_t to_openblas = calls(cpu::ProductLibrary::kOpenBlasF32) - openblas;
    const std::int64_t to_onednn =
        calls(cpu::ProductLibrary::kOnednnF32) + calls(cpu::ProductLibrary::kOnednnBf16) - onednn;
    check(to_openblas == 0 && to_onednn > 0,
          std::string("a default ") + precision_name(precision) + " CPU backend ran " +
              std::to_string(to_onednn) + " products on oneDNN and " + std::to_string(to_openblas) +
              " on OpenBLAS");
  }
  std::printf("%s\n", failures == 0 ? "no product went to a generic OpenBLAS kernel"
                                    : "products went to a generic OpenBLAS kernel");
  return failures == 0 ? 0 : 1;
}
