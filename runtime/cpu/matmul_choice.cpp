#include "runtime/cpu/matmul_choice.h"

#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "base/regular_file.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/onednn_gemm.h"

extern "C" void openblas_set_num_threads(int num_threads);

namespace scion::runtime::cpu {
namespace {

constexpr const char* kCacheHeader = "scion fp32 matmul choice v1";
// OpenBLAS keeps a class only when it is this much faster than oneDNN (rule 2): a margin
// larger than what one-thread CPU-time medians vary by between runs (about 3%).
constexpr double kOpenBlasMargin = 1.10;

double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The CPU's model name and the ISA flags the products depend on.
std::string cpu_identity() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown CPU", flags;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0 && model == "unknown CPU" &&
        line.find(':') != std::string::npos)
      model = line.substr(line.find(':') + 2);
    if (line.rfind("flags", 0) == 0 && flags.empty()) {
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string flag; words >> flag;)
        for (const char* wanted :
             {"avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})
          if (flag == wanted) flags += " " + flag;
    }
  }
  return model + " |" + flags;
}

// A probe: the products of one class a representative layer runs, on `library`.
struct Probe {
  ProductClass product_class;
  double flops;
  std::function<void(MatmulLibrary)> run;
};

// Scratch operands for the probes: the largest is 768 x 768 floats.
struct ProbeOperands {
  std::vector<float> a, b, c;
  ProbeOperands() : a(512 * 768), b(768 * 768), c(768 * 768) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 97) / 97.0f - 0.5f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 89) / 89.0f - 0.5f;
  }
};

// One product of `library` on the calling thread (the team is 1 thread while probing).
void product(MatmulLibrary library, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N,
             std::int64_t K, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
             float* c, std::int64_t ldc) {
  if (library == MatmulLibrary::kOpenBlas)
    gemm_serial(trans_a, trans_b, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  else
    gemm_onednn_f32(trans_a, trans_b, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}

// One (sequence, head) product as attention runs it (attention.cpp: serial, strided).
void head_product(MatmulLibrary library, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N,
                  std::int64_t K, const float* a, std::int64_t lda, const float* b,
                  std::int64_t ldb, float* c, std::int64_t ldc) {
  if (library == MatmulLibrary::kOpenBlas)
    gemm_serial(trans_a, trans_b, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  else
    onednn_sgemm_serial(trans_a, trans_b, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}

std::vector<Probe> probes(ProbeOperands& x) {
  // Inputs come from a and b, outputs go to c (and never feed a later product), so the
  // values stay the same whatever the order and count of runs.
  const float *a = x.a.data(), *b = x.b.data();
  float* c = x.c.data();
  std::vector<Probe> out;
  // A 768-wide linear layer over 512 rows: forward, input gradient, weight gradient.
  out.push_back({ProductClass::kLinear, 3 * 2.0 * 512 * 768 * 768, [=](MatmulLibrary lib) {
                   product(lib, false, true, 512, 768, 768, a, 768, b, 768, c, 768);
                   product(lib, false, false, 512, 768, 768, a, 768, b, 768, c, 768);
                   product(lib, true, false, 768, 768, 512, a, 768, a, 768, c, 768);
                 }});
  // A rank-8 LoRA on it: the down product, the up product, the down weight's gradient.
  out.push_back({ProductClass::kThin, 3 * 2.0 * 512 * 8 * 768, [=](MatmulLibrary lib) {
                   product(lib, false, true, 512, 8, 768, a, 768, b, 768, c, 8);
                   product(lib, false, true, 512, 768, 8, a, 8, b, 8, c, 768);
                   product(lib, true, false, 8, 768, 512, a, 8, b, 768, c, 768);
                 }});
  // Attention at T = 128, 12 heads of 64 in a 768-wide row: scores, mixing, value gradient.
  out.push_back(
      {ProductClass::kAttention, 12 * 3 * 2.0 * 128 * 128 * 64, [=](MatmulLibrary lib) {
         for (int h = 0; h < 12; ++h) {
           head_product(lib, false, true, 128, 128, 64, a + h * 64, 768, b + h * 64, 768, c, 128);
           head_product(lib, false, false, 128, 64, 128, a, 128, b + h * 64, 768, c + h * 64, 768);
           head_product(lib, true, false, 128, 64, 128, a, 128, b + h * 64, 768, c + h * 64, 768);
         }
       }});
  return out;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Rule 2: times every class on one thread and chooses.
std::array<ClassChoice, kProductClasses> measure() {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  openblas_set_num_threads(1);  // scion always calls OpenBLAS single-threaded (gemm.h)
  ProbeOperands operands;
  std::array<ClassChoice, kProductClasses> classes;
  for (const Probe& probe : probes(operands)) {
    std::vector<double> onednn, openblas;
    for (int rep = 0; rep < 4; ++rep)  // rep 0 warms up: JIT, page faults
      for (MatmulLibrary lib : {MatmulLibrary::kOnednn, MatmulLibrary::kOpenBlas}) {
        const double start = thread_seconds();
        probe.run(lib);
        const double seconds = std::max(thread_seconds() - start, 1e-9);
        if (rep > 0) (lib == MatmulLibrary::kOnednn ? onednn : openblas).push_back(seconds);
      }
    ClassChoice& choice = classes[static_cast<int>(probe.product_class)];
    choice.onednn_gflops = probe.flops / median_of(onednn) / 1e9;
    choice.openblas_gflops = probe.flops / median_of(openblas) / 1e9;
    choice.library = choice.openblas_gflops >= kOpenBlasMargin * choice.onednn_gflops
                         ? MatmulLibrary::kOpenBlas
                         : MatmulLibrary::kOnednn;
  }
  omp_set_num_threads(threads);
  return classes;
}

std::string cache_directory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/scion";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/scion";
  return {};
}

std::string machine_key(const MatmulChoice& choice) {
  const OnednnInfo onednn = onednn_info();
  return cpu_identity() + " | OpenBLAS " + choice.openblas_core + " " + choice.openblas_config +
         " | oneDNN " + onednn.version + " " + onednn.isa;
}

// The cached classes for `key`, if the file holds them. The cache is read only when it is
// a regular file (base/regular_file.h), never through a link: a fifo planted there would
// block every command that multiplies. `refused` says why a file there was not read.
bool read_cache(const std::string& path, const std::string& key,
                std::array<ClassChoice, kProductClasses>& classes, std::string& refused) {
  auto contents = read_regular_file(path, FollowLinks::kNo);
  if (!contents) {
    if (contents.status().code() != StatusCode::kNotFound) refused = contents.status().message();
    return false;
  }
  std::istringstream in(*contents);
  std::string header, machine;
  if (!std::getline(in, header) || header != kCacheHeader) return false;
  if (!std::getline(in, machine) || machine != "machine " + key) return false;
  for (int i = 0; i < kProductClasses; ++i) {
    std::string name, library;
    ClassChoice choice;
    if (!(in >> name >> library >> choice.onednn_gflops >> choice.openblas_gflops)) return false;
    if (name != product_class_name(static_cast<ProductClass>(i))) return false;
    if (library != "onednn" && library != "openblas") return false;
    choice.library = library == "onednn" ? MatmulLibrary::kOnednn : MatmulLibrary::kOpenBlas;
    classes[i] = choice;
  }
  return true;
}

// Written through the write guard: a temporary file renamed over the cache, so a
// concurrent reader sees all or nothing and no planted link is written through.
bool write_cache(const std::string& path, const std::string& key,
                 const std::array<ClassChoice, kProductClasses>& classes) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  std::ostringstream out;
  out << kCacheHeader << "\nmachine " << key << "\n";
  for (int i = 0; i < kProductClasses; ++i)
    out << product_class_name(static_cast<ProductClass>(i)) << " "
        << matmul_library_name(classes[i].library) << " " << classes[i].onednn_gflops << " "
        << classes[i].openblas_gflops << "\n";
  return write_file_replacing(path, out.str()).is_ok();
}

// The cache path holds something that is not a regular file: it is left as it is (not
// replaced, not written through), this process measures, and says so once on stderr.
MatmulChoice measured_without_cache(MatmulChoice choice, const std::string& refused) {
  std::fprintf(stderr,
               "scion: warning: the fp32 matmul cache is not used: %s; this process measured "
               "again (remove that path to let scion cache its choice)\n",
               refused.c_str());
  choice.classes = measure();
  choice.how = "measured by this process; the cache was ignored: " + refused;
  return choice;
}

MatmulChoice make_choice() {
  MatmulChoice choice;
  choice.openblas_core = openblas_get_corename();
  choice.openblas_config = openblas_get_config();
  choice.openblas_wide = openblas_core_is_wide(choice.openblas_core);
  choice.cpu_has_avx2 = __builtin_cpu_supports("avx2");
  if (choice.cpu_has_avx2 && !choice.openblas_wide) {  // rule 1
    choice.how = "rule: OpenBLAS's " + choice.openblas_core +
                 " kernels are narrower than the CPU (avx2 or wider): oneDNN for every class";
    return choice;  // every class defaults to oneDNN
  }
  const std::string directory = cache_directory();
  const std::string key = machine_key(choice);
  if (!directory.empty()) {
    choice.cache_path = directory + "/fp32-matmul-choice.txt";
    std::string refused;
    if (read_cache(choice.cache_path, key, choice.classes, refused)) {
      choice.how = "measured once on this machine, cached in " + choice.cache_path;
      return choice;
    }
    if (!refused.empty()) return measured_without_cache(std::move(choice), refused);
  }
  choice.classes = measure();
  if (choice.cache_path.empty())
    choice.how = "measured by this process (no cache directory: set HOME or XDG_CACHE_HOME)";
  else if (write_cache(choice.cache_path, key, choice.classes))
    choice.how = "measured by this process, cached in " + choice.cache_path;
  else
    choice.how = "measured by this process (could not write " + choice.cache_path + ")";
  return choice;
}

}  // namespace

const char* product_class_name(ProductClass product_class) {
  switch (product_class) {
    case ProductClass::kLinear:
      return "linear";
    case ProductClass::kThin:
      return "thin";
    case ProductClass::kAttention:
      return "attention";
  }
  return "?";
}

const char* matmul_library_name(MatmulLibrary library) {
  switch (library) {
    case MatmulLibrary::kAuto:
      return "auto";
    case MatmulLibrary::kOnednn:
      return "onednn";
    case MatmulLibrary::kOpenBlas:
      return "openblas";
  }
  return "?";
}

bool openblas_core_is_wide(const std::string& core) {
  // OpenBLAS's x86-64 cores with AVX2 (or AVX-512) GEMM kernels; every other core name
  // (Prescott, Core2, Nehalem, Sandybridge, Bulldozer, ..., Katmai) is narrower.
  for (const char* wide : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"})
    if (core == wide) return true;
  return false;
}

void gemm_chosen(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                 float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                 float beta, float* c, std::int64_t ldc) {
  if (fp32_matmul_choice().library(classify_product(M, N, K)) == MatmulLibrary::kOpenBlas)
    gemm(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    gemm_onednn_f32(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

const MatmulChoice& fp32_matmul_choice() {
  static const MatmulChoice choice = make_choice();
  return choice;
}

}  // namespace scion::runtime::cpu
