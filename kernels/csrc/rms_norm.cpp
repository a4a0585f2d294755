// torch binding of the RMSNorm kernel (built by kernels/rms_norm_kernel.py through torch.utils.cpp_extension).
// The fewest torch headers that bind a function of tensors to Python (not torch/extension.h, which pulls in the
// whole C++ frontend): the tensor type, the one operator it calls, the current CUDA stream, pybind11's casters.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/utils/pybind.h>
#include "rms_norm_launch.h"

namespace {

perfgate_kernels::RmsDtype dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return perfgate_kernels::RmsDtype::F32;
    case at::kHalf: return perfgate_kernels::RmsDtype::F16;
    case at::kBFloat16: return perfgate_kernels::RmsDtype::BF16;
    default: TORCH_CHECK(false, "rms_norm: unsupported dtype ", t.scalar_type());
  }
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps, int64_t threads) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda(), "rms_norm: tensors must be on a CUDA device");
  TORCH_CHECK(x.scalar_type() == w.scalar_type(), "rms_norm: x and weight must share a dtype");
  TORCH_CHECK(threads >= 32 && threads <= 1024 && threads % 32 == 0,
              "rms_norm: threads must be a multiple of 32 in [32, 1024]");
  const auto dtype = dtype_of(x);
  auto xc = x.contiguous();
  auto wc = w.contiguous();
  const long long cols = xc.size(-1);
  const long long rows = cols ? xc.numel() / cols : 0;
  auto y = at::empty_like(xc);
  if (rows == 0 || cols == 0) return y;
  const auto stream = c10::cuda::getCurrentCUDAStream(xc.get_device()).stream();
  const cudaError_t err = perfgate_kernels::launch_rms_norm(dtype, xc.const_data_ptr(), wc.const_data_ptr(),
                                                            y.data_ptr(), rows, cols, static_cast<float>(eps),
                                                            static_cast<int>(threads), stream);
  TORCH_CHECK(err == cudaSuccess, "rms_norm: launch failed: ", cudaGetErrorString(err));
  return y;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("rms_norm", &rms_norm, "RMSNorm over the last dimension"); }
