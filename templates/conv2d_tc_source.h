// The C++ side of the tensor-core conv2d (templates/kernels/conv2d_tc.cuh) forward template
// (conv2d_igemm_tc; f16/bf16 NHWC input, KRSC filter, NPQK output in the
// input type, fp32 accumulation on mma.sync.m16n8k16): an implicit GEMM
// (GEMM-M = N·P·Q, GEMM-N = K, GEMM-K = R·S·C) with the gemm_tc machinery
// (templates/kernels/tc_ptx.cuh: cp.async pipeline, XOR-swizzled tiles, ldmatrix).
//
// Kernel contract: the arguments of conv2d_igemm (conv2d_source.h), so the
// same reference kernel checks it. grid = ceil(N·P·Q/bm) · ceil(K/bn) blocks,
// consecutive blocks sweeping output pixels under one filter tile; block =
// 32·(bm/wm)·(bn/wn) threads; dynamic shared memory stages·(bm + bn)·bk·2 bytes.
// A tile [bm pixels][bk taps]: a 16-byte chunk is 8 consecutive channels of
// one (r, s) tap, copied with cp.async (zero-filled outside the image) when
// C % 8 == 0, else gathered element by element. B tile [bn filters][bk taps]
// (KRSC rows are contiguous in the taps), read with non-transposed ldmatrix.
#pragma once

#include <string>

#include "templates/workload.h"

namespace tuner::templates {

struct ConvTcTiling {
  DType dtype = DType::kF16;
  int bm = 128, bn = 64, bk = 32;  ///< Block tile: pixels x filters x taps.
  int wm = 64, wn = 32;            ///< Warp tile.
  int stages = 3;                  ///< cp.async pipeline depth (2..4).
};

inline constexpr const char* kConvTcKernelName = "conv2d_igemm";

int conv_tc_threads(const ConvTcTiling& t);
int conv_tc_shared_bytes(const ConvTcTiling& t);
std::string conv2d_tc_source(const ConvTcTiling& t);
std::string conv2d_tc_template_text();

}  // namespace tuner::templates
