// gemm_f32.cuh: the fp32 SIMT GEMM kernel, C = A*B, row-major A[MxK], B[KxN], C[MxN]
// (the contract is in templates/gemm_f32_source.h). The tuner defines the tiling as macros before
// including this file: BM, BN, TM, TN, BK, VEC, STAGES, PAD, GROUP_M, WARP_N (warp tiling: lanes along n
// of a one-warp thread group; 0, the default, makes the whole block one group), FRAG_DB and CP_ASYNC (0
// when not defined), and BATCHED (0 or 1: the kernel is gemm_f32_batched and moves A, B and C to batch
// blockIdx.z), B_TRANS (0 or 1: B is stored transposed, N x K row-major, and its slabs are read along
// K like A's) and CONV_1X1 (0 or 1, with B_TRANS: the kernel is conv2d_gemm_simt, a 1x1 stride-1
// unpadded NHWC conv2d with KRSC filters: A = X as [N*H*W x C], B^T = F as [K x C], C = Y, taking
// conv2d_igemm's arguments). Needs output_tile.cuh,
// gemm_f32_layout.cuh (the thread -> element maps) and cp_async.cuh.
#pragma once
#include "output_tile.cuh"
#include "gemm_f32_layout.cuh"
#include "cp_async.cuh"

#ifndef BATCHED
#define BATCHED 0
#endif
#ifndef WARP_N
#define WARP_N 0
#endif
#ifndef FRAG_DB
#define FRAG_DB 0
#endif
#ifndef CP_ASYNC
#define CP_ASYNC 0
#endif
#ifndef B_TRANS
#define B_TRANS 0
#endif
#ifndef CONV_1X1
#define CONV_1X1 0
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
constexpr int kWarpN = WARP_N;    // lanes along n of a one-warp group (0: the block is one group)
constexpr int kWM = kWarpN > 0 ? (32 / (kWarpN > 0 ? kWarpN : 1)) * kTM : kBM;  // thread-group tile rows
constexpr int kWN = kWarpN > 0 ? kWarpN * kTN : kBN;                           // thread-group tile cols
constexpr bool kFragDb = FRAG_DB != 0;  // double-buffer the k-step fragments in registers
constexpr bool kCpAsync = CP_ASYNC != 0;  // B slabs global -> shared by cp.async (sm_80+)

constexpr int kThreads = (kBM / kTM) * (kBN / kTN);
constexpr int kAStride = kBM + kPad;           // floats per row of As[k][m]
constexpr int kBStride = kBN + kPad;           // floats per row of Bs[k][n]
constexpr int kASlab = kBK * kAStride;         // floats per A stage
constexpr int kBSlab = kBK * kBStride;         // floats per B stage
constexpr int kAVecs = kBM * (kBK / kVec);     // A slab: kBM rows of kBK floats
constexpr int kBVecs = kBK * (kBN / kVec);     // B slab: kBK rows of kBN floats
constexpr int kALoads = (kAVecs + kThreads - 1) / kThreads;  // vectors per thread
constexpr int kBLoads = (kBVecs + kThreads - 1) / kThreads;
constexpr bool kBExact = kBVecs % kThreads == 0;  // no per-thread guard needed (load_k_major checks its own)
constexpr int kVM = kTM < 4 ? kTM : 4;          // contiguous rows per run
constexpr int kVN = kTN < 4 ? kTN : 4;          // contiguous cols per run
constexpr int kSVM = kAStride % kVM == 0 ? kVM : 1;  // shared read width, As
constexpr int kSVN = kBStride % kVN == 0 ? kVN : 1;  // shared read width, Bs
constexpr int kSVA = kBStride % kVec == 0 ? kVec : 1; // shared store width, Bs

// The layout as gemm_f32_layout.cuh's functions take it (a local value: constant-folded).
__device__ __forceinline__ F32Layout kernel_layout() { return F32Layout{kBM, kBN, kTM, kTN, kWM, kWN, kBK, kVec}; }

// Occupancy hint for __launch_bounds__: the most blocks per SM (up to 4)
// whose per-thread register cap (65536 / (threads*blocks), rounded down to 8,
// at most 255) still holds a conservative estimate of the live registers:
// accumulators, one k-step of A/B fragments (two with FRAG_DB), the staged global values plus ~4
// per global vector for its address and predicates, ~32 for indices and
// pointers, and 8 more when the padding forces scalar shared accesses. Keeps
// 128x128/8x8 (bk 8, vec 4) at 128 registers, i.e. 2 blocks of 256 threads per
// SM, without forcing spills (checked with ptxas on sm_80 and sm_90).
// FRAG_DB holds two k-steps of fragments; a cp.async B vector needs no staged values but its global
// (2) and shared (1) addresses (ptxas spilled 128x128/8x8, bk 16 at 128 registers when it counted 0).
constexpr int kRegEstimate = kTM * kTN + (kFragDb ? 2 : 1) * (kTM + kTN) + kALoads * (kVec + 4) +
                             kBLoads * (kCpAsync ? 3 : kVec + 4) + 32 + (kPad % 4 != 0 ? 8 : 0);
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
static_assert(kWarpN == 0 || kWarpN == 1 || kWarpN == 2 || kWarpN == 4 || kWarpN == 8 || kWarpN == 16 ||
                  kWarpN == 32, "warp_n must be 0 (no warp tiling) or a power of two up to 32");
static_assert(kBM % kWM == 0 && kBN % kWN == 0, "the warp tile (32/warp_n)*tm x warp_n*tn must divide BM x BN");
static_assert(!kCpAsync || kStages == 2, "CP_ASYNC needs STAGES == 2");
static_assert(!(kCpAsync && B_TRANS), "CP_ASYNC copies B's rows along N; a transposed B is read along K");
static_assert(!CONV_1X1 || (B_TRANS && !BATCHED), "the 1x1 conv is a GEMM with B transposed, one batch");
#if CP_ASYNC && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "CP_ASYNC needs sm_80 or newer (cp.async)"
#endif

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

// Global -> registers for one slab of a K-major matrix X (rows x K row-major: A, or B with B_TRANS),
// rows row0.. and cols k0..k0+kBK, along K. Vector i of this thread is v = tid + i*kThreads (of the
// slab's kVecs), at (f32_a_row, f32_a_k) of the slab. vec: K % kVec == 0 and X aligned, so a vector
// starting in bounds ends in bounds (k0 and the col are multiples of kVec).
template <int kLoads, int kVecs>
__device__ __forceinline__ void load_k_major(const float* __restrict__ X, int rows, int K, int row0, int k0, bool vec,
                                             float (&r)[kLoads][kVec]) {
  const F32Layout lay = kernel_layout();
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const int v = static_cast<int>(threadIdx.x) + i * kThreads;
    if (kVecs % kThreads != 0 && v >= kVecs) continue;
    const int gr = row0 + f32_a_row(lay, v);
    const int gk = k0 + f32_a_k(lay, v);
    if (kVec > 1 && vec && gr < rows && gk + kVec <= K) {
      load_run<kVec>(X + static_cast<size_t>(gr) * K + gk, r[i]);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        r[i][e] = (gr < rows && gk + e < K) ? X[static_cast<size_t>(gr) * K + gk + e] : 0.0f;
    }
  }
}

// Global -> registers for one A slab (rows row0.., cols k0..k0+kBK), along K.
__device__ __forceinline__ void load_a(const float* __restrict__ A, int M, int K, int row0, int k0,
                                       bool a_vec, float (&r)[kALoads][kVec]) {
  load_k_major<kALoads, kAVecs>(A, M, K, row0, k0, a_vec, r);
}

// Global -> registers for one B slab (rows k0..k0+kBK, cols col0..), along N. B_TRANS: B is N x K
// and the slab's kBN rows of kBK are read along K as A's are.
__device__ __forceinline__ void load_b(const float* __restrict__ B, int N, int K, int col0, int k0,
                                       bool b_vec, float (&r)[kBLoads][kVec]) {
  if constexpr (B_TRANS) {
    load_k_major<kBLoads, kBVecs>(B, N, K, col0, k0, b_vec, r);
    return;
  }
  const F32Layout lay = kernel_layout();
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    const int v = static_cast<int>(threadIdx.x) + i * kThreads;
    if (!kBExact && v >= kBVecs) continue;
    const int gk = k0 + f32_b_k(lay, v);
    const int gc = col0 + f32_b_col(lay, v);
    if (kVec > 1 && b_vec && gk < K && gc + kVec <= N) {
      load_run<kVec>(B + static_cast<size_t>(gk) * N + gc, r[i]);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        r[i][e] = (gk < K && gc + e < N) ? B[static_cast<size_t>(gk) * N + gc + e] : 0.0f;
    }
  }
}

// Global -> shared for one B slab by cp.async (CP_ASYNC): the same vectors as load_b, copied in runs
// of kSVA floats (kVec when the shared row stride keeps them aligned); what lies outside B is zero-filled.
__device__ __forceinline__ void copy_b_async(const float* __restrict__ B, int N, int K, int col0, int k0,
                                             bool b_vec, float* __restrict__ bs) {
  const F32Layout lay = kernel_layout();
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    const int v = static_cast<int>(threadIdx.x) + i * kThreads;
    if (!kBExact && v >= kBVecs) continue;
    const int k = f32_b_k(lay, v), n = f32_b_col(lay, v);
    const int gk = k0 + k, gc = col0 + n;
    const unsigned dst = smem_addr(bs + k * kBStride + n);
    if (kSVA > 1 && b_vec && gk < K && gc + kVec <= N) {
#pragma unroll
      for (int e = 0; e < kVec; e += kSVA)
        cp_async_bytes<4 * kSVA>(dst + 4 * e, B + static_cast<size_t>(gk) * N + gc + e, true);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const bool in = gk < K && gc + e < N;
        cp_async_bytes<4>(dst + 4 * e, in ? B + static_cast<size_t>(gk) * N + gc + e : B, in);
      }
    }
  }
}

// Registers -> shared stage: a K-major slab (load_k_major's vectors) transposed into S[k][row], rows of
// kStride floats.
template <int kLoads, int kVecs, int kStride>
__device__ __forceinline__ void store_transposed(float* __restrict__ s, const float (&r)[kLoads][kVec]) {
  const F32Layout lay = kernel_layout();
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const int v = static_cast<int>(threadIdx.x) + i * kThreads;
    if (kVecs % kThreads != 0 && v >= kVecs) continue;
    const int m = f32_a_row(lay, v);
    const int k = f32_a_k(lay, v);
#pragma unroll
    for (int e = 0; e < kVec; ++e) s[(k + e) * kStride + m] = r[i][e];
  }
}

// Registers -> shared stage: A transposed into As[k][m].
__device__ __forceinline__ void store_a(float* __restrict__ as, const float (&ra)[kALoads][kVec]) {
  store_transposed<kALoads, kAVecs, kAStride>(as, ra);
}

// Registers -> shared stage: B as Bs[k][n] (B_TRANS: transposed into it, as A).
__device__ __forceinline__ void store_b(float* __restrict__ bs, const float (&rb)[kBLoads][kVec]) {
  if constexpr (B_TRANS) {
    store_transposed<kBLoads, kBVecs, kBStride>(bs, rb);
    return;
  }
  const F32Layout lay = kernel_layout();
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    const int v = static_cast<int>(threadIdx.x) + i * kThreads;
    if (!kBExact && v >= kBVecs) continue;
    const int k = f32_b_k(lay, v);
    const int n = f32_b_col(lay, v);
#pragma unroll
    for (int e = 0; e < kVec; e += kSVA) store_run<kSVA>(bs + k * kBStride + n + e, &rb[i][e]);
  }
}

// The A and B fragments of k-step kk: this thread's register rows and columns of the slab's row kk.
// as and bs already point at the thread's first run (f32_row_base, f32_col_base).
__device__ __forceinline__ void load_fragments(const float* __restrict__ as, const float* __restrict__ bs, int kk,
                                               float (&a)[kTM], float (&b)[kTN]) {
  constexpr int kRowStep = (kWM / kTM) * kVM;  // f32_row_step
  constexpr int kColStep = (kWN / kTN) * kVN;  // f32_col_step
#pragma unroll
  for (int g = 0; g < kTM / kVM; ++g)
#pragma unroll
    for (int e = 0; e < kVM; e += kSVM) load_run<kSVM>(as + kk * kAStride + g * kRowStep + e, &a[g * kVM + e]);
#pragma unroll
  for (int g = 0; g < kTN / kVN; ++g)
#pragma unroll
    for (int e = 0; e < kVN; e += kSVN) load_run<kSVN>(bs + kk * kBStride + g * kColStep + e, &b[g * kVN + e]);
}

__device__ __forceinline__ void outer_product(const float (&a)[kTM], const float (&b)[kTN], float (&acc)[kTM][kTN]) {
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

// One k-slab of outer products into the tm x tn register tile (as, bs at the thread's first run).
// FRAG_DB: k-step kk+1's fragments are read from shared memory while kk's FMAs run.
__device__ __forceinline__ void compute_slab(const float* __restrict__ as, const float* __restrict__ bs,
                                             float (&acc)[kTM][kTN]) {
  if constexpr (kFragDb) {
    float a[2][kTM];
    float b[2][kTN];
    load_fragments(as, bs, 0, a[0], b[0]);
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      if (kk + 1 < kBK) load_fragments(as, bs, kk + 1, a[(kk + 1) & 1], b[(kk + 1) & 1]);
      outer_product(a[kk & 1], b[kk & 1], acc);
    }
  } else {
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float a[kTM];
      float b[kTN];
      load_fragments(as, bs, kk, a, b);
      outer_product(a, b, acc);
    }
  }
}

#if CONV_1X1
// conv2d_igemm's arguments: X (A, N*H*W x C), F (B^T, K x C), Y (C, N*H*W x K), then N, H, W, C, K and
// R, S, stride, pad, dilation, P, Q (1, 1, 1, 0, any, H, W for the shapes this kernel takes).
extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
conv2d_gemm_simt(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int conv_n,
                 int conv_h, int conv_w, int conv_c, int conv_k, int, int, int, int, int, int, int) {
  const int M = conv_n * conv_h * conv_w, N = conv_k, K = conv_c;
#else
extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
GEMM_F32_KERNEL(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
         int M, int N, int K) {
#endif
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

  // This thread's first register row and column in the block tile (gemm_f32_layout.cuh).
  const F32Layout lay = kernel_layout();
  const int tid = static_cast<int>(threadIdx.x);
  const int row_base = f32_row_base(lay, tid);
  const int col_base = f32_col_base(lay, tid);

  // Uniform checks: vector accesses need an aligned leading dimension and base.
  constexpr unsigned long long kVecBytes = sizeof(float) * kVec;
  const bool a_vec = K % kVec == 0 && reinterpret_cast<unsigned long long>(A) % kVecBytes == 0;
  const bool b_vec = (B_TRANS ? K : N) % kVec == 0 && reinterpret_cast<unsigned long long>(B) % kVecBytes == 0;

  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;

  float ra[kALoads][kVec];
  float rb[kBLoads][kVec];
  const int k_tiles = (K + kBK - 1) / kBK;

  if constexpr (kStages == 2) {
    // Double buffering: slab t+1 goes global -> registers (B by cp.async straight to the other
    // buffer) before slab t is computed, then registers -> the other buffer; one barrier per slab.
    // The other buffer is free: its last readers passed the barrier that ended slab t-1.
    load_a(A, M, K, row0, 0, a_vec, ra);
    if constexpr (kCpAsync) {
      copy_b_async(B, N, K, col0, 0, b_vec, bs_base);
      cp_async_commit();
    } else {
      load_b(B, N, K, col0, 0, b_vec, rb);
      store_b(bs_base, rb);
    }
    store_a(as_base, ra);
    if constexpr (kCpAsync) cp_async_wait<0>();
    __syncthreads();
    for (int t = 0; t < k_tiles; ++t) {
      const int cur = t & 1;
      const bool has_next = t + 1 < k_tiles;
      if (has_next) {
        if constexpr (kCpAsync) {
          copy_b_async(B, N, K, col0, (t + 1) * kBK, b_vec, bs_base + (cur ^ 1) * kBSlab);
          cp_async_commit();
        } else {
          load_b(B, N, K, col0, (t + 1) * kBK, b_vec, rb);
        }
        load_a(A, M, K, row0, (t + 1) * kBK, a_vec, ra);
      }
      compute_slab(as_base + cur * kASlab + row_base, bs_base + cur * kBSlab + col_base, acc);
      if (has_next) {
        store_a(as_base + (cur ^ 1) * kASlab, ra);
        if constexpr (!kCpAsync) store_b(bs_base + (cur ^ 1) * kBSlab, rb);
      }
      if constexpr (kCpAsync) cp_async_wait<0>();
      __syncthreads();
    }
  } else {
    for (int t = 0; t < k_tiles; ++t) {
      load_a(A, M, K, row0, t * kBK, a_vec, ra);
      load_b(B, N, K, col0, t * kBK, b_vec, rb);
      store_a(as_base, ra);
      store_b(bs_base, rb);
      __syncthreads();
      compute_slab(as_base + row_base, bs_base + col_base, acc);
      __syncthreads();
    }
  }

  // Epilogue: runs of kVN contiguous columns; vector store when the run is in
  // bounds and N and C are aligned, else element-wise; rows past M skipped.
  const bool c_vec = N % kVN == 0 && reinterpret_cast<unsigned long long>(C) % (sizeof(float) * kVN) == 0;
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int row = row0 + row_base + (i / kVM) * f32_row_step(lay) + i % kVM;
    if (row >= M) continue;
#pragma unroll
    for (int g = 0; g < kTN / kVN; ++g) {
      const int col = col0 + col_base + g * f32_col_step(lay);
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
