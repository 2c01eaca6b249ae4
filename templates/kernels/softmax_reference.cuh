// softmax_reference.cuh: the row softmax that checks softmax_rows.cuh: one block of 256 threads per
// row, double accumulation. Defines: ELEM_F16 or ELEM_BF16 (or neither: f32).
#pragma once
#include "row_reference.cuh"

extern "C" __global__ void softmax_reference(const elem_t* X, elem_t* Y, int rows, int cols) {
  const elem_t* row = X + static_cast<size_t>(blockIdx.x) * cols;
  elem_t* out = Y + static_cast<size_t>(blockIdx.x) * cols;
  double m = -1.0e300;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmax(m, static_cast<double>(to_float(row[c])));
  m = block_reduce(m, true);
  double s = 0.0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += exp(static_cast<double>(to_float(row[c])) - m);
  s = block_reduce(s, false);
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[c] = from_float(static_cast<float>(exp(static_cast<double>(to_float(row[c])) - m) / s));
}
