#include "templates/conv2d_source.h"

#include "templates/kernel_files.h"

namespace tuner::templates {

int conv_threads(const ConvTiling& t) { return (t.bm / t.tm) * (t.bn / t.tn); }
int conv_shared_bytes(const ConvTiling& t) { return t.stages * t.bk * (t.bm + t.bn) * 4; }

std::string conv2d_source(const ConvTiling& t) {
  KernelSource s("conv2d.cuh", "conv2d_igemm: implicit-GEMM conv2d (NHWC, KRSC); one tiling.");
  s.element(t.dtype);
  s.define("BM", t.bm).define("BN", t.bn).define("TM", t.tm).define("TN", t.tn).define("BK", t.bk);
  s.define("STAGES", t.stages);
  return s.str();
}

std::string conv2d_reference_source(DType d) {
  return KernelSource("conv2d_reference.cuh", "conv2d_reference: direct, double accumulation.").element(d).str();
}

std::string conv2d_template_text() { return kernel_files_text({"conv2d.cuh", "conv2d_reference.cuh"}); }

}  // namespace tuner::templates
