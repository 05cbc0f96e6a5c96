// Device helpers the CUDA kernels share: launch geometry, warp and block sums, the bf16
// rounding of runtime/tensor.h and the counter-based hash of base/seeded_rng.h, written
// out again here for the device (same arithmetic, so the same bits as on the CPU).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace scion::runtime::cuda {

inline constexpr int kBlock = 256;  // threads per block of the one-thread-per-element kernels

// Blocks for n elements at one per thread, capped: the kernels stride over the rest.
inline unsigned blocks_for(std::int64_t n, int block = kBlock) {
  const std::int64_t blocks = (n + block - 1) / block;
  return static_cast<unsigned>(blocks < 65535 ? (blocks < 1 ? 1 : blocks) : 65535);
}

// Calls f(i) for every i in [0, n), one thread per element, grid-striding past the cap.
template <class F>
__global__ void for_each_index_kernel(std::int64_t n, F f) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    f(i);
}

template <class F>
void for_each_index(std::int64_t n, cudaStream_t stream, F f) {
  if (n <= 0) return;
  for_each_index_kernel<<<blocks_for(n), kBlock, 0, stream>>>(n, f);
}

__device__ inline float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ inline double warp_sum(double v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The sum (max) of every thread's v, returned to every thread of the block.
// REQUIRES: blockDim.x is a multiple of 32, at most 1024; every thread of the block calls it.
template <class T>
__device__ inline T block_sum(T v) {
  __shared__ T partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // an earlier call's partial may still be being read
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  return warp_sum(lane < warps ? partial[lane] : T(0));
}
__device__ inline float block_max(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  return warp_max(lane < warps ? partial[lane] : -INFINITY);
}

// runtime/tensor.h float_to_bf16: round to nearest even; NaN stays NaN.
__device__ inline std::uint16_t float_to_bf16(float value) {
  const std::uint32_t bits = __float_as_uint(value);
  if (value != value) return static_cast<std::uint16_t>((bits >> 16) | 0x40);
  const std::uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

// base/seeded_rng.h splitmix64.
__host__ __device__ constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
__host__ __device__ constexpr std::uint64_t splitmix64(std::uint64_t x) {
  return mix64(x + 0x9e3779b97f4a7c15ULL);
}

}  // namespace scion::runtime::cuda
