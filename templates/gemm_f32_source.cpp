#include "templates/gemm_f32_source.h"

#include "templates/kernel_files.h"

namespace tuner::templates {
namespace {

// The kernel is templates/kernels/gemm_f32.cuh (with output_tile.cuh); its reference is
// templates/kernels/gemm_f32_reference.cuh. The tiling goes in as #define macros.
KernelSource gemm_f32_kernel(const GemmTiling& t, bool batched) {
  KernelSource s("gemm_f32.cuh", std::string(batched ? "gemm_f32_batched" : "gemm_f32") +
                                     ": fp32 SIMT GEMM, C = A*B, row-major A[MxK], B[KxN], C[MxN]; one tiling.");
  s.define("BM", t.bm).define("BN", t.bn).define("TM", t.tm).define("TN", t.tn).define("BK", t.bk);
  s.define("VEC", t.vec).define("STAGES", t.stages).define("PAD", t.pad).define("GROUP_M", t.group_m);
  s.define("WARP_N", t.warp_n).define("FRAG_DB", t.frag_db ? 1 : 0);
  s.define("CP_ASYNC", t.cp_async ? 1 : 0).define("BATCHED", batched ? 1 : 0);
  return s;
}

std::string gemm_f32_reference(bool batched) {
  return KernelSource("gemm_f32_reference.cuh", std::string(batched ? kGemmBatchedReferenceKernelName
                                                                   : kGemmReferenceKernelName) +
                                                    ": naive, double accumulation.")
      .define("BATCHED", batched ? 1 : 0)
      .str();
}

}  // namespace

std::string gemm_f32_source(const GemmTiling& t) { return gemm_f32_kernel(t, false).str(); }

std::string gemm_f32_reference_source() { return gemm_f32_reference(false); }

std::string gemm_f32_batched_source(const GemmTiling& t) { return gemm_f32_kernel(t, true).str(); }

std::string gemm_f32_batched_reference_source() { return gemm_f32_reference(true); }

std::string conv2d_gemm_f32_source(const GemmTiling& t) {
  KernelSource s = gemm_f32_kernel(t, false);
  s.define("B_TRANS", 1).define("CONV_1X1", 1);
  return s.str();
}

int gemm_threads(const GemmTiling& t) { return (t.bm / t.tm) * (t.bn / t.tn); }

size_t gemm_shared_bytes(const GemmTiling& t) {
  const size_t floats_per_stage = static_cast<size_t>(t.bk) * static_cast<size_t>((t.bm + t.pad) + (t.bn + t.pad));
  return static_cast<size_t>(t.stages) * floats_per_stage * sizeof(float);
}

std::string gemm_f32_template_text() { return kernel_files_text({"gemm_f32.cuh"}); }

}  // namespace tuner::templates
