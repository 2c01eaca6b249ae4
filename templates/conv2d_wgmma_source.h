// The C++ side of the Hopper conv2d template (conv2d_igemm_wgmma, sm_90a; the
// kernel is templates/kernels/conv2d_wgmma.cuh, its schedule and TMA
// coordinates templates/kernels/conv_wgmma_schedule.cuh): forward conv2d,
// f16/bf16 NHWC input, KRSC filter, NPQK output in the input type, fp32
// accumulation on wgmma, as an implicit GEMM whose im2col is done by TMA.
//
// A block tile is tile_h x tile_w output pixels of one image (bm = tile_h *
// tile_w GEMM rows) times bn filters; a k-tile is 64 channels of one filter
// tap. Per k-tile the producer thread copies the input box {64 channels,
// tile_w * stride, tile_h * stride, 1 image} with element strides {1, stride,
// stride, 1} (so tile_w x tile_h pixels land as 128-byte rows in the 128-byte
// swizzle wgmma reads, zero-filled in the padding) and the filter box {64, 1,
// 1, bn}; taps that miss every pixel of the tile are neither loaded nor
// multiplied. Consumers are gemm_tc_wgmma's (setmaxnreg, one k-tile's
// wgmmas in flight, a stage released when they complete), with both operands
// K-major; the epilogue stages 16 x 32 pieces per warp and stores 4-column
// vectors to each pixel's output row. With pingpong the two consumers run
// alternate units of a persistent CTA whole instead of sharing each unit's
// rows, so one's drain and epilogue overlap the other's products.
//
// Kernel contract:
//   conv2d_igemm_wgmma(const elem_t* X, const elem_t* F, elem_t* Y, TensorMap tmap_x, TensorMap tmap_f,
//                      int N, int H, int W, int C, int K, int R, int S, int stride, int pad, int dilation,
//                      int P, int Q)
//   tmap_x: X as {C, W, H, N}, box {64, tile_w * stride, tile_h * stride, 1}, element strides
//   {1, stride, stride, 1}; tmap_f: F as {C, S, R, K}, box {64, 1, 1, bn}; both 128-byte swizzle.
//   C % 8 == 0 (TMA strides are multiples of 16 bytes), K % 8 == 0 (16-byte output vectors), stride <= 8.
//   grid = conv_wgmma_grid_x(...) CTAs: one per unit (N * ceil(P/tile_h) * ceil(Q/tile_w) * ceil(K/bn)),
//   or, persistent, at most persistent_ctas looping over them; block = 128 * (1 + consumers) threads;
//   dynamic shared memory = stages * (bm + bn) * 128 + 1024 + consumers * 4 * kWgmmaEpilogueWarpBytes.
#pragma once

#include <cstdint>
#include <string>

#include "templates/workload.h"

namespace tuner::templates {

struct ConvWgmmaTiling {
  DType dtype = DType::kF16;
  int bm = 128, bn = 64;   ///< Block tile: output pixels (tile_h * tile_w) x filters.
  int tile_w = 16;         ///< Output columns of the pixel tile (tile_h = bm / tile_w rows).
  int consumers = 2;       ///< Consumer warpgroups sharing the bm rows.
  int stages = 4;          ///< Ring depth.
  int persistent_ctas = 0; ///< 0: a CTA per unit; else at most this many CTAs (the SM count) looping.
  bool pingpong = false;   ///< Two consumers take alternate units whole (persistent grids only).
};

/// Output pixels each consumer warpgroup multiplies per unit: bm, or bm / consumers when they share it.
int conv_wgmma_rows_per_consumer(const ConvWgmmaTiling& t);

inline constexpr const char* kConvWgmmaKernelName = "conv2d_igemm_wgmma";

int conv_wgmma_threads(const ConvWgmmaTiling& t);
size_t conv_wgmma_shared_bytes(const ConvWgmmaTiling& t);
/// Work units: n * ceil(p / tile_h) * ceil(q / tile_w) * ceil(k / bn).
int64_t conv_wgmma_unit_count(const ConvWgmmaTiling& t, int64_t n, int64_t p, int64_t q, int64_t k);
/// The grid: one CTA per unit, or, persistent, min(units, persistent_ctas).
int64_t conv_wgmma_grid_x(const ConvWgmmaTiling& t, int64_t n, int64_t p, int64_t q, int64_t k);
struct ConvDims;
/// The kernel source of one tiling for one conv shape: the shape is compiled in (CONV_N .. CONV_Q), so the
/// schedule's divisions are by constants; a launch with other scalars traps.
std::string conv2d_wgmma_source(const ConvWgmmaTiling& t, const ConvDims& d);
/// conv2d_reference with this kernel's arguments (the tensor maps after Y).
std::string conv2d_wgmma_reference_source(DType d);
std::string conv2d_wgmma_template_text();

}  // namespace tuner::templates
