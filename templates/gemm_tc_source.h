// The C++ side of the tensor-core GEMM template (gemm_tc_mma):
// C = A·B with A [M x K] and B [K x N] row-major in f16 or bf16, fp32
// accumulation on mma.sync.aligned.m16n8k16, C in the input type or fp32;
// optionally batched (packed strided batches, the batch in blockIdx.z).
//
// The kernel is templates/kernels/gemm_tc.cuh (inline PTX for ldmatrix, mma,
// cp.async in tc_ptx.cuh), its reference gemm_tc_reference.cuh; this file turns
// a TcTiling into their #define macros (templates/kernel_files.h). Legality of tilings is decided by
// gemm_tc.h's constraints; compiling and launching is the tuner's job.
//
// Kernel contract:
//   gemm_tc(const elem_t* A, const elem_t* B, out_t* C, float* workspace, int M, int N, int K)
//   grid  = (ceil(M/bm) * ceil(N/bn), 1, batch * split_k); block = 32 * (bm/wm) * (bn/wn) threads;
//   dynamic shared memory = stages * (bm*bk + bk*bn) * 2 bytes.
//   Batch b = blockIdx.z / split_k reads A + b*M*K, B + b*K*N and writes C + b*M*N.
// Main loop: a `stages`-deep cp.async pipeline (16-byte copies; rows or columns past the matrix are
// zero-filled with src-size 0) into shared tiles whose 16-byte chunks are XOR-swizzled (chunk ^ row
// within each 128-byte line group), so both the cp.async stores and the ldmatrix reads are free of
// bank conflicts. When K or N is not a multiple of 8 (or a base is not 16-byte aligned) the 16-byte
// copies would be misaligned: that operand is loaded element-wise with guards instead (same layout,
// synchronous), so any M, N, K is correct.
// Split-K (split_k > 1): split s handles k-tiles [s*kps, (s+1)*kps); each writes its fp32 partial
// tile to workspace[s][b][M][N], fences, and increments the tile's counter (workspace words past
// kTcPartialFloats); the block that arrives last sums the partials in split order (deterministic),
// writes C and resets the counter to 0. The workspace's counters must be zero before the first
// launch (the runner zeroes workspace buffers); the kernel leaves them zero. No block ever waits
// for another, so there is no deadlock whatever the scheduling order.
// Rasterization: group_m block-rows are swept together (as gemm_f32).
#pragma once

#include <cstdint>
#include <string>

#include "templates/workload.h"

namespace tuner::templates {

struct TcTiling {
  DType dtype = DType::kF16;  ///< f16 or bf16 operands.
  int bm = 128, bn = 128, bk = 32;  ///< Block tile (bk: 16, 32 or 64).
  int wm = 64, wn = 64;        ///< Warp tile (multiples of 16 and of 16 respectively).
  int stages = 3;              ///< cp.async pipeline depth (2..5).
  int split_k = 1;             ///< K splits reduced through the fp32 workspace (1: none).
  int group_m = 8;             ///< Block rasterization.
  int out_f32 = 0;             ///< 1: C is fp32; 0: C in the input type.
};

inline constexpr const char* kTcKernelName = "gemm_tc";
inline constexpr const char* kTcReferenceKernelName = "gemm_tc_reference";

int tc_threads(const TcTiling& t);
size_t tc_shared_bytes(const TcTiling& t);
/// Floats of the workspace: split-K partials ([split][batch][M][N], when batch*M*N <= kTcMaxSplitOutputElements)
/// followed by one counter word per tile of the smallest tiling (32 x 32).
int64_t tc_workspace_floats(int64_t batch, int64_t m, int64_t n);
/// Largest split_k any config may use, and the largest batch*M*N for which split-K is offered
/// (the workspace holds kTcMaxSplit partial outputs).
inline constexpr int kTcMaxSplit = 8;
inline constexpr int64_t kTcMaxSplitOutputElements = int64_t{1} << 21;

std::string gemm_tc_source(const TcTiling& t);
/// Reference: one thread per C element, double accumulation, grid (ceil(N/16), ceil(M/16), batch).
std::string gemm_tc_reference_source(DType d, bool out_f32);
std::string gemm_tc_template_text();

}  // namespace tuner::templates
