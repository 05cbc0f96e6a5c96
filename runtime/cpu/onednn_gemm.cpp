#include "runtime/cpu/onednn_gemm.h"

#include <omp.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>

#include "runtime/cpu/gemm.h"
#include "runtime/cpu/product_tally.h"
#include "runtime/tensor.h"

namespace scion::runtime::cpu {
namespace {

using dnnl::memory;
using Dims = memory::dims;

struct GemmShape {
  GemmInput input;
  bool trans_a, trans_b;
  std::int64_t M, N, K, lda, ldb, ldc;
  bool accumulate;  // beta == 1
  bool serial;      // made for one thread of a parallel loop (serial_gemm_bf16)
  auto key() const {
    return std::tie(input, trans_a, trans_b, M, N, K, lda, ldb, ldc, accumulate, serial);
  }
  bool operator<(const GemmShape& other) const { return key() < other.key(); }
};

struct CachedProduct {
  dnnl::matmul primitive;
  memory::desc a, b, c, scratchpad;
  ProductLibrary library;  // for the tally
  std::int64_t M, N, K;
};

// Scratchpad memory for the primitives a thread runs, held for the thread's life and
// grown to the largest any of them asked for: oneDNN would otherwise allocate (and the
// kernel fault in) a large product's scratchpad at every call (primitives are made with
// scratchpad_mode::user).
class Scratchpad {
 public:
  void* reserve(std::size_t bytes) {
    if (bytes > bytes_) {
      std::free(data_);
      data_ = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
      bytes_ = data_ ? bytes : 0;
    }
    return data_;
  }
  ~Scratchpad() { std::free(data_); }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// One engine and primitive cache for the process. Products called from outside parallel
// regions (one caller at a time, the header says) run on one stream; serial products
// (serial_gemm_bf16) may run on every thread of a team at once: their lookups take a lock,
// and each thread executes on its own stream with its own scratchpad.
class OnednnContext {
 public:
  static OnednnContext& get() {
    static OnednnContext context;
    return context;
  }

  // nullptr when oneDNN has no implementation for this product (bf16 below AVX-512), or
  // only its slow reference one.
  const CachedProduct* product(const GemmShape& shape) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = cache_.find(shape);
    if (found != cache_.end()) return found->second.get();
    auto created = create(shape);
    return cache_.emplace(shape, std::move(created)).first->second.get();
  }

  void run(const CachedProduct& product, float alpha, const void* a, const void* b, float* c) {
    thread_local dnnl::stream stream(engine_);
    thread_local Scratchpad scratchpad;
    tally_product(product.library, product.M, product.N, product.K);
    memory a_mem(product.a, engine_, const_cast<void*>(a));
    memory b_mem(product.b, engine_, const_cast<void*>(b));
    memory c_mem(product.c, engine_, c);
    memory scale_mem({{1}, memory::data_type::f32, memory::format_tag::x}, engine_, &alpha);
    memory scratch_mem(product.scratchpad, engine_,
                       scratchpad.reserve(product.scratchpad.get_size()));
    product.primitive.execute(stream, {{DNNL_ARG_SRC, a_mem},
                                       {DNNL_ARG_WEIGHTS, b_mem},
                                       {DNNL_ARG_DST, c_mem},
                                       {DNNL_ARG_ATTR_OUTPUT_SCALES, scale_mem},
                                       {DNNL_ARG_SCRATCHPAD, scratch_mem}});
    stream.wait();
  }

 private:
  OnednnContext() : engine_(dnnl::engine::kind::cpu, 0) {}

  // A serial product is made while the OpenMP team is set to one thread: oneDNN divides
  // a product's work by the thread count it sees when the primitive is made, and inside
  // a parallel region it runs with one.
  std::unique_ptr<CachedProduct> create(const GemmShape& s) {
    if (!s.serial) return create_now(s);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    auto product = create_now(s);
    omp_set_num_threads(threads);
    return product;
  }

  std::unique_ptr<CachedProduct> create_now(const GemmShape& s) {
    const auto dt = s.input == GemmInput::kBF16 ? memory::data_type::bf16 : memory::data_type::f32;
    // op(a) is (M, K): stored (M, K) with row stride lda, or transposed: (K, M).
    const memory::desc a({s.M, s.K}, dt, s.trans_a ? Dims{1, s.lda} : Dims{s.lda, 1});
    const memory::desc b({s.K, s.N}, dt, s.trans_b ? Dims{1, s.ldb} : Dims{s.ldb, 1});
    const memory::desc c({s.M, s.N}, memory::data_type::f32, Dims{s.ldc, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_output_scales(0, {DNNL_RUNTIME_F32_VAL});
    if (s.accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    try {
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine_);
      if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0) return nullptr;
      const ProductLibrary library =
          s.input == GemmInput::kBF16 ? ProductLibrary::kOnednnBf16 : ProductLibrary::kOnednnF32;
      return std::make_unique<CachedProduct>(
          CachedProduct{dnnl::matmul(pd), a, b, c, pd.scratchpad_desc(), library, s.M, s.N, s.K});
    } catch (const dnnl::error&) {
      return nullptr;  // unimplemented here: the caller falls back
    }
  }

  dnnl::engine engine_;
  std::mutex mutex_;
  std::map<GemmShape, std::unique_ptr<CachedProduct>> cache_;
};

// Copies a stored (rows, cols; ld) bf16 matrix into a dense fp32 one.
void widen(const void* src, std::int64_t rows, std::int64_t cols, std::int64_t ld,
           std::vector<float>& dst) {
  dst.resize(static_cast<std::size_t>(rows * cols));
  const auto* bits = static_cast<const std::uint16_t*>(src);
#pragma omp parallel for schedule(static) if (rows * cols >= (1 << 15))
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t col = 0; col < cols; ++col)
      dst[static_cast<std::size_t>(r * cols + col)] = bf16_to_float(bits[r * ld + col]);
}

void gemm_fp32(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
               float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
               float beta, float* c, std::int64_t ldc) {
  const GemmShape shape{GemmInput::kF32, trans_a, trans_b, M, N, K, lda, ldb, ldc,
                        beta != 0.0f,    false};
  OnednnContext& context = OnednnContext::get();
  if (const CachedProduct* product = context.product(shape)) {
    context.run(*product, alpha, a, b, c);
    return;
  }
  gemm(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);  // not expected on x86-64
}

}  // namespace

void onednn_gemm(GemmInput input, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N,
                 std::int64_t K, float alpha, const void* a, std::int64_t lda, const void* b,
                 std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // oneDNN rejects empty reductions; the product is zero
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) c[m * ldc + n] = beta == 0.0f ? 0.0f : c[m * ldc + n];
    return;
  }
  if (input == GemmInput::kF32) {
    gemm_fp32(trans_a, trans_b, M, N, K, alpha, static_cast<const float*>(a), lda,
              static_cast<const float*>(b), ldb, beta, c, ldc);
    return;
  }
  const GemmShape shape{input, trans_a, trans_b, M, N, K, lda, ldb, ldc, beta != 0.0f, false};
  OnednnContext& context = OnednnContext::get();
  if (const CachedProduct* product = context.product(shape)) {
    context.run(*product, alpha, a, b, c);
    return;
  }
  thread_local std::vector<float> wide_a, wide_b;
  const std::int64_t a_rows = trans_a ? K : M, a_cols = trans_a ? M : K;
  const std::int64_t b_rows = trans_b ? N : K, b_cols = trans_b ? K : N;
  widen(a, a_rows, a_cols, lda, wide_a);
  widen(b, b_rows, b_cols, ldb, wide_b);
  gemm_fp32(trans_a, trans_b, M, N, K, alpha, wide_a.data(), a_cols, wide_b.data(), b_cols, beta,
            c, ldc);
}

void gemm_onednn_f32(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                     float alpha, const float* a, std::int64_t lda, const float* b,
                     std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  onednn_gemm(GemmInput::kF32, trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

void onednn_sgemm_serial(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                         float alpha, const float* a, std::int64_t lda, const float* b,
                         std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  if (M == 0 || N == 0) return;
  tally_product(ProductLibrary::kOnednnF32, M, N, K);
  dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, a, lda, b, ldb, beta, c,
             ldc);
}

bool serial_gemm_bf16(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                      float alpha, const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b,
                      std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  if (M == 0 || N == 0) return true;
  if (K == 0) {
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) c[m * ldc + n] = beta == 0.0f ? 0.0f : c[m * ldc + n];
    return true;
  }
  const GemmShape shape{GemmInput::kBF16, trans_a, trans_b, M, N, K, lda, ldb, ldc,
                        beta != 0.0f,     true};
  OnednnContext& context = OnednnContext::get();
  const CachedProduct* product = context.product(shape);
  if (!product) return false;
  context.run(*product, alpha, a, b, c);
  return true;
}

OnednnInfo onednn_info() {
  OnednnInfo info;
  const dnnl_version_t* v = dnnl_version();
  info.version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                 std::to_string(v->patch);
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: info.isa = "sse41"; break;
    case dnnl::cpu_isa::avx: info.isa = "avx"; break;
    case dnnl::cpu_isa::avx2: info.isa = "avx2"; break;
    case dnnl::cpu_isa::avx2_vnni: info.isa = "avx2_vnni"; break;
    case dnnl::cpu_isa::avx512_mic: info.isa = "avx512_mic"; break;
    case dnnl::cpu_isa::avx512_mic_4ops: info.isa = "avx512_mic_4ops"; break;
    case dnnl::cpu_isa::avx512_core: info.isa = "avx512_core"; break;
    case dnnl::cpu_isa::avx512_core_vnni: info.isa = "avx512_core_vnni"; break;
    case dnnl::cpu_isa::avx512_core_bf16: info.isa = "avx512_core_bf16"; break;
    case dnnl::cpu_isa::avx512_core_amx: info.isa = "avx512_core_amx"; break;
    default: info.isa = "generic"; break;
  }
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  info.native_bf16 = isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  // A representative bf16 product: whether oneDNN has a non-reference kernel for it.
  const GemmShape probe{GemmInput::kBF16, false, true, 64, 64, 64, 64, 64, 64, false, false};
  info.bf16_kernel = OnednnContext::get().product(probe) != nullptr;
  return info;
}

}  // namespace scion::runtime::cpu
