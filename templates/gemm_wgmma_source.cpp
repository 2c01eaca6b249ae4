#include "templates/gemm_wgmma_source.h"

#include <algorithm>

#include "templates/kernel_files.h"

namespace tuner::templates {

WgmmaSmemLayout wgmma_smem_layout(int bn) {
  WgmmaSmemLayout l;
  if (bn < kWgmmaBoxCols) {  // one 32-column box: k-rows of 64 bytes, 64-byte swizzle (repeats every 512)
    l.b_box_cols = 32;
    l.b_swizzle = 64;
    l.b_sbo = 8 * 64;
    l.b_lbo = 32 * kWgmmaBk * 2;
    l.b_k16_step = 16 * 64;
  }
  return l;
}

int wgmma_threads(const WgmmaTiling& t) { return 128 * (1 + t.consumers); }

size_t wgmma_shared_bytes(const WgmmaTiling& t) {
  const size_t epilogue = t.epilogue ? static_cast<size_t>(t.consumers) * 4 * kWgmmaEpilogueWarpBytes : 0;
  const size_t reduction = static_cast<size_t>(std::max(t.cluster_k, 1) - 1) * static_cast<size_t>(t.consumers) * 128 *
                           static_cast<size_t>(wgmma_accumulators(t)) * 4;
  return static_cast<size_t>(t.stages) * static_cast<size_t>(t.bm + t.bn) * kWgmmaBk * 2 + 1024 + epilogue + reduction;
}

size_t wgmma_static_shared_bytes(const WgmmaTiling& t) {
  // The barriers, rounded up to the 1024-byte alignment of the dynamic array that follows them (ptxas reports
  // 1024 bytes for every config, NVRTC 13.0).
  return (16 * static_cast<size_t>(t.stages) + 32 + 1023) / 1024 * 1024;
}

int wgmma_rows_per_consumer(const WgmmaTiling& t) { return t.pingpong ? t.bm : t.bm / t.consumers; }

int wgmma_accumulators(const WgmmaTiling& t) { return (wgmma_rows_per_consumer(t) / 64) * t.bn / 2; }

int wgmma_consumer_registers(const WgmmaTiling& t) {
  // The CTA's pool is what the launch gave it (ptxas's count times the threads). The producer keeps
  // 40; two consumers share the rest of a 168-register launch (128*40 + 256*232 = 168*384); one
  // consumer fits 240 in a launch of 140 or more (128*40 + 128*240 = 140*256).
  return t.consumers == 1 ? 240 : 232;
}

int64_t wgmma_grid_x(const WgmmaTiling& t, int64_t m, int64_t n, int64_t k, int64_t batch) {
  (void)k;
  const int64_t cluster = std::max(t.cluster, 1);
  const int64_t col_groups = ((n + t.bn - 1) / t.bn + cluster - 1) / cluster;
  const int64_t units = ((m + t.bm - 1) / t.bm) * col_groups * t.split_k;
  if (t.persistent_ctas <= 0) return units * cluster * std::max(t.cluster_k, 1);
  const int64_t clusters = std::max<int64_t>(1, std::min(units * batch, t.persistent_ctas / cluster));
  return clusters * cluster;
}

int64_t wgmma_grid_z(const WgmmaTiling& t, int64_t batch) { return t.persistent_ctas > 0 ? 1 : batch; }

std::string gemm_wgmma_source(const WgmmaTiling& t) {
  KernelSource s("gemm_wgmma.cuh", "gemm_tc_wgmma: Hopper GEMM (TMA + wgmma, warp-specialised); one tiling.");
  s.element(t.dtype);
  s.define("BM", t.bm).define("BN", t.bn).define("CONSUMERS", t.consumers).define("STAGES", t.stages);
  s.define("GROUP_M", t.group_m).define("OUT_F32", t.out_f32 ? 1 : 0).define("SPLIT_K", t.split_k);
  // The kernel loops over its units either way; PERSISTENT only says whether the grid strides them.
  s.define("PERSISTENT", t.persistent_ctas);
  s.define("EPILOGUE", t.epilogue ? 1 : 0);
  s.define("CLUSTER", t.cluster);
  s.define("PINGPONG", t.pingpong ? 1 : 0);
  s.define("CLUSTER_K", std::max(t.cluster_k, 1));
  s.define("CONSUMER_REGS", wgmma_consumer_registers(t));
  const WgmmaSmemLayout l = wgmma_smem_layout(t.bn);
  s.define("A_SBO", l.a_sbo).define("A_LBO", l.a_lbo).define("A_K16", l.a_k16_step).define("A_M64", l.a_m64_step);
  s.define("B_SBO", l.b_sbo).define("B_LBO", l.b_lbo).define("B_K16", l.b_k16_step);
  s.define("B_BOX_COLS", l.b_box_cols).define("B_SWIZZLE", l.b_swizzle);
  return s.str();
}

std::string gemm_wgmma_reference_source(DType d, bool out_f32) {
  // gemm_tc's reference, with this kernel's tensor maps in place of the workspace pointer.
  return KernelSource("gemm_tc_reference.cuh", "gemm_tc_wgmma reference: naive, double accumulation.")
      .element(d)
      .define("OUT_F32", out_f32 ? 1 : 0)
      .define("TENSOR_MAP_ARGS", 1)
      .str();
}

std::string gemm_wgmma_template_text() { return kernel_files_text({"gemm_wgmma.cuh", "gemm_tc_reference.cuh"}); }

}  // namespace tuner::templates
