// saxpy_printf_fp16.cu: examples/user_kernel/saxpy.cu with what a GPU check must see work in a user kernel
// (scripts/gpu_session.sh, plan checks44; tuned with examples/user_kernel/saxpy.json): a CUDA toolkit header
// (<cuda_fp16.h>, found through the toolkit's include path) and device printf, whose output reaches the
// worker's stdout beside its replies (the worker must not take it for one).
#include <cuda_fp16.h>

extern "C" __global__ void __launch_bounds__(BLOCK)
saxpy(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, int n) {
  const int base = static_cast<int>(blockIdx.x) * (BLOCK * ITEMS) + static_cast<int>(threadIdx.x);
  const float a = __half2float(__float2half(2.5f));  // 2.5 is exact in half
  if (base == 0) printf("saxpy_printf_fp16: n = %d, BLOCK = %d, ITEMS = %d\n", n, BLOCK, ITEMS);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int j = base + i * BLOCK;
    if (j < n) out[j] = a * x[j] + y[j];
  }
}

extern "C" __global__ void saxpy_reference(const float* x, const float* y, float* out, int n) {
  const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (j < n) out[j] = static_cast<float>(2.5 * static_cast<double>(x[j]) + static_cast<double>(y[j]));
}
