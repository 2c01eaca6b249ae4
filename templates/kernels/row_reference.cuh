// row_reference.cuh: the block reduction the double-accumulation row references share.
#pragma once
#include "element.cuh"

// One block of 256 threads per row; double accumulation and a shared-memory tree reduction.
__device__ double block_reduce(double v, bool is_max) {
  __shared__ double red[256];
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = is_max ? fmax(red[threadIdx.x], red[threadIdx.x + s])
                                                   : red[threadIdx.x] + red[threadIdx.x + s];
    __syncthreads();
  }
  const double r = red[0];
  __syncthreads();
  return r;
}
