// gemm_tc_reference.cuh: the naive GEMM that checks gemm_tc.cuh and gemm_wgmma.cuh: one thread per C
// element, batch blockIdx.z, double accumulation. Defines: ELEM_F16 or ELEM_BF16, OUT_F32, and
// TENSOR_MAP_ARGS (1: gemm_wgmma's arguments: the two tensor maps follow the workspace pointer, the
// batch count follows K).
#pragma once
#include "element.cuh"

#ifndef TENSOR_MAP_ARGS
#define TENSOR_MAP_ARGS 0
#endif
#if TENSOR_MAP_ARGS
#include "tensor_map.cuh"
#endif
#if OUT_F32
typedef float out_t;
#else
typedef elem_t out_t;
#endif

// gemm_tc_reference: naive C = A*B per batch (blockIdx.z), one thread per C element, double accumulation.
#if TENSOR_MAP_ARGS
extern "C" __global__ void gemm_tc_reference(const elem_t* A, const elem_t* B, out_t* C, float* workspace,
                                             const TensorMap tmap_a, const TensorMap tmap_b,
                                             int M, int N, int K, int /* batch: gridDim.z here */) {
#else
extern "C" __global__ void gemm_tc_reference(const elem_t* A, const elem_t* B, out_t* C, float* workspace,
                                             int M, int N, int K) {
#endif
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (row >= M || col >= N) return;
  const size_t b = blockIdx.z;
  A += b * M * K;
  B += b * K * N;
  C += b * M * N;
  double acc = 0.0;
  for (int k = 0; k < K; ++k)
    acc += static_cast<double>(to_float(A[static_cast<size_t>(row) * K + k])) *
           static_cast<double>(to_float(B[static_cast<size_t>(k) * N + col]));
  if constexpr (sizeof(out_t) == 4) C[static_cast<size_t>(row) * N + col] = static_cast<float>(acc);
  else C[static_cast<size_t>(row) * N + col] = from_float(static_cast<float>(acc));
}
