// The C++ side of the conv2d forward template (NHWC input, KRSC
// filter, NPQK output; any stride, padding and dilation) as an implicit GEMM
// on CUDA cores: GEMM-M = N·P·Q output pixels, GEMM-N = K filters, GEMM-K =
// R·S·C taps; A is gathered from the input on the fly (zero outside the image),
// B is the filter read along R·S·C. fp32 accumulation for every dtype.
//
// The kernel is templates/kernels/conv2d.cuh, its reference (one thread per
// output, double accumulation) conv2d_reference.cuh; this file turns a
// ConvTiling into their #define macros (templates/kernel_files.h). Legality of tilings is decided by conv2d.h's constraints.
//
// Kernel contract:
//   conv2d_igemm(const elem_t* X, const elem_t* F, elem_t* Y, int N, int H, int W, int C, int K, int R, int S,
//                int stride, int pad, int dilation, int P, int Q)
//   grid = ceil(N*P*Q / bm) * ceil(K / bn) blocks (x, column-major over K tiles);
//   block = (bm/tm) * (bn/tn) threads; dynamic shared memory stages * bk * (bm + bn) floats.
//   Thread (ty, tx) owns outputs rows ty + i*(bm/tm), cols tx + j*(bn/tn): shared reads of B are
//   consecutive across the warp, reads of A broadcast; stores along K are coalesced.
//   Slab t+1 is gathered into registers while slab t is computed (stages == 2), else
//   load / sync / compute / sync.
#pragma once

#include <string>

#include "templates/workload.h"

namespace tuner::templates {

struct ConvTiling {
  DType dtype = DType::kF32;
  int bm = 64, bn = 64;  ///< Block tile: output pixels x filters.
  int tm = 4, tn = 4;    ///< Per-thread register tile.
  int bk = 16;           ///< Taps (r, s, c) per shared slab.
  int stages = 2;        ///< 1: load, sync, compute, sync; 2: register double buffering.
};

inline constexpr const char* kConvKernelName = "conv2d_igemm";
inline constexpr const char* kConvReferenceKernelName = "conv2d_reference";

int conv_threads(const ConvTiling& t);
/// Dynamic shared memory of the kernel in bytes: stages * bk * (bm + bn) * 4.
int conv_shared_bytes(const ConvTiling& t);
std::string conv2d_source(const ConvTiling& t);
/// Reference: one thread per output element (x over K, y over N*P*Q in 16x16 blocks; y grid
/// dimension may be large: it is blockIdx.y + blockIdx.z * gridDim.y), double accumulation.
std::string conv2d_reference_source(DType d);
std::string conv2d_template_text();

}  // namespace tuner::templates
