// torch binding of the RMSNorm kernel (built by kernels/rms_norm.py through torch.utils.cpp_extension).
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "rms_norm_kernel.cuh"

namespace perfgate_kernels {
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
}  // namespace perfgate_kernels

template <typename T>
static void launch(const torch::Tensor& x, const torch::Tensor& w, torch::Tensor& y, long long rows, long long cols,
                   double eps, int threads) {
  auto stream = at::cuda::getCurrentCUDAStream();
  perfgate_kernels::rms_norm_kernel<T><<<rows, threads, 0, stream>>>(
      reinterpret_cast<const T*>(x.data_ptr()), reinterpret_cast<const T*>(w.data_ptr()),
      reinterpret_cast<T*>(y.data_ptr()), cols, static_cast<float>(eps));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

torch::Tensor rms_norm(torch::Tensor x, torch::Tensor w, double eps, int64_t threads) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda(), "rms_norm: tensors must be on a CUDA device");
  TORCH_CHECK(x.scalar_type() == w.scalar_type(), "rms_norm: x and weight must share a dtype");
  TORCH_CHECK(threads >= 32 && threads <= 1024 && threads % 32 == 0, "rms_norm: threads must be a multiple of 32 in [32, 1024]");
  auto xc = x.contiguous();
  auto wc = w.contiguous();
  const long long cols = xc.size(-1);
  const long long rows = cols ? xc.numel() / cols : 0;
  auto y = torch::empty_like(xc);
  if (rows == 0 || cols == 0) return y;
  switch (xc.scalar_type()) {
    case at::kFloat: launch<float>(xc, wc, y, rows, cols, eps, threads); break;
    case at::kHalf: launch<__half>(xc, wc, y, rows, cols, eps, threads); break;
    case at::kBFloat16: launch<__nv_bfloat16>(xc, wc, y, rows, cols, eps, threads); break;
    default: TORCH_CHECK(false, "rms_norm: unsupported dtype ", xc.scalar_type());
  }
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("rms_norm", &rms_norm, "RMSNorm over the last dimension"); }
