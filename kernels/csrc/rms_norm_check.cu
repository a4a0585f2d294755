// Compile check without torch: instantiates every kernel variant the binding launches (used by CI).
#include "rms_norm_kernel.cuh"

namespace perfgate_kernels {
template __global__ void rms_norm_kernel<float, 4>(const float*, const float*, float*, long long, float);
template __global__ void rms_norm_kernel<float, 1>(const float*, const float*, float*, long long, float);
template __global__ void rms_norm_kernel<__half, 8>(const __half*, const __half*, __half*, long long, float);
template __global__ void rms_norm_kernel<__half, 1>(const __half*, const __half*, __half*, long long, float);
template __global__ void rms_norm_kernel<__nv_bfloat16, 8>(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, long long, float);
template __global__ void rms_norm_kernel<__nv_bfloat16, 1>(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, long long, float);
}  // namespace perfgate_kernels
