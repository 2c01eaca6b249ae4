#include "templates/gemm_tc_source.h"

#include "templates/kernel_files.h"

namespace tuner::templates {

int tc_threads(const TcTiling& t) { return 32 * (t.bm / t.wm) * (t.bn / t.wn); }

size_t tc_shared_bytes(const TcTiling& t) {
  return static_cast<size_t>(t.stages) * static_cast<size_t>(t.bm * t.bk + t.bk * t.bn) * 2;
}

int64_t tc_workspace_floats(int64_t batch, int64_t m, int64_t n) {
  const int64_t outputs = batch * m * n;
  const int64_t partials = outputs <= kTcMaxSplitOutputElements ? kTcMaxSplit * outputs : 0;
  const int64_t counters = batch * ((m + 31) / 32) * ((n + 31) / 32);
  return partials + counters;
}

std::string gemm_tc_source(const TcTiling& t) {
  KernelSource s("gemm_tc.cuh", "gemm_tc: tensor-core GEMM (mma.sync m16n8k16); one tiling.");
  s.element(t.dtype);
  s.define("BM", t.bm).define("BN", t.bn).define("BK", t.bk).define("WM", t.wm).define("WN", t.wn);
  s.define("STAGES", t.stages).define("SPLIT_K", t.split_k).define("GROUP_M", t.group_m);
  s.define("OUT_F32", t.out_f32 ? 1 : 0);
  return s.str();
}

std::string gemm_tc_reference_source(DType d, bool out_f32) {
  return KernelSource("gemm_tc_reference.cuh", "gemm_tc_reference: naive, double accumulation.")
      .element(d)
      .define("OUT_F32", out_f32 ? 1 : 0)
      .str();
}

std::string gemm_tc_template_text() { return kernel_files_text({"gemm_tc.cuh", "gemm_tc_reference.cuh"}); }

}  // namespace tuner::templates
