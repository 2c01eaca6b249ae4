#include "templates/conv2d_tc_source.h"

#include "templates/kernel_files.h"

namespace tuner::templates {

int conv_tc_threads(const ConvTcTiling& t) { return 32 * (t.bm / t.wm) * (t.bn / t.wn); }
int conv_tc_shared_bytes(const ConvTcTiling& t) { return t.stages * (t.bm + t.bn) * t.bk * 2; }

std::string conv2d_tc_source(const ConvTcTiling& t) {
  KernelSource s("conv2d_tc.cuh", "conv2d_igemm (tensor cores); one tiling.");
  s.element(t.dtype);
  s.define("BM", t.bm).define("BN", t.bn).define("BK", t.bk).define("WM", t.wm).define("WN", t.wn);
  s.define("STAGES", t.stages);
  return s.str();
}

std::string conv2d_tc_template_text() { return kernel_files_text({"conv2d_tc.cuh"}); }

}  // namespace tuner::templates
