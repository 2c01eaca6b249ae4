// wgmma_epilogue.cuh: the staged epilogue of the Hopper wgmma kernels (gemm_wgmma.cuh, conv2d_wgmma.cuh):
// each consumer warp stages 16 x 32 pieces of its fp32 accumulators in a padded shared buffer of its own
// and hands them out as 4-column row vectors (whole 32-byte sectors when stored). The including kernel
// defines kBN, kMSub, kAcc, out_t and to_out() first.
#pragma once

constexpr int kEpiCols = 32, kEpiPitch = 40;  // fp32 per staged row, padded: no bank conflicts either way
constexpr int kEpiWarpFloats = 16 * kEpiPitch;
static_assert(kBN % kEpiCols == 0, "whole 32-column pieces");

// Writes piece `chunk` (columns 32*chunk ..) of m64 tile acc_i's warp rows into the warp's buffer: the
// thread's pair (e, e + 1) sits at row lane/4 + 8h, column 8jj + 2*(lane%4) of the piece. The 64-bit
// writes of a half-warp cover 32 distinct banks (row pitch 40 = 8 banks apart).
__device__ __forceinline__ void stage_piece(float* buf, const float* acc_i, int chunk, int lane) {
  __syncwarp();  // the warp's reads of the previous piece are done
#pragma unroll
  for (int jj = 0; jj < kEpiCols / 8; ++jj)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int e = (chunk * (kEpiCols / 8) + jj) * 4 + h * 2;
      *reinterpret_cast<float2*>(buf + (lane / 4 + 8 * h) * kEpiPitch + 8 * jj + 2 * (lane % 4)) =
          make_float2(acc_i[e], acc_i[e + 1]);
    }
  __syncwarp();
}

// Calls f(lr, lc, r, c) for the 4 row vectors (4 columns each) a lane owns in a 16 x 32 piece whose
// first output is (r0, c0): vector t is piece row lr = lane/8 + 4t, columns lc = 4*(lane%8) ..+3, so 8
// lanes cover a row's 32 outputs (whole sectors). Only vectors inside M and N: N % 4 == 0, so a vector
// is wholly in or out.
template <typename F>
__device__ __forceinline__ void for_each_piece_vec(int r0, int c0, int M, int N, int lane, F&& f) {
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const int lr = lane / 8 + 4 * t, lc = 4 * (lane % 8);
    if (r0 + lr < M && c0 + lc < N) f(lr, lc, r0 + lr, c0 + lc);
  }
}

// Stages each 16 x 32 piece of the warp's accumulators in turn (its rows from rows0, the tile's
// columns from col0) and calls f(r, c, v) for each 4-column vector v of it inside M and N.
template <typename F>
__device__ __forceinline__ void for_each_staged_vec(float* buf, const float (&acc)[kMSub][kAcc], int rows0, int col0,
                                                    int M, int N, int lane, F&& f) {
#pragma unroll
  for (int i = 0; i < kMSub; ++i)
#pragma unroll
    for (int chunk = 0; chunk < kBN / kEpiCols; ++chunk) {
      stage_piece(buf, acc[i], chunk, lane);
      for_each_piece_vec(rows0 + i * 64, col0 + chunk * kEpiCols, M, N, lane, [&](int lr, int lc, int r, int c) {
        f(r, c, *reinterpret_cast<const float4*>(buf + lr * kEpiPitch + lc));
      });
    }
}

// Four outputs at dst (16-byte aligned for fp32, 8-byte for 2-byte types: c % 4 == 0 and N % 4 == 0).
__device__ __forceinline__ void store_vec4(out_t* dst, float4 v) {
  if constexpr (sizeof(out_t) == 4) {
    *reinterpret_cast<float4*>(dst) = v;
  } else {
    struct alignas(4 * sizeof(out_t)) Quad { out_t x, y, z, w; };
    *reinterpret_cast<Quad*>(dst) = Quad{to_out(v.x), to_out(v.y), to_out(v.z), to_out(v.w)};
  }
}

