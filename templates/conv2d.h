// The conv2d forward template (conv2d_igemm_simt; NHWC input, KRSC filter,
// shape N=..,H=..,W=..,C=..,K=..,R=..,S=..,stride=..,pad=..[,dilation=..];
// dtypes f32, f16 and bf16 with fp32 accumulation on CUDA cores): knobs,
// constraints, launch geometry, FLOP/byte counts, cost-model profile and
// reference check. The CUDA source is generated in conv2d_source.h.
//
// Knobs: BM×BN block tile (output pixels × filters), TM×TN register tile, BK
// taps per slab, STAGES (register double buffering).
#pragma once

#include "templates/conv2d_source.h"
#include "templates/kernel_template.h"

namespace tuner::templates {

/// Output height and width of a conv2d workload: (H + 2·pad − dilation·(R−1) − 1) / stride + 1.
int64_t conv_output_p(const Workload& w);
int64_t conv_output_q(const Workload& w);

/// A conv2d workload's dimensions, with its output height P and width Q.
struct ConvDims {
  int64_t n, h, w, c, k, r, s, stride, pad, dilation, p, q;
  int64_t m() const { return n * p * q; }   ///< GEMM-M: output pixels.
  int64_t kg() const { return r * s * c; }  ///< GEMM-K: taps.
};
ConvDims conv_dims(const Workload& w);

/// The instance every conv2d template with conv2d_igemm's arguments starts from: this template's first
/// reduced config for w, which carries the buffers (X, F, Y), the scalars, the reference, its launch and
/// the tolerance; a template replaces the kernel, its launch, profile and counts.
KernelInstance conv2d_contract_instance(const Workload& w);

class Conv2dTemplate final : public KernelTemplate {
 public:
  std::string name() const override { return "conv2d_igemm_simt"; }
  std::string op() const override { return "conv2d"; }
  /// f32 in the registry: f16 and bf16 conv2d go to conv2d_igemm_tc. The generator and the reference
  /// still take every dtype (the tensor-core template reuses the reference and the instance's buffers).
  std::vector<DType> dtypes() const override { return {DType::kF32}; }
  std::string source_text() const override;
  std::optional<std::string> unsupported(const Workload& w) const override;
  search::ConfigSpace space(const Workload& w, const DeviceLimits& limits) const override;
  search::ConfigSpace reduced_space(const Workload& w, const DeviceLimits& limits) const override;
  costmodel::KernelProfile profile(const search::ConfigSpace& space, const search::Config& c,
                                   const Workload& w) const override;
  KernelInstance instantiate(const search::ConfigSpace& space, const search::Config& c,
                             const Workload& w) const override;

  static ConvTiling tiling(const search::ConfigSpace& space, const search::Config& c, DType d);
  static double tolerance(DType d);
};

}  // namespace tuner::templates
