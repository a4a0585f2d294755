// RMSNorm over the last dimension: y = x * rsqrt(mean(x^2) + eps) * w.
// Pure CUDA (no torch headers) so CI can compile it with nvcc alone; rms_norm.cu binds it to torch.
#pragma once
#include <cuda_runtime.h>

namespace perfgate_kernels {

template <typename T> __device__ __forceinline__ float to_float(T v) { return static_cast<float>(v); }
template <typename T> __device__ __forceinline__ T from_float(float v) { return static_cast<T>(v); }

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One block per row. Each thread strides over the row accumulating x^2 in fp32; a warp-shuffle then
// shared-memory reduction gives the row's sum; a second pass (served from L1/L2) writes the output.
template <typename T>
__global__ void rms_norm_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                long long n_cols, float eps) {
  __shared__ float partial[32];
  const long long row = blockIdx.x;
  const T* xr = x + row * n_cols;
  T* yr = y + row * n_cols;
  float acc = 0.f;
  for (long long c = threadIdx.x; c < n_cols; c += blockDim.x) {
    float v = to_float(xr[c]);
    acc += v * v;
  }
  acc = warp_sum(acc);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    const int n_warps = (blockDim.x + 31) >> 5;
    float s = lane < n_warps ? partial[lane] : 0.f;
    s = warp_sum(s);
    if (lane == 0) partial[0] = rsqrtf(s / static_cast<float>(n_cols) + eps);
  }
  __syncthreads();
  const float scale = partial[0];
  for (long long c = threadIdx.x; c < n_cols; c += blockDim.x) {
    yr[c] = from_float<T>(to_float(xr[c]) * scale * to_float(w[c]));
  }
}

}  // namespace perfgate_kernels
