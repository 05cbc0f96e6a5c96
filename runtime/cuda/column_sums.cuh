// Sums over the rows of an (N, C) array of terms, one sum per column, with the whole device
// at work and a fixed order: the parameter gradients of the norms (norms.cu) and the bias
// gradient (matmul_support.cu).
//
// One thread per column walking all N rows keeps the order fixed but uses C threads: a few
// SMs of an H100 for C = 768. Here the rows are cut into chunks (column_sum_chunks: at
// most kChunks, at least kRowsPerChunk rows each but the last) and a block of kTile columns
// x kLanes row lanes sums one chunk for its columns: lane l takes rows l, l + kLanes, ...
// of the chunk in order, then lane 0 adds the lanes' sums in lane order into the chunk's
// partial sum. A second kernel adds each column's partial sums in chunk order into the
// output (+=, as parameter gradients accumulate). Every sum's order depends on N and C
// only, so a run repeats its bits on any device; no atomics.
//
// Term: a __device__ callable term(n, c, sums) that adds row n's terms for column c into
// sums[0 .. kOutputs) (layer norm has two: the weight's and the bias's).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/cuda/device_math.cuh"

namespace scion::runtime::cuda {

// The outputs of column_sums (a plain array: std::array's operator[] is not device code).
template <int kOutputs>
struct ColumnOutputs {
  float* out[kOutputs];
};

inline constexpr int kColumnTile = 32;  // columns per block: one warp reads 128 bytes
inline constexpr int kColumnLanes = 8;  // row lanes per block
inline constexpr std::int64_t kRowsPerChunk = 128;
inline constexpr std::int64_t kMaxChunks = 65535;  // the grid's y limit

inline std::int64_t column_sum_chunks(std::int64_t N) {
  const std::int64_t chunks = (N + kRowsPerChunk - 1) / kRowsPerChunk;
  return chunks < 1 ? 1 : chunks < kMaxChunks ? chunks : kMaxChunks;
}

// Floats of scratch that column_sums needs for `outputs` sums of an (N, C) array.
inline std::int64_t column_sum_scratch(int outputs, std::int64_t N, int C) {
  return outputs * column_sum_chunks(N) * C;
}

template <int kOutputs, class Term>
__global__ void column_partial_sums(float* partials, std::int64_t N, int C,
                                    std::int64_t rows_per_chunk, Term term) {
  __shared__ float lane_sums[kOutputs][kColumnLanes][kColumnTile];
  const int c = static_cast<int>(blockIdx.x) * kColumnTile + static_cast<int>(threadIdx.x);
  const std::int64_t chunk = blockIdx.y;
  const std::int64_t first = chunk * rows_per_chunk;
  const std::int64_t end = first + rows_per_chunk < N ? first + rows_per_chunk : N;
  float sums[kOutputs] = {};
  if (c < C)
    for (std::int64_t n = first + threadIdx.y; n < end; n += kColumnLanes) term(n, c, sums);
  for (int k = 0; k < kOutputs; ++k) lane_sums[k][threadIdx.y][threadIdx.x] = sums[k];
  __syncthreads();
  if (threadIdx.y != 0 || c >= C) return;
  for (int k = 0; k < kOutputs; ++k) {
    float total = 0.0f;
    for (int lane = 0; lane < kColumnLanes; ++lane) total += lane_sums[k][lane][threadIdx.x];
    partials[(k * gridDim.y + chunk) * C + c] = total;
  }
}

template <int kOutputs>
__global__ void add_column_partials(ColumnOutputs<kOutputs> outputs, const float* partials,
                                    std::int64_t chunks, int C) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= C) return;
  for (int k = 0; k < kOutputs; ++k) {
    if (outputs.out[k] == nullptr) continue;
    float total = 0.0f;
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk)
      total += partials[(k * chunks + chunk) * C + c];
    outputs.out[k][c] += total;
  }
}

// outputs.out[k][c] += Σ_n (row n's k-th term of column c), for the outputs that are not
// null. `partials`: column_sum_scratch(kOutputs, N, C) floats of device memory.
template <int kOutputs, class Term>
void column_sums(ColumnOutputs<kOutputs> outputs, float* partials, std::int64_t N, int C, Term term,
                 cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  const std::int64_t chunks = column_sum_chunks(N);
  const std::int64_t rows_per_chunk = (N + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>((C + kColumnTile - 1) / kColumnTile),
                  static_cast<unsigned>(chunks));
  column_partial_sums<kOutputs>
      <<<grid, dim3(kColumnTile, kColumnLanes), 0, stream>>>(partials, N, C, rows_per_chunk, term);
  add_column_partials<kOutputs><<<blocks_for(C), kBlock, 0, stream>>>(outputs, partials, chunks, C);
}

}  // namespace scion::runtime::cuda
