#include "templates/row_norm_source.h"

#include "templates/kernel_files.h"

namespace tuner::templates {

std::string row_kernel_name(RowOp op) { return op == RowOp::kSoftmax ? "softmax_rows" : "layernorm_rows"; }
std::string row_reference_kernel_name(RowOp op) {
  return op == RowOp::kSoftmax ? "softmax_reference" : "layernorm_reference";
}

std::string row_norm_source(const RowTiling& t) {
  KernelSource s(row_kernel_name(t.op) + ".cuh", row_kernel_name(t.op) + ": one tiling.");
  s.element(t.dtype);
  s.define("ROW_THREADS", t.row_threads).define("ROWS_PER_BLOCK", t.rows_per_block).define("VEC", t.vec);
  s.define("ONE_PASS", t.one_pass).define("CACHE", t.cache).define("ITEMS", t.cache ? t.items : 1);
  if (t.min_blocks > 1) s.define("MIN_BLOCKS", t.min_blocks);  // 1 leaves the recorded kernels' sources as they were
  return s.str();
}

std::string row_norm_reference_source(RowOp op, DType d) {
  return KernelSource(row_reference_kernel_name(op) + ".cuh",
                      row_reference_kernel_name(op) + ": double-accumulation reference.")
      .element(d)
      .str();
}

std::string row_norm_template_text(RowOp op) {
  if (op == RowOp::kSoftmax) return kernel_files_text({"softmax_rows.cuh", "softmax_reference.cuh"});
  return kernel_files_text({"layernorm_rows.cuh", "layernorm_reference.cuh"});
}

}  // namespace tuner::templates
