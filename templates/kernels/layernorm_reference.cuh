// layernorm_reference.cuh: the row layernorm that checks layernorm_rows.cuh: one block of 256 threads
// per row, double accumulation. Defines: ELEM_F16 or ELEM_BF16 (or neither: f32).
#pragma once
#include "row_reference.cuh"

extern "C" __global__ void layernorm_reference(const elem_t* X, const elem_t* gamma, const elem_t* beta, elem_t* Y,
                                               int rows, int cols) {
  const elem_t* row = X + static_cast<size_t>(blockIdx.x) * cols;
  elem_t* out = Y + static_cast<size_t>(blockIdx.x) * cols;
  double s = 0.0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += static_cast<double>(to_float(row[c]));
  const double mean = block_reduce(s, false) / cols;
  double q = 0.0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const double d = static_cast<double>(to_float(row[c])) - mean;
    q += d * d;
  }
  const double rstd = 1.0 / sqrt(block_reduce(q, false) / cols + 1e-5);
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[c] = from_float(static_cast<float>((static_cast<double>(to_float(row[c])) - mean) * rstd *
                                           static_cast<double>(to_float(gamma[c])) +
                                           static_cast<double>(to_float(beta[c]))));
}
