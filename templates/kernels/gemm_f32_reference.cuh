// gemm_f32_reference.cuh: the naive fp32 GEMM that checks gemm_f32.cuh: one thread per C element,
// double accumulation. BATCHED (0 or 1): the kernel is gemm_f32_batched_reference and moves A, B and
// C to batch blockIdx.z. Independent of any tiling.
#pragma once

#ifndef BATCHED
#define BATCHED 0
#endif
#if BATCHED
#define GEMM_F32_REFERENCE gemm_f32_batched_reference
#else
#define GEMM_F32_REFERENCE gemm_f32_reference
#endif

// gemm_f32_reference: naive C = A*B (row-major), one thread per C element,
// double accumulation. Launch: 2-D grid of 16x16 blocks, x over N, y over M.
extern "C" __global__ void GEMM_F32_REFERENCE(const float* A, const float* B, float* C,
                                              int M, int N, int K) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (row >= M || col >= N) return;
#if BATCHED
  // Packed strided batches: this block's batch is blockIdx.z.
  A += static_cast<size_t>(blockIdx.z) * M * K;
  B += static_cast<size_t>(blockIdx.z) * K * N;
  C += static_cast<size_t>(blockIdx.z) * M * N;
#endif
  double acc = 0.0;
  for (int k = 0; k < K; ++k)
    acc += static_cast<double>(A[static_cast<size_t>(row) * K + k]) *
           static_cast<double>(B[static_cast<size_t>(k) * N + col]);
  C[static_cast<size_t>(row) * N + col] = static_cast<float>(acc);
}
