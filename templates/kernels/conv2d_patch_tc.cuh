// conv2d_patch_tc.cuh: forward conv2d for few input channels (the stem's C = 3) on mma.sync: a block
// copies the input patch of its tp x tq output pixels to shared memory once, writes the whole im2col
// tile (all R*S*C taps, rounded up to 16) from it with 16-byte stores, and multiplies it with the
// filter tile, which stays in shared memory for every pixel tile the block runs (conv_patch_layout.cuh
// has the layout). Where the general kernel (conv2d_tc.cuh) gathers each tap from global memory, this
// one reads the input once per tile. With PREFETCH, each thread loads its PATCH_REGS elements of the
// next tile's patch into registers before the current tile's products, so the global loads' latency
// hides behind them (the host sets PATCH_REGS to ceil(patch elements / threads)). The tuner defines
// before including it: ELEM_F16 or ELEM_BF16, TP, TQ, BN, WM, WN, PREFETCH, PATCH_REGS, MIN_BLOCKS, and the
// filter's shape CONV_C, CONV_R, CONV_S, CONV_STRIDE, CONV_DILATION: with them the reduction length, the
// patch's size and every division by them are constants (a launch with other values traps).
#pragma once
#include "element.cuh"

constexpr int kTP = TP, kTQ = TQ;            // pixel tile: output rows x columns
constexpr int kBM = TP * TQ, kBN = BN;       // block tile: pixels x filters
constexpr int kWM = WM, kWN = WN;            // warp tile
#ifndef PREFETCH
#define PREFETCH 0
#endif
#ifndef PATCH_REGS
#define PATCH_REGS 1
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
constexpr bool kPrefetch = PREFETCH != 0;    // the next tile's patch through registers
constexpr int kPatchRegs = PATCH_REGS;       // patch elements per thread when prefetching
#if defined(ELEM_BF16)
constexpr bool kBf16 = true;
#else
constexpr bool kBf16 = false;
#endif
#include "tc_ptx.cuh"
#include "output_tile.cuh"
#include "conv_patch_layout.cuh"

constexpr int kWarpsM = kBM / kWM, kWarpsN = kBN / kWN;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kMi = kWM / 16, kNi = kWN / 8;
static_assert(kBM % kWM == 0 && kBN % kWN == 0 && kWM % 16 == 0 && kWN % 16 == 0, "warp tiles");

static_assert(sizeof(elem_t) == 2, "f16 or bf16: the im2col build packs 2-byte elements");

__device__ __forceinline__ elem_t patch_elem(const elem_t* __restrict__ X, const ConvPatchGeom& g,
                                             const ConvPatchSrc& s, int i, int row_elems) {
  const int ph = i / row_elems, j = i - ph * row_elems;
  if (!conv_patch_inside(g, s, ph, j)) return 0;
  return X[static_cast<size_t>(s.img * g.h + s.h0 + ph) * g.w * g.c + static_cast<size_t>(s.w0 * g.c + j)];
}

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
conv2d_patch(const elem_t* __restrict__ X, const elem_t* __restrict__ F, elem_t* __restrict__ Y, int N, int H, int W,
             int C, int K, int R, int S, int stride, int pad, int dilation, int P, int Q) {
  extern __shared__ uint4 conv_patch_smem_buf[];
#if defined(CONV_C)
  if (C != CONV_C || R != CONV_R || S != CONV_S || stride != CONV_STRIDE || dilation != CONV_DILATION) __trap();
  C = CONV_C, R = CONV_R, S = CONV_S, stride = CONV_STRIDE, dilation = CONV_DILATION;
#endif
  const ConvPatchGeom g = conv_patch_geom(N, H, W, C, K, R, S, stride, pad, dilation, P, Q, kTP, kTQ, kBN);
  const ConvPatchSmem L = conv_patch_smem(g);
  unsigned char* base = reinterpret_cast<unsigned char*>(conv_patch_smem_buf);
  elem_t* As = reinterpret_cast<elem_t*>(base + L.a);
  elem_t* Bs = reinterpret_cast<elem_t*>(base + L.b);
  int* koff = reinterpret_cast<int*>(base + L.koff);
  elem_t* patch = reinterpret_cast<elem_t*>(base + L.patch);
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32, warp = tid / 32;
  const int wm0 = (warp / kWarpsN) * kWM, wn0 = (warp % kWarpsN) * kWN;
  const int col0 = static_cast<int>(blockIdx.y) * kBN;

  // The filter tile B [bn][kp] (zero past K and past R*S*C) and the tap offsets, once per block.
  for (int i = tid; i < kBN * g.kp; i += kThreads) {
    const int n = i / g.kp, k = i - n * g.kp;
    elem_t v = 0;
    if (col0 + n < K && k < g.kg) v = F[static_cast<size_t>(col0 + n) * g.kg + k];
    Bs[n * g.lda + k] = v;
  }
  for (int k = tid; k < g.kp; k += kThreads) koff[k] = k < g.kg ? conv_patch_koff(g, k) : 0;

  const int tiles = g.n * g.tiles_p * g.tiles_q;
  const int row_elems = g.pw * C;      // one patch row: pw pixels of C channels, contiguous in NHWC
  const int chunks = g.kp / 8;         // 16-byte chunks per im2col row
  const unsigned a_addr = smem_addr(As), b_addr = smem_addr(Bs);
  const unsigned pitch = static_cast<unsigned>(g.lda * 2);
  const bool pair_ok = K % 2 == 0;

  const int patch_total = g.ph * row_elems;
  const bool prefetch = kPrefetch && kPatchRegs * kThreads >= patch_total;
  elem_t pre[kPatchRegs];
  if (prefetch && static_cast<int>(blockIdx.x) < tiles) {
    const ConvPatchSrc first = conv_patch_src(g, static_cast<int>(blockIdx.x));
#pragma unroll
    for (int r = 0; r < kPatchRegs; ++r) {
      const int i = tid + r * kThreads;
      pre[r] = i < patch_total ? patch_elem(X, g, first, i, row_elems) : static_cast<elem_t>(0);
    }
  }

  for (int tile = static_cast<int>(blockIdx.x); tile < tiles; tile += static_cast<int>(gridDim.x)) {
    const ConvPatchSrc src = conv_patch_src(g, tile);
    const int img = src.img, p0 = src.p0, q0 = src.q0;
    __syncthreads();  // the last tile's readers of the patch and of A are done (the first time: B, koff)

    if (prefetch) {
#pragma unroll
      for (int r = 0; r < kPatchRegs; ++r) {
        const int i = tid + r * kThreads;
        if (i < patch_total) patch[i] = pre[r];
      }
    } else {
      for (int i = tid; i < patch_total; i += kThreads) patch[i] = patch_elem(X, g, src, i, row_elems);
    }
    __syncthreads();

    // The im2col tile A [bm][kp]: 8 taps of one pixel per 16-byte store. Consecutive lanes take consecutive
    // pixels of one 8-tap chunk: their patch reads are stride * C elements apart (12 bytes for the stem: no
    // two lanes of a tile row on one bank) and their offsets one broadcast load; lanes taking consecutive
    // chunks of one pixel read 16 bytes apart, four lanes to a bank (the first version did, on the GPU).
    for (int i = tid; i < kBM * chunks; i += kThreads) {
      const int kc = i / kBM, m = i - kc * kBM, k0 = kc * 8;
      const int pb = conv_patch_pixel_base(g, m, kTQ);
      const int4 o0 = *reinterpret_cast<const int4*>(koff + k0);
      const int4 o1 = *reinterpret_cast<const int4*>(koff + k0 + 4);
      const int o[8] = {o0.x, o0.y, o0.z, o0.w, o1.x, o1.y, o1.z, o1.w};
      unsigned short e[8];  // elem_t is f16 or bf16 bits
#pragma unroll
      for (int j = 0; j < 8; ++j) e[j] = k0 + j < g.kg ? patch[pb + o[j]] : static_cast<unsigned short>(0);
      uint4 v;
      v.x = e[0] | (static_cast<unsigned>(e[1]) << 16);
      v.y = e[2] | (static_cast<unsigned>(e[3]) << 16);
      v.z = e[4] | (static_cast<unsigned>(e[5]) << 16);
      v.w = e[6] | (static_cast<unsigned>(e[7]) << 16);
      *reinterpret_cast<uint4*>(As + m * g.lda + k0) = v;
    }
    __syncthreads();

    // The next tile's patch, in flight during this tile's products and stores.
    const int next = tile + static_cast<int>(gridDim.x);
    if (prefetch && next < tiles) {
      const ConvPatchSrc ns = conv_patch_src(g, next);
#pragma unroll
      for (int r = 0; r < kPatchRegs; ++r) {
        const int i = tid + r * kThreads;
        pre[r] = i < patch_total ? patch_elem(X, g, ns, i, row_elems) : static_cast<elem_t>(0);
      }
    }

    float acc[kMi][kNi][4];
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

    for (int ks = 0; ks < g.kp / 16; ++ks) {
      unsigned a[kMi][4];
      unsigned b[kNi][2];
#pragma unroll
      for (int mi = 0; mi < kMi; ++mi) {
        const unsigned r = static_cast<unsigned>(wm0 + mi * 16 + (lane & 15));
        const unsigned c = static_cast<unsigned>(ks * 2 + (lane >> 4));
        ldmatrix_x4(a[mi], a_addr + r * pitch + c * 16u);
      }
#pragma unroll
      for (int nj = 0; nj < kNi / 2; ++nj) {
        // Matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
        const unsigned r = static_cast<unsigned>(wn0 + nj * 16 + (lane & 7) + ((lane >> 4) << 3));
        const unsigned c = static_cast<unsigned>(ks * 2 + ((lane >> 3) & 1));
        unsigned t[4];
        ldmatrix_x4(t, b_addr + r * pitch + c * 16u);
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

    // Accumulator (mi, ni, e): local pixel wm0 + mi*16 + lane/4 + (e/2)*8, filter wn0 + ni*8 + (lane%4)*2 + e%2.
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = wm0 + mi * 16 + lane / 4 + h * 8;
        const int p = p0 + m / kTQ, q = q0 + m % kTQ;
        if (p >= P || q >= Q) continue;
        elem_t* row = Y + (static_cast<size_t>(img * P + p) * Q + q) * K;
#pragma unroll
        for (int ni = 0; ni < kNi; ++ni) {
          const int n = col0 + wn0 + ni * 8 + (lane % 4) * 2;
          store_pair(row + n, from_float(acc[mi][ni][2 * h]), from_float(acc[mi][ni][2 * h + 1]), n, K, pair_ok);
        }
      }
  }
}
