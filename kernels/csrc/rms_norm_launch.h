// The one declaration the torch binding (rms_norm.cpp) and the CUDA launchers (rms_norm_launch.cu) share.
#pragma once
#include <cuda_runtime_api.h>

namespace perfgate_kernels {

enum class RmsDtype { F32, F16, BF16 };

// y = rms_norm(x) * w over rows of `cols` contiguous elements, one block of `threads` per row, on `stream`.
cudaError_t launch_rms_norm(RmsDtype dtype, const void* x, const void* w, void* y, long long rows, long long cols,
                            float eps, int threads, cudaStream_t stream);

}  // namespace perfgate_kernels
