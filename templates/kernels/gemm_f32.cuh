// gemm_f32.cuh: the fp32 SIMT GEMM kernel, C = A*B, row-major A[MxK], B[KxN], C[MxN]
// (the contract is in templates/gemm_f32_source.h). The tuner defines the tiling as macros before
// including this file: BM, BN, TM, TN, BK, VEC, STAGES, PAD, GROUP_M, and BATCHED (0 or 1: the kernel
// is gemm_f32_batched and moves A, B and C to batch blockIdx.z). Needs output_tile.cuh.
#pragma once
#include "output_tile.cuh"

#ifndef BATCHED
#define BATCHED 0
#endif
#if BATCHED
#define GEMM_F32_KERNEL gemm_f32_batched
#else
#define GEMM_F32_KERNEL gemm_f32
#endif

// ---- tiling, from the macros the tuner defines ----
constexpr int kBM = BM;           // block tile rows of C
constexpr int kBN = BN;           // block tile cols of C
constexpr int kTM = TM;           // per-thread register tile rows
constexpr int kTN = TN;           // per-thread register tile cols
constexpr int kBK = BK;           // k-slab depth in shared memory
constexpr int kVec = VEC;         // global load width in floats
constexpr int kStages = STAGES;   // shared-memory buffers (1 or 2)
constexpr int kPad = PAD;         // extra floats per shared row
constexpr int kGroupM = GROUP_M;  // block-rows swept together (rasterization)

constexpr int kThreadsN = kBN / kTN;           // threads along n (tx)
constexpr int kThreadsM = kBM / kTM;           // threads along m (ty)
constexpr int kThreads = kThreadsM * kThreadsN;
constexpr int kAStride = kBM + kPad;           // floats per row of As[k][m]
constexpr int kBStride = kBN + kPad;           // floats per row of Bs[k][n]
constexpr int kASlab = kBK * kAStride;         // floats per A stage
constexpr int kBSlab = kBK * kBStride;         // floats per B stage
constexpr int kAVecsPerRow = kBK / kVec;       // A slab: kBM rows of kBK floats
constexpr int kBVecsPerRow = kBN / kVec;       // B slab: kBK rows of kBN floats
constexpr int kAVecs = kBM * kAVecsPerRow;
constexpr int kBVecs = kBK * kBVecsPerRow;
constexpr int kALoads = (kAVecs + kThreads - 1) / kThreads;  // vectors per thread
constexpr int kBLoads = (kBVecs + kThreads - 1) / kThreads;
constexpr bool kAExact = kAVecs % kThreads == 0;  // no per-thread guard needed
constexpr bool kBExact = kBVecs % kThreads == 0;
constexpr int kVM = kTM < 4 ? kTM : 4;          // contiguous rows per run
constexpr int kVN = kTN < 4 ? kTN : 4;          // contiguous cols per run
constexpr int kSVM = kAStride % kVM == 0 ? kVM : 1;  // shared read width, As
constexpr int kSVN = kBStride % kVN == 0 ? kVN : 1;  // shared read width, Bs
constexpr int kSVA = kBStride % kVec == 0 ? kVec : 1; // shared store width, Bs

// Occupancy hint for __launch_bounds__: the most blocks per SM (up to 4)
// whose per-thread register cap (65536 / (threads*blocks), rounded down to 8,
// at most 255) still holds a conservative estimate of the live registers:
// accumulators, one k-step of A/B fragments, the staged global values plus ~4
// per global vector for its address and predicates, ~32 for indices and
// pointers, and 8 more when the padding forces scalar shared accesses. Keeps
// 128x128/8x8 (bk 8, vec 4) at 128 registers, i.e. 2 blocks of 256 threads per
// SM, without forcing spills (checked with ptxas on sm_80 and sm_90).
constexpr int kRegEstimate = kTM * kTN + kTM + kTN + (kALoads + kBLoads) * (kVec + 4) + 32 +
                             (kPad % 4 != 0 ? 8 : 0);
// (No constexpr helper function: NVRTC rejects unannotated host functions.)
constexpr int kRegCap2 = 65536 / (kThreads * 2) / 8 * 8;  // <= 255 needs threads >= 129
constexpr int kRegCap3 = 65536 / (kThreads * 3) / 8 * 8;
constexpr int kRegCap4 = 65536 / (kThreads * 4) / 8 * 8;
constexpr int kMinBlocks = (kRegCap4 <= 255 && kRegCap4 >= kRegEstimate) ? 4
                         : (kRegCap3 <= 255 && kRegCap3 >= kRegEstimate) ? 3
                         : (kRegCap2 <= 255 && kRegCap2 >= kRegEstimate) ? 2 : 1;

static_assert(kTM == 1 || kTM == 2 || kTM == 4 || kTM == 8 || kTM == 16, "tm must be 1, 2, 4, 8 or 16");
static_assert(kTN == 1 || kTN == 2 || kTN == 4 || kTN == 8 || kTN == 16, "tn must be 1, 2, 4, 8 or 16");
static_assert(kVec == 1 || kVec == 2 || kVec == 4, "vec must be 1, 2 or 4");
static_assert(kStages == 1 || kStages == 2, "stages must be 1 or 2");
static_assert(kBM % kTM == 0, "bm must be a multiple of tm");
static_assert(kBN % kTN == 0, "bn must be a multiple of tn");
static_assert(kBK % kVec == 0, "bk must be a multiple of vec");
static_assert(kBN % kVec == 0, "bn must be a multiple of vec");
static_assert(kBK >= 1 && kPad >= 0 && kGroupM >= 1, "bk >= 1, pad >= 0, group_m >= 1");
static_assert(kThreads >= 1 && kThreads <= 1024, "threads per block must be in [1, 1024]");

// Reads W (1, 2 or 4) consecutive floats; p must be W-float aligned.
template <int W>
__device__ __forceinline__ void load_run(const float* p, float* dst) {
  if constexpr (W == 4) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    dst[0] = v.x; dst[1] = v.y; dst[2] = v.z; dst[3] = v.w;
  } else if constexpr (W == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    dst[0] = v.x; dst[1] = v.y;
  } else {
    dst[0] = p[0];
  }
}

// Writes W (1, 2 or 4) consecutive floats; p must be W-float aligned.
template <int W>
__device__ __forceinline__ void store_run(float* p, const float* src) {
  if constexpr (W == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(src[0], src[1], src[2], src[3]);
  } else if constexpr (W == 2) {
    *reinterpret_cast<float2*>(p) = make_float2(src[0], src[1]);
  } else {
    p[0] = src[0];
  }
}

// Global -> registers for one A slab (rows row0.., cols k0..k0+kBK), along K.
// Vector i of this thread is v = tid + i*kThreads: slab row v / kAVecsPerRow,
// slab col (v % kAVecsPerRow) * kVec. a_vec: K % kVec == 0 and A aligned, so
// a vector starting in bounds ends in bounds (k0 and the col are multiples of kVec).
__device__ __forceinline__ void load_a(const float* __restrict__ A, int M, int K, int row0, int k0,
                                       bool a_vec, float (&r)[kALoads][kVec]) {
#pragma unroll
  for (int i = 0; i < kALoads; ++i) {
    const int v = static_cast<int>(threadIdx.x) + i * kThreads;
    if (!kAExact && v >= kAVecs) continue;
    const int gr = row0 + v / kAVecsPerRow;
    const int gk = k0 + (v % kAVecsPerRow) * kVec;
    if (kVec > 1 && a_vec && gr < M && gk + kVec <= K) {
      load_run<kVec>(A + static_cast<size_t>(gr) * K + gk, r[i]);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        r[i][e] = (gr < M && gk + e < K) ? A[static_cast<size_t>(gr) * K + gk + e] : 0.0f;
    }
  }
}

// Global -> registers for one B slab (rows k0..k0+kBK, cols col0..), along N.
__device__ __forceinline__ void load_b(const float* __restrict__ B, int N, int K, int col0, int k0,
                                       bool b_vec, float (&r)[kBLoads][kVec]) {
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    const int v = static_cast<int>(threadIdx.x) + i * kThreads;
    if (!kBExact && v >= kBVecs) continue;
    const int gk = k0 + v / kBVecsPerRow;
    const int gc = col0 + (v % kBVecsPerRow) * kVec;
    if (kVec > 1 && b_vec && gk < K && gc + kVec <= N) {
      load_run<kVec>(B + static_cast<size_t>(gk) * N + gc, r[i]);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        r[i][e] = (gk < K && gc + e < N) ? B[static_cast<size_t>(gk) * N + gc + e] : 0.0f;
    }
  }
}

// Registers -> shared stage: A transposed into As[k][m], B as Bs[k][n].
__device__ __forceinline__ void store_slabs(float* __restrict__ as, float* __restrict__ bs,
                                            const float (&ra)[kALoads][kVec],
                                            const float (&rb)[kBLoads][kVec]) {
#pragma unroll
  for (int i = 0; i < kALoads; ++i) {
    const int v = static_cast<int>(threadIdx.x) + i * kThreads;
    if (!kAExact && v >= kAVecs) continue;
    const int m = v / kAVecsPerRow;
    const int k = (v % kAVecsPerRow) * kVec;
#pragma unroll
    for (int e = 0; e < kVec; ++e) as[(k + e) * kAStride + m] = ra[i][e];
  }
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    const int v = static_cast<int>(threadIdx.x) + i * kThreads;
    if (!kBExact && v >= kBVecs) continue;
    const int k = v / kBVecsPerRow;
    const int n = (v % kBVecsPerRow) * kVec;
#pragma unroll
    for (int e = 0; e < kVec; e += kSVA) store_run<kSVA>(bs + k * kBStride + n + e, &rb[i][e]);
  }
}

// One k-slab of outer products into the tm x tn register tile.
// Register row i is slab row (i/kVM)*kThreadsM*kVM + ty*kVM + i%kVM (cols alike).
__device__ __forceinline__ void compute_slab(const float* __restrict__ as, const float* __restrict__ bs,
                                             int ty, int tx, float (&acc)[kTM][kTN]) {
#pragma unroll
  for (int kk = 0; kk < kBK; ++kk) {
    float a[kTM];
    float b[kTN];
#pragma unroll
    for (int g = 0; g < kTM / kVM; ++g)
#pragma unroll
      for (int e = 0; e < kVM; e += kSVM)
        load_run<kSVM>(as + kk * kAStride + g * kThreadsM * kVM + ty * kVM + e, &a[g * kVM + e]);
#pragma unroll
    for (int g = 0; g < kTN / kVN; ++g)
#pragma unroll
      for (int e = 0; e < kVN; e += kSVN)
        load_run<kSVN>(bs + kk * kBStride + g * kThreadsN * kVN + tx * kVN + e, &b[g * kVN + e]);
#pragma unroll
    for (int i = 0; i < kTM; ++i)
#pragma unroll
      for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
GEMM_F32_KERNEL(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
         int M, int N, int K) {
#if BATCHED
  // Packed strided batches: this block's batch is blockIdx.z.
  A += static_cast<size_t>(blockIdx.z) * M * K;
  B += static_cast<size_t>(blockIdx.z) * K * N;
  C += static_cast<size_t>(blockIdx.z) * M * N;
#endif
  extern __shared__ float4 gemm_f32_smem[];  // float4: 16-byte aligned base
  float* const as_base = reinterpret_cast<float*>(gemm_f32_smem);
  float* const bs_base = as_base + kStages * kASlab;

  // Block rasterization (output_tile_source.h).
  const int grid_m = (M + kBM - 1) / kBM;
  const int grid_n = (N + kBN - 1) / kBN;
  const int bid = static_cast<int>(blockIdx.x);
  int block_row;
  int block_col;
  raster_block<kGroupM>(bid, grid_m, grid_n, block_row, block_col);
  if (block_row >= grid_m) return;  // only for a grid larger than needed
  const int row0 = block_row * kBM;
  const int col0 = block_col * kBN;

  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % kThreadsN;
  const int ty = tid / kThreadsN;

  // Uniform checks: vector accesses need an aligned leading dimension and base.
  constexpr unsigned long long kVecBytes = sizeof(float) * kVec;
  const bool a_vec = K % kVec == 0 && reinterpret_cast<unsigned long long>(A) % kVecBytes == 0;
  const bool b_vec = N % kVec == 0 && reinterpret_cast<unsigned long long>(B) % kVecBytes == 0;

  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;

  float ra[kALoads][kVec];
  float rb[kBLoads][kVec];
  const int k_tiles = (K + kBK - 1) / kBK;

  if constexpr (kStages == 2) {
    // Double buffering: slab t+1 goes global -> registers before slab t is
    // computed, then registers -> the other buffer; one barrier per slab.
    load_a(A, M, K, row0, 0, a_vec, ra);
    load_b(B, N, K, col0, 0, b_vec, rb);
    store_slabs(as_base, bs_base, ra, rb);
    __syncthreads();
    for (int t = 0; t < k_tiles; ++t) {
      const int cur = t & 1;
      const bool has_next = t + 1 < k_tiles;
      if (has_next) {
        load_a(A, M, K, row0, (t + 1) * kBK, a_vec, ra);
        load_b(B, N, K, col0, (t + 1) * kBK, b_vec, rb);
      }
      compute_slab(as_base + cur * kASlab, bs_base + cur * kBSlab, ty, tx, acc);
      if (has_next) store_slabs(as_base + (cur ^ 1) * kASlab, bs_base + (cur ^ 1) * kBSlab, ra, rb);
      __syncthreads();
    }
  } else {
    for (int t = 0; t < k_tiles; ++t) {
      load_a(A, M, K, row0, t * kBK, a_vec, ra);
      load_b(B, N, K, col0, t * kBK, b_vec, rb);
      store_slabs(as_base, bs_base, ra, rb);
      __syncthreads();
      compute_slab(as_base, bs_base, ty, tx, acc);
      __syncthreads();
    }
  }

  // Epilogue: runs of kVN contiguous columns; vector store when the run is in
  // bounds and N and C are aligned, else element-wise; rows past M skipped.
  const bool c_vec = N % kVN == 0 && reinterpret_cast<unsigned long long>(C) % (sizeof(float) * kVN) == 0;
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int row = row0 + (i / kVM) * kThreadsM * kVM + ty * kVM + i % kVM;
    if (row >= M) continue;
#pragma unroll
    for (int g = 0; g < kTN / kVN; ++g) {
      const int col = col0 + g * kThreadsN * kVN + tx * kVN;
      if (kVN > 1 && c_vec && col + kVN <= N) {
        store_run<kVN>(C + static_cast<size_t>(row) * N + col, &acc[i][g * kVN]);
      } else {
#pragma unroll
        for (int e = 0; e < kVN; ++e)
          if (col + e < N) C[static_cast<size_t>(row) * N + col + e] = acc[i][g * kVN + e];
      }
    }
  }
}
