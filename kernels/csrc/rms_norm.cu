// torch binding of the RMSNorm kernel (built by kernels/rms_norm_kernel.py through torch.utils.cpp_extension).
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cstdint>
#include "rms_norm_kernel.cuh"

template <typename T>
static void launch(const torch::Tensor& x, const torch::Tensor& w, torch::Tensor& y, long long rows, long long cols,
                   double eps, int threads) {
  auto stream = at::cuda::getCurrentCUDAStream();
  const T* xp = reinterpret_cast<const T*>(x.data_ptr());
  const T* wp = reinterpret_cast<const T*>(w.data_ptr());
  T* yp = reinterpret_cast<T*>(y.data_ptr());
  constexpr int VEC = 16 / sizeof(T);
  const bool aligned = cols % VEC == 0 && reinterpret_cast<std::uintptr_t>(xp) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(wp) % 16 == 0 && reinterpret_cast<std::uintptr_t>(yp) % 16 == 0;
  if (aligned) {
    perfgate_kernels::rms_norm_kernel<T, VEC><<<rows, threads, 0, stream>>>(xp, wp, yp, cols, static_cast<float>(eps));
  } else {
    perfgate_kernels::rms_norm_kernel<T, 1><<<rows, threads, 0, stream>>>(xp, wp, yp, cols, static_cast<float>(eps));
  }
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
