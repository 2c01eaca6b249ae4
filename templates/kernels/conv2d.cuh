// conv2d.cuh: forward conv2d as an implicit GEMM on CUDA cores (NHWC input, KRSC filter, NPQK output,
// any stride, padding and dilation). The tuner defines before including it: ELEM_F16 or ELEM_BF16 (or
// neither: f32), BM, BN, TM, TN, BK, STAGES.
#pragma once
#include "element.cuh"

// ---- tiling, from the macros the tuner defines ----
constexpr int kBM = BM, kBN = BN;  // block tile: output pixels x filters
constexpr int kTM = TM, kTN = TN;  // per-thread register tile
constexpr int kBK = BK;            // taps per shared slab
constexpr int kStages = STAGES;    // 1 or 2

constexpr int kTY = kBM / kTM, kTX = kBN / kTN;
constexpr int kThreads = kTY * kTX;
constexpr int kALoads = (kBM * kBK + kThreads - 1) / kThreads;
constexpr int kBLoads = (kBK * kBN + kThreads - 1) / kThreads;
static_assert(kBM % kTM == 0 && kBN % kTN == 0, "tiles divide");
static_assert(kStages == 1 || kStages == 2, "stages 1 or 2");

struct ConvShape {
  int N, H, W, C, K, R, S, stride, pad, dilation, P, Q;
  int M, KG;  // GEMM-M = N*P*Q, GEMM-K = R*S*C
};

// A slab: element e = m_local * kBK + k_local -> input pixel of output m at tap k (0 outside the image).
__device__ __forceinline__ void gather_a(const elem_t* __restrict__ X, const ConvShape& s, int row0, int k0,
                                         float (&ra)[kALoads]) {
#pragma unroll
  for (int i = 0; i < kALoads; ++i) {
    const int e = static_cast<int>(threadIdx.x) + i * kThreads;
    float v = 0.0f;
    if (e < kBM * kBK) {
      const int m = row0 + e / kBK, k = k0 + e % kBK;
      if (m < s.M && k < s.KG) {
        const int n = m / (s.P * s.Q), pq = m % (s.P * s.Q);
        const int p = pq / s.Q, q = pq % s.Q;
        const int r = k / (s.S * s.C), sc = k % (s.S * s.C);
        const int ss = sc / s.C, c = sc % s.C;
        const int h = p * s.stride - s.pad + r * s.dilation;
        const int w = q * s.stride - s.pad + ss * s.dilation;
        if (h >= 0 && h < s.H && w >= 0 && w < s.W)
          v = to_float(X[((static_cast<size_t>(n) * s.H + h) * s.W + w) * s.C + c]);
      }
    }
    ra[i] = v;
  }
}

// B slab: element e = n_local * kBK + k_local -> filter n at tap k (KRSC rows are contiguous in k).
__device__ __forceinline__ void gather_b(const elem_t* __restrict__ F, const ConvShape& s, int col0, int k0,
                                         float (&rb)[kBLoads]) {
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    const int e = static_cast<int>(threadIdx.x) + i * kThreads;
    float v = 0.0f;
    if (e < kBK * kBN) {
      const int n = col0 + e / kBK, k = k0 + e % kBK;
      if (n < s.K && k < s.KG) v = to_float(F[static_cast<size_t>(n) * s.KG + k]);
    }
    rb[i] = v;
  }
}

// Registers -> shared: As[k][m], Bs[k][n].
__device__ __forceinline__ void store_slab(float* as, float* bs, const float (&ra)[kALoads], const float (&rb)[kBLoads]) {
#pragma unroll
  for (int i = 0; i < kALoads; ++i) {
    const int e = static_cast<int>(threadIdx.x) + i * kThreads;
    if (e < kBM * kBK) as[(e % kBK) * kBM + e / kBK] = ra[i];
  }
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    const int e = static_cast<int>(threadIdx.x) + i * kThreads;
    if (e < kBK * kBN) bs[(e % kBK) * kBN + e / kBK] = rb[i];
  }
}

__device__ __forceinline__ void compute_slab(const float* as, const float* bs, int ty, int tx, float (&acc)[kTM][kTN]) {
#pragma unroll
  for (int kk = 0; kk < kBK; ++kk) {
    float a[kTM], b[kTN];
#pragma unroll
    for (int i = 0; i < kTM; ++i) a[i] = as[kk * kBM + ty + i * kTY];
#pragma unroll
    for (int j = 0; j < kTN; ++j) b[j] = bs[kk * kBN + tx + j * kTX];
#pragma unroll
    for (int i = 0; i < kTM; ++i)
#pragma unroll
      for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

extern "C" __global__ void __launch_bounds__(kThreads)
conv2d_igemm(const elem_t* __restrict__ X, const elem_t* __restrict__ F, elem_t* __restrict__ Y, int N, int H, int W,
             int C, int K, int R, int S, int stride, int pad, int dilation, int P, int Q) {
  extern __shared__ float4 conv2d_smem[];  // kStages A slabs, then kStages B slabs
  float* const as_base = reinterpret_cast<float*>(conv2d_smem);
  float* const bs_base = as_base + kStages * kBK * kBM;
  const ConvShape s{N, H, W, C, K, R, S, stride, pad, dilation, P, Q, N * P * Q, R * S * C};
  const int grid_m = (s.M + kBM - 1) / kBM;
  // Consecutive blocks share a filter tile (B stays in L2) and sweep output pixels.
  const int block_row = static_cast<int>(blockIdx.x) % grid_m;
  const int block_col = static_cast<int>(blockIdx.x) / grid_m;
  const int row0 = block_row * kBM, col0 = block_col * kBN;
  const int tx = static_cast<int>(threadIdx.x) % kTX, ty = static_cast<int>(threadIdx.x) / kTX;
  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;
  float ra[kALoads], rb[kBLoads];
  const int k_tiles = (s.KG + kBK - 1) / kBK;
  if constexpr (kStages == 2) {
    gather_a(X, s, row0, 0, ra);
    gather_b(F, s, col0, 0, rb);
    store_slab(as_base, bs_base, ra, rb);
    __syncthreads();
    for (int t = 0; t < k_tiles; ++t) {
      const int cur = t & 1;
      const bool has_next = t + 1 < k_tiles;
      if (has_next) {
        gather_a(X, s, row0, (t + 1) * kBK, ra);
        gather_b(F, s, col0, (t + 1) * kBK, rb);
      }
      compute_slab(as_base + cur * kBK * kBM, bs_base + cur * kBK * kBN, ty, tx, acc);
      if (has_next) store_slab(as_base + (cur ^ 1) * kBK * kBM, bs_base + (cur ^ 1) * kBK * kBN, ra, rb);
      __syncthreads();
    }
  } else {
    for (int t = 0; t < k_tiles; ++t) {
      gather_a(X, s, row0, t * kBK, ra);
      gather_b(F, s, col0, t * kBK, rb);
      store_slab(as_base, bs_base, ra, rb);
      __syncthreads();
      compute_slab(as_base, bs_base, ty, tx, acc);
      __syncthreads();
    }
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int m = row0 + ty + i * kTY;
    if (m >= s.M) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int n = col0 + tx + j * kTX;
      if (n < s.K) Y[static_cast<size_t>(m) * s.K + n] = from_float(acc[i][j]);
    }
  }
}
