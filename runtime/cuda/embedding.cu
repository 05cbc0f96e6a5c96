// Token (+ position) embeddings with optional prompt rows in front (runtime/cpu/embedding.h).
// The forward is one thread per output element.
//
// The backward sums rows of dout into embedding rows, deterministically (no atomics) and
// with the whole device at work:
//   - positions and prompt rows: one thread per (position, channel) adds the B sequences'
//     rows in sequence order;
//   - tokens, whose rows repeat (the same token twice): the (token, position) pairs are
//     sorted by token with CUB's radix sort, which is stable, so each token's positions
//     stay in ascending order; then one thread per (token, channel) at the start of each
//     token's run adds that run's rows in position order. Parallel over the distinct
//     tokens times the channels, and each sum's order depends on the input alone.
#include <cub/device/device_radix_sort.cuh>

#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {
namespace {

// The scratch of the backward, carved from one allocation: the positions 0 .. B·T - 1,
// the sorted tokens and positions, then CUB's temporary storage.
struct SortScratch {
  std::int32_t* positions = nullptr;
  std::int32_t* sorted_tokens = nullptr;
  std::int32_t* sorted_positions = nullptr;
  void* cub = nullptr;
  std::size_t cub_bytes = 0;
};

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

std::size_t cub_sort_bytes(int n) {
  std::size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const std::int32_t*>(nullptr),
                                  static_cast<std::int32_t*>(nullptr),
                                  static_cast<const std::int32_t*>(nullptr),
                                  static_cast<std::int32_t*>(nullptr), n);
  return bytes;
}

SortScratch carve(void* scratch, int n) {
  auto* base = static_cast<unsigned char*>(scratch);
  const std::size_t array = aligned(static_cast<std::size_t>(n) * sizeof(std::int32_t));
  SortScratch s;
  s.positions = reinterpret_cast<std::int32_t*>(base);
  s.sorted_tokens = reinterpret_cast<std::int32_t*>(base + array);
  s.sorted_positions = reinterpret_cast<std::int32_t*>(base + 2 * array);
  s.cub = base + 3 * array;
  s.cub_bytes = cub_sort_bytes(n);
  return s;
}

}  // namespace

void embedding_forward(float* out, const std::int32_t* inp, const float* wte, const float* wpe,
                       const float* prompt, int B, int T, int P, int C, cudaStream_t stream) {
  const int S = P + T;
  for_each_index(static_cast<std::int64_t>(B) * S * C, stream, [=] __device__(std::int64_t i) {
    const int c = static_cast<int>(i % C);
    const std::int64_t row = i / C;
    const int s = static_cast<int>(row % S), b = static_cast<int>(row / S);
    const float x = s < P ? prompt[static_cast<std::int64_t>(s) * C + c]
                          : wte[static_cast<std::int64_t>(inp[b * T + (s - P)]) * C + c];
    out[i] = wpe ? x + wpe[static_cast<std::int64_t>(s) * C + c] : x;
  });
}

std::size_t embedding_backward_scratch_bytes(int B, int T) {
  const int n = B * T;
  return 3 * aligned(static_cast<std::size_t>(n) * sizeof(std::int32_t)) + cub_sort_bytes(n);
}

cudaError_t embedding_backward(float* dwte, float* dwpe, float* dprompt, const float* dout,
                               const std::int32_t* inp, int B, int T, int P, int C, void* scratch,
                               std::size_t scratch_bytes, cudaStream_t stream) {
  if (C <= 0) return cudaSuccess;
  const int S = P + T;
  // Positions (accumulated) and prompt rows (assigned): sums over the sequences.
  if (dwpe || dprompt)
    for_each_index(static_cast<std::int64_t>(S) * C, stream, [=] __device__(std::int64_t i) {
      const std::int64_t s = i / C;
      float sum = 0.0f;
      for (int b = 0; b < B; ++b) sum += dout[static_cast<std::int64_t>(b) * S * C + i];
      if (dwpe) dwpe[i] += sum;
      if (dprompt && s < P) dprompt[i] = sum;
    });
  const int n = B * T;
  if (!dwte || n <= 0) return cudaSuccess;
  if (scratch_bytes < embedding_backward_scratch_bytes(B, T)) return cudaErrorInvalidValue;
  const SortScratch sort = carve(scratch, n);
  std::int32_t* positions = sort.positions;
  for_each_index(n, stream,
                 [=] __device__(std::int64_t i) { positions[i] = static_cast<std::int32_t>(i); });
  std::size_t cub_bytes = sort.cub_bytes;
  if (const cudaError_t err =
          cub::DeviceRadixSort::SortPairs(sort.cub, cub_bytes, inp, sort.sorted_tokens, positions,
                                          sort.sorted_positions, n, 0, 32, stream);
      err != cudaSuccess)
    return err;
  const std::int32_t* tokens = sort.sorted_tokens;
  const std::int32_t* rows = sort.sorted_positions;
  // One thread per (sorted index, channel); only the first index of each token's run sums.
  for_each_index(static_cast<std::int64_t>(n) * C, stream, [=] __device__(std::int64_t i) {
    const std::int64_t first = i / C;
    const int c = static_cast<int>(i % C);
    const std::int32_t token = tokens[first];
    if (first > 0 && tokens[first - 1] == token) return;
    float sum = 0.0f;
    for (std::int64_t j = first; j < n && tokens[j] == token; ++j) {
      const std::int32_t position = rows[j];  // b · T + t
      const std::int64_t row = static_cast<std::int64_t>(position / T) * S + P + position % T;
      sum += dout[row * C + c];
    }
    dwte[static_cast<std::int64_t>(token) * C + c] += sum;
  });
  return cudaSuccess;
}

}  // namespace scion::runtime::cuda
