// The C++ side of the row-wise normalization templates: softmax
// (y = exp(x - max) / sum exp(x - max) over each row) and layernorm
// (y = (x - mean) / sqrt(var + 1e-5) * gamma + beta over each row), both on
// row-major [rows x cols] matrices of f32, f16 or bf16 with fp32 arithmetic.
//
// The kernels are templates/kernels/softmax_rows.cuh and layernorm_rows.cuh
// (row_norm.cuh shared), the references softmax_reference.cuh and
// layernorm_reference.cuh; this file turns a RowTiling into their #define
// macros (templates/kernel_files.h). It does
// not decide which tilings are legal (row_norm.h's constraints do), nor
// compile or launch anything.
//
// Kernel contract:
//   softmax_rows(const elem_t* X, elem_t* Y, int rows, int cols)
//   layernorm_rows(const elem_t* X, const elem_t* gamma, const elem_t* beta, elem_t* Y, int rows, int cols)
//   grid = ceil(rows / rows_per_block) blocks (x); block = row_threads * rows_per_block threads.
//   Row group g of a block (threads g*row_threads ..) owns row blockIdx.x*rows_per_block + g;
//   groups synchronize with their own named barrier (bar.sync g+1), so a group past the last row
//   simply returns. Thread t of a group reads vectors of `vec` elements at columns
//   (i*row_threads + t)*vec (coalesced); vector accesses are used when cols % vec == 0 (checked
//   at run time, uniformly), else element-wise guarded accesses.
//   one_pass: softmax keeps a running (max, sum) pair (online softmax); layernorm merges per-chunk
//   (count, mean, M2) triples pairwise (kernels/row_stats.cuh); else two passes (max then sum;
//   mean then variance).
//   cache: the row stays in registers (items = ceil(cols_hint / (row_threads*vec)) vectors per
//   thread, baked in), so the row is read from global memory once; the kernel is then correct
//   for cols <= items*row_threads*vec only. 1: fp32 values, each loaded on its first use; 2: the
//   elements as loaded (half the registers of f16/bf16), every load issued before the first use.
//   Without it (0) every pass re-reads the row (L2 hits).
// No dynamic shared memory; the static scratch is rows_per_block * (row_threads/32) * 3 floats.
#pragma once

#include <cstdint>
#include <string>

#include "templates/workload.h"

namespace tuner::templates {

enum class RowOp { kSoftmax, kLayernorm };

struct RowTiling {
  RowOp op = RowOp::kSoftmax;
  DType dtype = DType::kF32;
  int row_threads = 128;   ///< Threads per row: 32, 64, ..., 1024 (whole warps).
  int rows_per_block = 1;  ///< Rows per block (1, 2, 4, 8); threads = row_threads * rows_per_block.
  int vec = 4;             ///< Elements per global access (1, 2, 4, 8; at most 16 bytes).
  int one_pass = 1;        ///< 1: online softmax / pairwise-merged moments; 0: two passes.
  int cache = 0;           ///< 1: the row in fp32 registers; 2: in element registers, loads first; 0: re-read.
  int items = 1;           ///< Vectors per thread when cached: ceil(cols / (row_threads * vec)).
  int min_blocks = 1;      ///< Layernorm: blocks per SM the compiler keeps registers for (1 or 2).
};

inline constexpr double kLayernormEps = 1e-5;

/// "softmax_rows" | "layernorm_rows".
std::string row_kernel_name(RowOp op);
/// "softmax_reference" | "layernorm_reference".
std::string row_reference_kernel_name(RowOp op);
/// Threads per block of the reference kernel (one block per row).
inline constexpr int kRowReferenceThreads = 256;

std::string row_norm_source(const RowTiling& t);
/// Reference kernel (one block of 256 threads per row, double accumulation), same arguments.
std::string row_norm_reference_source(RowOp op, DType d);
/// The fixed text of one op's kernel and reference files (with what they include), for its version hash: an edit
/// of one op's kernel leaves the other's records current.
std::string row_norm_template_text(RowOp op);

}  // namespace tuner::templates
