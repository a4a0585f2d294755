// RMSNorm over the last dimension: y = x * rsqrt(mean(x^2) + eps) * w.
// Pure CUDA (no torch headers): rms_norm_launch.cu launches it, rms_norm.cpp binds that to torch.
#pragma once
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

namespace perfgate_kernels {

template <typename T> __device__ __forceinline__ float to_float(T v) { return static_cast<float>(v); }
template <typename T> __device__ __forceinline__ T from_float(float v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

// VEC elements moved as one aligned access: 16 bytes (8 x bf16, 4 x fp32) per load is what it takes
// to approach HBM bandwidth; VEC = 1 is the fallback for unaligned rows.
template <typename T, int VEC> struct alignas(sizeof(T) * VEC) Pack { T v[VEC]; };

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float block_sum(float v, float* partial) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int n_warps = (blockDim.x + 31) >> 5;
    float s = lane < n_warps ? partial[lane] : 0.f;
    s = warp_sum(s);
    if (lane == 0) partial[0] = s;
  }
  __syncthreads();
  return partial[0];
}

// One block per row: a strided pass accumulates x^2 in fp32, a block reduction gives the row's sum,
// a second pass (the row is still in L1/L2) writes the output. Requires n_cols % VEC == 0 and rows
// aligned to sizeof(Pack); the host picks VEC accordingly.
template <typename T, int VEC>
__global__ void rms_norm_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                long long n_cols, float eps) {
  using P = Pack<T, VEC>;
  __shared__ float partial[32];
  const long long row = blockIdx.x;
  const long long n_packs = n_cols / VEC;
  const P* xr = reinterpret_cast<const P*>(x + row * n_cols);
  const P* wp = reinterpret_cast<const P*>(w);
  P* yr = reinterpret_cast<P*>(y + row * n_cols);
  float acc = 0.f;
  for (long long p = threadIdx.x; p < n_packs; p += blockDim.x) {
    const P pk = xr[p];
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const float v = to_float(pk.v[i]);
      acc += v * v;
    }
  }
  const float scale = rsqrtf(block_sum(acc, partial) / static_cast<float>(n_cols) + eps);
  for (long long p = threadIdx.x; p < n_packs; p += blockDim.x) {
    const P pk = xr[p];
    const P wk = wp[p];
    P out;
#pragma unroll
    for (int i = 0; i < VEC; ++i) out.v[i] = from_float<T>(to_float(pk.v[i]) * scale * to_float(wk.v[i]));
    yr[p] = out;
  }
}

}  // namespace perfgate_kernels
