// The tensor-core conv2d forward template (conv2d_igemm_tc; f16 and bf16,
// NHWC/KRSC/NPQK, any stride, padding and dilation): knobs, constraints,
// launch geometry, counts, cost-model profile (tensor_cores = true) and the
// reference check (conv2d_source.h's reference). Source in conv2d_tc_source.h.
//
// Knobs: BM×BN×BK block tile (pixels × filters × taps), WM×WN warp tile,
// STAGES cp.async pipeline depth.
#pragma once

#include "templates/conv2d_tc_source.h"
#include "templates/kernel_template.h"

namespace tuner::templates {

class Conv2dTcTemplate final : public KernelTemplate {
 public:
  std::string name() const override { return "conv2d_igemm_tc"; }
  std::string op() const override { return "conv2d"; }
  std::vector<DType> dtypes() const override { return {DType::kF16, DType::kBF16}; }
  std::string source_text() const override;
  std::optional<std::string> unsupported(const Workload& w) const override;
  search::ConfigSpace space(const Workload& w, const DeviceLimits& limits) const override;
  search::ConfigSpace reduced_space(const Workload& w, const DeviceLimits& limits) const override;
  costmodel::KernelProfile profile(const search::ConfigSpace& space, const search::Config& c,
                                   const Workload& w) const override;
  KernelInstance instantiate(const search::ConfigSpace& space, const search::Config& c,
                             const Workload& w) const override;

  static ConvTcTiling tiling(const search::ConfigSpace& space, const search::Config& c, DType d);
};

}  // namespace tuner::templates
