#include "templates/conv2d_wgmma_source.h"

#include <algorithm>

#include "templates/conv2d.h"
#include "templates/gemm_wgmma_source.h"
#include "templates/kernel_files.h"

namespace tuner::templates {

int conv_wgmma_threads(const ConvWgmmaTiling& t) { return 128 * (1 + t.consumers); }

int conv_wgmma_rows_per_consumer(const ConvWgmmaTiling& t) { return t.pingpong ? t.bm : t.bm / t.consumers; }

size_t conv_wgmma_shared_bytes(const ConvWgmmaTiling& t) {
  return static_cast<size_t>(t.stages) * static_cast<size_t>(t.bm + t.bn) * 128 + 1024 +
         static_cast<size_t>(t.consumers) * 4 * kWgmmaEpilogueWarpBytes;
}

int64_t conv_wgmma_unit_count(const ConvWgmmaTiling& t, int64_t n, int64_t p, int64_t q, int64_t k) {
  const int64_t tile_h = t.bm / t.tile_w;
  return n * ((p + tile_h - 1) / tile_h) * ((q + t.tile_w - 1) / t.tile_w) * ((k + t.bn - 1) / t.bn);
}

int64_t conv_wgmma_grid_x(const ConvWgmmaTiling& t, int64_t n, int64_t p, int64_t q, int64_t k) {
  const int64_t units = conv_wgmma_unit_count(t, n, p, q, k);
  return t.persistent_ctas > 0 ? std::max<int64_t>(1, std::min<int64_t>(units, t.persistent_ctas)) : units;
}

std::string conv2d_wgmma_source(const ConvWgmmaTiling& t, const ConvDims& d) {
  KernelSource s("conv2d_wgmma.cuh", "conv2d_igemm_wgmma: Hopper implicit-GEMM conv2d (TMA im2col + wgmma); one tiling.");
  s.element(t.dtype);
  s.define("BM", t.bm).define("BN", t.bn).define("TILE_W", t.tile_w).define("CONSUMERS", t.consumers);
  s.define("STAGES", t.stages).define("PERSISTENT", t.persistent_ctas).define("PINGPONG", t.pingpong ? 1 : 0);
  WgmmaTiling g;  // the consumers' register share is the GEMM's
  g.consumers = t.consumers;
  s.define("CONSUMER_REGS", wgmma_consumer_registers(g)).define("B_K_MAJOR", 1);
  s.define("CONV_N", d.n).define("CONV_H", d.h).define("CONV_W", d.w).define("CONV_C", d.c).define("CONV_K", d.k);
  s.define("CONV_R", d.r).define("CONV_S", d.s).define("CONV_STRIDE", d.stride).define("CONV_PAD", d.pad);
  s.define("CONV_DILATION", d.dilation).define("CONV_P", d.p).define("CONV_Q", d.q);
  return s.str();
}

std::string conv2d_wgmma_reference_source(DType d) {
  return KernelSource("conv2d_reference.cuh", "conv2d_igemm_wgmma reference: direct, double accumulation.")
      .element(d)
      .define("TENSOR_MAP_ARGS", 1)
      .str();
}

std::string conv2d_wgmma_template_text() { return kernel_files_text({"conv2d_wgmma.cuh", "conv2d_reference.cuh"}); }

}  // namespace tuner::templates
