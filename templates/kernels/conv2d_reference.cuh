// conv2d_reference.cuh: the direct conv2d that checks conv2d.cuh and conv2d_tc.cuh: one thread per
// output element, double accumulation. Defines: ELEM_F16 or ELEM_BF16 (or neither: f32), and TENSOR_MAP_ARGS
// (1: conv2d_wgmma.cuh's arguments: its two tensor maps follow Y).
#pragma once
#include "element.cuh"

#ifndef TENSOR_MAP_ARGS
#define TENSOR_MAP_ARGS 0
#endif
#if TENSOR_MAP_ARGS
#include "tensor_map.cuh"
#endif

#if TENSOR_MAP_ARGS
extern "C" __global__ void conv2d_reference(const elem_t* X, const elem_t* F, elem_t* Y, const TensorMap tmap_x,
                                            const TensorMap tmap_f, int N, int H, int W, int C, int K, int R, int S,
                                            int stride, int pad, int dilation, int P, int Q) {
#else
extern "C" __global__ void conv2d_reference(const elem_t* X, const elem_t* F, elem_t* Y, int N, int H, int W, int C,
                                            int K, int R, int S, int stride, int pad, int dilation, int P, int Q) {
#endif
  const int k = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const long long m = (static_cast<long long>(blockIdx.z) * gridDim.y + blockIdx.y) * blockDim.y + threadIdx.y;
  if (k >= K || m >= static_cast<long long>(N) * P * Q) return;
  const int n = static_cast<int>(m / (static_cast<long long>(P) * Q));
  const int pq = static_cast<int>(m % (static_cast<long long>(P) * Q));
  const int p = pq / Q, q = pq % Q;
  double acc = 0.0;
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < S; ++s) {
      const int h = p * stride - pad + r * dilation, w = q * stride - pad + s * dilation;
      if (h < 0 || h >= H || w < 0 || w >= W) continue;
      for (int c = 0; c < C; ++c)
        acc += static_cast<double>(to_float(X[((static_cast<size_t>(n) * H + h) * W + w) * C + c])) *
               static_cast<double>(to_float(F[((static_cast<size_t>(k) * R + r) * S + s) * C + c]));
    }
  Y[static_cast<size_t>(m) * K + k] = from_float(static_cast<float>(acc));
}
