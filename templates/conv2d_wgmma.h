// The Hopper conv2d forward template (conv2d_igemm_wgmma; f16 and bf16,
// NHWC/KRSC/NPQK, any stride up to 8, padding and dilation; C and K multiples
// of 8; sm_90 only): TMA does the im2col, wgmma the products (source and
// contract in conv2d_wgmma_source.h). Knobs, constraints, launch geometry,
// tensor maps, cost-model profile and the reference check (conv2d_reference
// with the tensor maps among its arguments).
//
// Knobs: BM (pixels = tile_h * TILE_W) x BN (filters) block tile, TILE_W
// (output columns of the pixel rectangle), CONSUMERS warpgroups, STAGES ring
// depth, PERSISTENT (0 or the SM count).
#pragma once

#include "templates/conv2d_wgmma_source.h"
#include "templates/kernel_template.h"

namespace tuner::templates {

class Conv2dWgmmaTemplate final : public KernelTemplate {
 public:
  std::string name() const override { return "conv2d_igemm_wgmma"; }
  std::string op() const override { return "conv2d"; }
  std::vector<DType> dtypes() const override { return {DType::kF16, DType::kBF16}; }
  std::string source_text() const override;
  std::optional<std::string> unsupported(const Workload& w) const override;
  std::optional<std::string> unsupported_on(const DeviceLimits& limits) const override;
  search::ConfigSpace space(const Workload& w, const DeviceLimits& limits) const override;
  search::ConfigSpace reduced_space(const Workload& w, const DeviceLimits& limits) const override;
  costmodel::KernelProfile profile(const search::ConfigSpace& space, const search::Config& c,
                                   const Workload& w) const override;
  KernelInstance instantiate(const search::ConfigSpace& space, const search::Config& c,
                             const Workload& w) const override;

  static ConvWgmmaTiling tiling(const search::ConfigSpace& space, const search::Config& c, DType d);
};

}  // namespace tuner::templates
