// gemm_tc.cuh: the tensor-core GEMM (mma.sync m16n8k16, fp32 accumulation, ldmatrix, cp.async
// pipeline, XOR-swizzled shared memory, split-K through an fp32 workspace). Batches are blockIdx.z.
// The tuner defines before including it: ELEM_F16 or ELEM_BF16, BM, BN, BK, WM, WN, STAGES, SPLIT_K,
// GROUP_M and OUT_F32 (0: C in the input type, 1: C in fp32).
#pragma once
#include "element.cuh"

// ---- tiling, from the macros the tuner defines ----
constexpr int kBM = BM, kBN = BN, kBK = BK;  // block tile
constexpr int kWM = WM, kWN = WN;            // warp tile
constexpr int kStages = STAGES;              // cp.async pipeline depth
constexpr int kSplitK = SPLIT_K;             // K splits (fp32 workspace reduction)
constexpr int kGroupM = GROUP_M;             // block-rows swept together
#if defined(ELEM_BF16)
constexpr bool kBf16 = true;                 // operand type: bf16 (else f16)
#else
constexpr bool kBf16 = false;
#endif
#if OUT_F32
typedef float out_t;                         // C's element type
#else
typedef elem_t out_t;
#endif
#include "tc_ptx.cuh"
#include "output_tile.cuh"

constexpr int kWarpsM = kBM / kWM, kWarpsN = kBN / kWN;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kMi = kWM / 16, kNi = kWN / 8;       // mma tiles per warp (m16 x n8)
constexpr int kACpr = kBK / 8, kBCpr = kBN / 8;    // 16-byte chunks per shared row of A and B
constexpr int kAChunks = kBM * kACpr, kBChunks = kBK * kBCpr;
constexpr int kALoads = kAChunks / kThreads, kBLoads = kBChunks / kThreads;
constexpr int kAStage = kBM * kBK, kBStage = kBK * kBN;  // elements per stage
constexpr long long kMaxSplitOutputs = 1LL << 21;  // split-K partials exist when batch*M*N <= this
constexpr int kMaxSplit = 8;
static_assert(kBM % kWM == 0 && kBN % kWN == 0, "warp tiles divide the block tile");
static_assert(kWM % 16 == 0 && kWN % 16 == 0, "warp tile: multiples of 16");
static_assert(kBK % 16 == 0, "bk: multiple of 16");
static_assert(kAChunks % kThreads == 0 && kBChunks % kThreads == 0, "tiles split evenly over threads");
static_assert(kStages >= 2 && kStages <= 5, "stages 2..5");
static_assert(kThreads <= 1024, "threads per block");

constexpr int kARowStep = kThreads / kACpr;  // A rows between one thread's successive chunks
constexpr int kBRowStep = kThreads / kBCpr;  // B rows between one thread's successive chunks
static_assert(kThreads % kACpr == 0 && kThreads % kBCpr == 0, "whole rows of chunks per pass");
static_assert(kARowStep % 8 == 0, "a thread's A chunks keep one swizzled column (8-row line groups)");

// A thread's fixed share of every tile: chunk i of A is row a_row + i*kARowStep at column chunk a_c
// (its swizzled column is the same for every i, as kARowStep is a multiple of 8 rows per line
// group); chunk i of B is row b_row + i*kBRowStep at column chunk b_c.
struct TileLoader {
  int a_row, a_c, b_row, b_c;
};

// Global -> shared stage (byte addresses as, bs) for k-tile kt: A rows row0.. (kBM x kBK), B rows
// kt*kBK.. (kBK x kBN).
__device__ __forceinline__ void load_tiles(unsigned as, unsigned bs, const elem_t* __restrict__ A,
                                           const elem_t* __restrict__ B, int M, int N, int K, int row0,
                                           int col0, int kt, bool a_async, bool b_async, const TileLoader& l) {
  const int k0 = kt * kBK;
  const int gk_a = k0 + l.a_c * 8;
  const unsigned a_dst = as + static_cast<unsigned>((l.a_row * kBK + swz(l.a_row, l.a_c, kACpr) * 8) * 2);
#pragma unroll
  for (int i = 0; i < kALoads; ++i) {
    const int gr = row0 + l.a_row + i * kARowStep;
    const elem_t* src = A + static_cast<size_t>(gr) * K + gk_a;
    const unsigned dst = a_dst + static_cast<unsigned>(i * kARowStep * kBK * 2);
    if (a_async) {
      const bool ok = gr < M && gk_a < K;  // K % 8 == 0: a chunk is wholly in or out
      cp_async16(dst, ok ? src : A, ok);
    } else {
      st_shared16(dst, load_chunk_guarded(src, gk_a, K, gr < M));
    }
  }
  const int gc = col0 + l.b_c * 8;
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    const int r = l.b_row + i * kBRowStep;
    const int gk = k0 + r;
    const elem_t* src = B + static_cast<size_t>(gk) * N + gc;
    const unsigned dst = bs + static_cast<unsigned>((r * kBN + swz(r, l.b_c, kBCpr) * 8) * 2);
    if (b_async) {
      const bool ok = gk < K && gc < N;
      cp_async16(dst, ok ? src : B, ok);
    } else {
      st_shared16(dst, load_chunk_guarded(src, gc, N, gk < K));
    }
  }
}

// One shared stage through the warp's kMi x kNi mma tiles.
__device__ __forceinline__ void compute_stage(unsigned as, unsigned bs, int wm0, int wn0, int lane,
                                              float (&acc)[kMi][kNi][4]) {
#pragma unroll
  for (int kk = 0; kk < kBK / 16; ++kk) {
    unsigned a[kMi][4];
    unsigned b[kNi][2];
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi) {
      const int r = wm0 + mi * 16 + (lane & 15);
      const int c = kk * 2 + (lane >> 4);
      ldmatrix_x4(a[mi], as + static_cast<unsigned>((r * kBK + swz(r, c, kACpr) * 8) * 2));
    }
#pragma unroll
    for (int nj = 0; nj < kNi / 2; ++nj) {
      const int r = kk * 16 + (lane & 15);
      const int c = (wn0 + nj * 16) / 8 + (lane >> 4);
      unsigned t[4];
      ldmatrix_x4_trans(t, bs + static_cast<unsigned>((r * kBN + swz(r, c, kBCpr) * 8) * 2));
      b[2 * nj][0] = t[0];
      b[2 * nj][1] = t[1];
      b[2 * nj + 1][0] = t[2];
      b[2 * nj + 1][1] = t[3];
    }
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNi; ++ni) mma16816(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
  }
}

__device__ __forceinline__ out_t to_out(float v) {
  if constexpr (sizeof(out_t) == 4) return v;
  else return from_float(v);
}

extern "C" __global__ void __launch_bounds__(kThreads)
gemm_tc(const elem_t* __restrict__ A, const elem_t* __restrict__ B, out_t* __restrict__ C, float* workspace,
        int M, int N, int K) {
  extern __shared__ uint4 gemm_tc_smem[];
  const unsigned as_base = smem_addr(gemm_tc_smem);                      // byte addresses
  const unsigned bs_base = as_base + static_cast<unsigned>(kStages * kAStage * 2);

  const int batch = static_cast<int>(blockIdx.z) / kSplitK;
  const int split = static_cast<int>(blockIdx.z) % kSplitK;
  const int batches = static_cast<int>(gridDim.z) / kSplitK;
  A += static_cast<size_t>(batch) * M * K;
  B += static_cast<size_t>(batch) * K * N;
  C += static_cast<size_t>(batch) * M * N;

  const int grid_m = (M + kBM - 1) / kBM;
  const int grid_n = (N + kBN - 1) / kBN;
  const int bid = static_cast<int>(blockIdx.x);
  int block_row, block_col;
  raster_block<kGroupM>(bid, grid_m, grid_n, block_row, block_col);
  const int row0 = block_row * kBM, col0 = block_col * kBN;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32, warp = tid / 32;
  const int wm0 = (warp / kWarpsN) * kWM, wn0 = (warp % kWarpsN) * kWN;

  const TileLoader loader{tid / kACpr, tid % kACpr, tid / kBCpr, tid % kBCpr};
  const bool a_async = K % 8 == 0 && reinterpret_cast<unsigned long long>(A) % 16 == 0;
  const bool b_async = N % 8 == 0 && reinterpret_cast<unsigned long long>(B) % 16 == 0;

  const int k_tiles = (K + kBK - 1) / kBK;
  const int per_split = (k_tiles + kSplitK - 1) / kSplitK;
  const int kt_begin = split * per_split;
  const int kt_end = kt_begin + per_split < k_tiles ? kt_begin + per_split : k_tiles;
  const int n_tiles = kt_end > kt_begin ? kt_end - kt_begin : 0;

  float acc[kMi][kNi][4];
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

  // Prologue: the first kStages-1 tiles in flight (one commit group each, empty past the end).
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n_tiles)
      load_tiles(as_base + s * kAStage * 2, bs_base + s * kBStage * 2, A, B, M, N, K, row0, col0, kt_begin + s, a_async,
                 b_async, loader);
    cp_async_commit();
  }
  for (int t = 0; t < n_tiles; ++t) {
    cp_async_wait<kStages - 2>();  // tile t has landed (this thread's copies)...
    __syncthreads();               // ...everyone's, and stage (t-1) % kStages is free again
    const int next = t + kStages - 1;
    if (next < n_tiles) {
      const int s = next % kStages;
      load_tiles(as_base + s * kAStage * 2, bs_base + s * kBStage * 2, A, B, M, N, K, row0, col0, kt_begin + next,
                 a_async, b_async, loader);
    }
    cp_async_commit();
    const int s = t % kStages;
    compute_stage(as_base + s * kAStage * 2, bs_base + s * kBStage * 2, wm0, wn0, lane, acc);
  }
  cp_async_wait<0>();

  // Accumulator (mi, ni, e): row wm0 + mi*16 + lane/4 + (e/2)*8, col wn0 + ni*8 + (lane%4)*2 + e%2.
  if constexpr (kSplitK > 1) {
    // Every split writes its partial; the last to arrive sums them in split order and writes C.
    const long long outputs = static_cast<long long>(batches) * M * N;
    float* partial = workspace + (static_cast<size_t>(split) * batches + batch) * M * N;
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = row0 + wm0 + mi * 16 + lane / 4 + (e / 2) * 8;
          const int c = col0 + wn0 + ni * 8 + (lane % 4) * 2 + e % 2;
          if (r < M && c < N) partial[static_cast<size_t>(r) * N + c] = acc[mi][ni][e];
        }
    __threadfence();
    __syncthreads();
    __shared__ unsigned arrived;
    unsigned* counters = reinterpret_cast<unsigned*>(workspace + (outputs <= kMaxSplitOutputs ? kMaxSplit * outputs : 0));
    const int tile = (batch * grid_m + block_row) * grid_n + block_col;
    if (tid == 0) arrived = atomicAdd(&counters[tile], 1u);
    __syncthreads();
    if (arrived != kSplitK - 1) return;
    __threadfence();
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = row0 + wm0 + mi * 16 + lane / 4 + (e / 2) * 8;
          const int c = col0 + wn0 + ni * 8 + (lane % 4) * 2 + e % 2;
          if (r >= M || c >= N) continue;
          float sum = 0.0f;
          for (int s2 = 0; s2 < kSplitK; ++s2)
            sum += ld_cg(workspace + (static_cast<size_t>(s2) * batches + batch) * M * N + static_cast<size_t>(r) * N + c);
          acc[mi][ni][e] = sum;
        }
    if (tid == 0) counters[tile] = 0u;  // ready for the next launch
  }

  const bool pair_ok = N % 2 == 0;  // two adjacent outputs share one aligned store
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row0 + wm0 + mi * 16 + lane / 4 + h * 8;
        const int c = col0 + wn0 + ni * 8 + (lane % 4) * 2;
        if (r >= M) continue;
        store_pair(C + static_cast<size_t>(r) * N + c, to_out(acc[mi][ni][2 * h]), to_out(acc[mi][ni][2 * h + 1]), c,
                   N, pair_ok);
      }
}
