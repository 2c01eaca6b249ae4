// conv2d_tc.cuh: forward conv2d as an implicit GEMM on tensor cores (mma.sync, fp32 accumulation):
// 16-byte cp.async im2col chunks when C % 8 == 0, element gathers otherwise. The tuner defines before
// including it: ELEM_F16 or ELEM_BF16, BM, BN, BK, WM, WN, STAGES.
#pragma once
#include "element.cuh"

// ---- tiling, from the macros the tuner defines ----
constexpr int kBM = BM, kBN = BN, kBK = BK;  // block tile: pixels x filters x taps
constexpr int kWM = WM, kWN = WN;            // warp tile
constexpr int kStages = STAGES;              // cp.async pipeline depth
#if defined(ELEM_BF16)
constexpr bool kBf16 = true;                 // operand type: bf16 (else f16)
#else
constexpr bool kBf16 = false;
#endif
#include "tc_ptx.cuh"
#include "output_tile.cuh"

constexpr int kWarpsM = kBM / kWM, kWarpsN = kBN / kWN;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kMi = kWM / 16, kNi = kWN / 8;
constexpr int kCpr = kBK / 8;                    // 16-byte chunks per shared row (A and B)
constexpr int kALoads = kBM * kCpr / kThreads, kBLoads = kBN * kCpr / kThreads;
constexpr int kRowStep = kThreads / kCpr;        // rows between one thread's successive chunks
constexpr int kAStage = kBM * kBK, kBStage = kBN * kBK;  // elements per stage
static_assert(kBM % kWM == 0 && kBN % kWN == 0 && kWM % 16 == 0 && kWN % 16 == 0, "warp tiles");
static_assert(kBK % 16 == 0 && kThreads % kCpr == 0 && kRowStep % 8 == 0, "chunk rows keep their swizzle");
static_assert((kBM * kCpr) % kThreads == 0 && (kBN * kCpr) % kThreads == 0, "tiles split evenly");
static_assert(kStages >= 2 && kStages <= 5, "stages 2..5");

struct ConvArgs {
  int N, H, W, C, K, R, S, stride, pad, dilation, P, Q, M, KG;
};

// The output pixel of each of this thread's A rows (fixed for the whole K loop).
struct PixelRows {
  int n[kALoads], h0[kALoads], w0[kALoads];  // image, top-left input row/col of the window
  bool ok[kALoads];
};

__device__ __forceinline__ elem_t gather_one(const elem_t* __restrict__ X, const ConvArgs& a, const PixelRows& px,
                                             int i, int kk) {
  if (!px.ok[i] || kk >= a.KG) return 0;
  const int r = kk / (a.S * a.C), s = (kk / a.C) % a.S, c = kk % a.C;
  const int h = px.h0[i] + r * a.dilation, w = px.w0[i] + s * a.dilation;
  if (h < 0 || h >= a.H || w < 0 || w >= a.W) return 0;
  return X[((static_cast<size_t>(px.n[i]) * a.H + h) * a.W + w) * a.C + c];
}

__device__ __forceinline__ void load_tiles(unsigned as, unsigned bs, const elem_t* __restrict__ X,
                                           const elem_t* __restrict__ F, const ConvArgs& a, const PixelRows& px,
                                           int row_local, int chunk, int col0, int kt, bool c_async) {
  const int kk0 = kt * kBK + chunk * 8;
  const unsigned a_dst = as + static_cast<unsigned>((row_local * kBK + swz(row_local, chunk, kCpr) * 8) * 2);
  if (c_async) {
    // C % 8 == 0: the chunk's 8 taps are 8 consecutive channels of one (r, s).
    const int r = kk0 / (a.S * a.C), s = (kk0 / a.C) % a.S, c = kk0 % a.C;
#pragma unroll
    for (int i = 0; i < kALoads; ++i) {
      const int h = px.h0[i] + r * a.dilation, w = px.w0[i] + s * a.dilation;
      const bool ok = px.ok[i] && kk0 < a.KG && h >= 0 && h < a.H && w >= 0 && w < a.W;
      const elem_t* src = ok ? X + ((static_cast<size_t>(px.n[i]) * a.H + h) * a.W + w) * a.C + c : X;
      cp_async16(a_dst + static_cast<unsigned>(i * kRowStep * kBK * 2), src, ok);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kALoads; ++i) {
      unsigned short e[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) e[j] = gather_one(X, a, px, i, kk0 + j);
      uint4 v;
      v.x = e[0] | (static_cast<unsigned>(e[1]) << 16);
      v.y = e[2] | (static_cast<unsigned>(e[3]) << 16);
      v.z = e[4] | (static_cast<unsigned>(e[5]) << 16);
      v.w = e[6] | (static_cast<unsigned>(e[7]) << 16);
      st_shared16(a_dst + static_cast<unsigned>(i * kRowStep * kBK * 2), v);
    }
  }
  const unsigned b_dst = bs + static_cast<unsigned>((row_local * kBK + swz(row_local, chunk, kCpr) * 8) * 2);
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    const int n = col0 + row_local + i * kRowStep;
    const elem_t* src = F + static_cast<size_t>(n) * a.KG + kk0;
    const unsigned dst = b_dst + static_cast<unsigned>(i * kRowStep * kBK * 2);
    if (c_async) {
      const bool ok = n < a.K && kk0 < a.KG;  // KG = R*S*C is a multiple of 8 too
      cp_async16(dst, ok ? src : F, ok);
    } else {
      st_shared16(dst, load_chunk_guarded(src, kk0, a.KG, n < a.K));
    }
  }
}

// One shared stage: A [kBM][kBK] as in gemm_tc; B [kBN][kBK] (filters x taps) read without .trans.
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
      ldmatrix_x4(a[mi], as + static_cast<unsigned>((r * kBK + swz(r, c, kCpr) * 8) * 2));
    }
#pragma unroll
    for (int nj = 0; nj < kNi / 2; ++nj) {
      // Matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
      const int r = wn0 + nj * 16 + (lane & 7) + ((lane >> 4) << 3);
      const int c = kk * 2 + ((lane >> 3) & 1);
      unsigned t[4];
      ldmatrix_x4(t, bs + static_cast<unsigned>((r * kBK + swz(r, c, kCpr) * 8) * 2));
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

extern "C" __global__ void __launch_bounds__(kThreads)
conv2d_igemm(const elem_t* __restrict__ X, const elem_t* __restrict__ F, elem_t* __restrict__ Y, int N, int H, int W,
             int C, int K, int R, int S, int stride, int pad, int dilation, int P, int Q) {
  extern __shared__ uint4 conv2d_tc_smem[];
  const unsigned as_base = smem_addr(conv2d_tc_smem);
  const unsigned bs_base = as_base + static_cast<unsigned>(kStages * kAStage * 2);
  const ConvArgs a{N, H, W, C, K, R, S, stride, pad, dilation, P, Q, N * P * Q, R * S * C};
  const int grid_m = (a.M + kBM - 1) / kBM;
  const int row0 = (static_cast<int>(blockIdx.x) % grid_m) * kBM;
  const int col0 = (static_cast<int>(blockIdx.x) / grid_m) * kBN;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32, warp = tid / 32;
  const int wm0 = (warp / kWarpsN) * kWM, wn0 = (warp % kWarpsN) * kWN;
  const int row_local = tid / kCpr, chunk = tid % kCpr;

  PixelRows px;
#pragma unroll
  for (int i = 0; i < kALoads; ++i) {
    const int m = row0 + row_local + i * kRowStep;
    px.ok[i] = m < a.M;
    const int mm = px.ok[i] ? m : 0;
    px.n[i] = mm / (P * Q);
    const int pq = mm % (P * Q);
    px.h0[i] = (pq / Q) * stride - pad;
    px.w0[i] = (pq % Q) * stride - pad;
  }
  const bool c_async = C % 8 == 0 && reinterpret_cast<unsigned long long>(X) % 16 == 0 &&
                       reinterpret_cast<unsigned long long>(F) % 16 == 0;

  float acc[kMi][kNi][4];
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

  const int k_tiles = (a.KG + kBK - 1) / kBK;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles)
      load_tiles(as_base + s * kAStage * 2, bs_base + s * kBStage * 2, X, F, a, px, row_local, chunk, col0, s, c_async);
    cp_async_commit();
  }
  for (int t = 0; t < k_tiles; ++t) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    const int next = t + kStages - 1;
    if (next < k_tiles) {
      const int s = next % kStages;
      load_tiles(as_base + s * kAStage * 2, bs_base + s * kBStage * 2, X, F, a, px, row_local, chunk, col0, next,
                 c_async);
    }
    cp_async_commit();
    const int s = t % kStages;
    compute_stage(as_base + s * kAStage * 2, bs_base + s * kBStage * 2, wm0, wn0, lane, acc);
  }
  cp_async_wait<0>();

  // Accumulator (mi, ni, e): pixel wm0 + mi*16 + lane/4 + (e/2)*8, filter wn0 + ni*8 + (lane%4)*2 + e%2.
  const bool pair_ok = K % 2 == 0;
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = row0 + wm0 + mi * 16 + lane / 4 + h * 8;
        const int n = col0 + wn0 + ni * 8 + (lane % 4) * 2;
        if (m >= a.M) continue;
        store_pair(Y + static_cast<size_t>(m) * K + n, from_float(acc[mi][ni][2 * h]),
                   from_float(acc[mi][ni][2 * h + 1]), n, K, pair_ok);
      }
}
