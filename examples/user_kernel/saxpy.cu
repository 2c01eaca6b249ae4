// saxpy.cu: out = 2.5 * x + y over N floats, the example of a user kernel for `tuner tune --kernel`.
//
// BLOCK (threads per block) and ITEMS (elements per thread) are the knobs: the tuner defines them as
// macros before this file (see saxpy.json). N arrives as the int argument n. saxpy_reference is the
// kernel the tuned one is checked against: same arguments, double arithmetic.

extern "C" __global__ void __launch_bounds__(BLOCK)
saxpy(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, int n) {
  const int base = static_cast<int>(blockIdx.x) * (BLOCK * ITEMS) + static_cast<int>(threadIdx.x);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int j = base + i * BLOCK;  // consecutive threads touch consecutive elements
    if (j < n) out[j] = 2.5f * x[j] + y[j];
  }
}

extern "C" __global__ void saxpy_reference(const float* x, const float* y, float* out, int n) {
  const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (j < n) out[j] = static_cast<float>(2.5 * static_cast<double>(x[j]) + static_cast<double>(y[j]));
}
