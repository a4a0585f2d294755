// A kernel that needs many live values: with -maxrregcount=32 ptxas must spill them to local memory.
extern "C" __global__ void spill_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
  float acc[48];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int k = 0; k < 48; ++k) acc[k] = x[(i + k * 977) % n];
  float s = 0.f;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int k = 0; k < 48; ++k) { acc[k] = acc[k] * acc[(k + r + 1) % 48] + 1.0f; }
  }
#pragma unroll
  for (int k = 0; k < 48; ++k) s += acc[k] * (k + 1);
  if (i < n) y[i] = s;
}
