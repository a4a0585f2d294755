// Host launchers of the RMSNorm kernel: CUDA headers only, so nvcc never parses torch's (the binding,
// rms_norm.cpp, is the one translation unit that includes them, and a C++ compiler builds it alone).
// Every variant the binding may launch is instantiated here; CI compiles this file with nvcc alone.
#include <cstdint>
#include "rms_norm_launch.h"
#include "rms_norm_kernel.cuh"

namespace perfgate_kernels {

template <typename T>
static cudaError_t launch(const void* x, const void* w, void* y, long long rows, long long cols, float eps, int threads,
                          cudaStream_t stream) {
  const T* xp = static_cast<const T*>(x);
  const T* wp = static_cast<const T*>(w);
  T* yp = static_cast<T*>(y);
  constexpr int VEC = 16 / sizeof(T);
  const bool aligned = cols % VEC == 0 && reinterpret_cast<std::uintptr_t>(xp) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(wp) % 16 == 0 && reinterpret_cast<std::uintptr_t>(yp) % 16 == 0;
  if (aligned) {
    rms_norm_kernel<T, VEC><<<rows, threads, 0, stream>>>(xp, wp, yp, cols, eps);
  } else {
    rms_norm_kernel<T, 1><<<rows, threads, 0, stream>>>(xp, wp, yp, cols, eps);
  }
  return cudaGetLastError();
}

cudaError_t launch_rms_norm(RmsDtype dtype, const void* x, const void* w, void* y, long long rows, long long cols,
                            float eps, int threads, cudaStream_t stream) {
  switch (dtype) {
    case RmsDtype::F32: return launch<float>(x, w, y, rows, cols, eps, threads, stream);
    case RmsDtype::F16: return launch<__half>(x, w, y, rows, cols, eps, threads, stream);
    case RmsDtype::BF16: return launch<__nv_bfloat16>(x, w, y, rows, cols, eps, threads, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace perfgate_kernels
