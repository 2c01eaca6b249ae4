// The fp32 1x1 conv2d template (conv2d_gemm_simt; shapes with R = S = 1,
// stride 1 and no padding, NHWC input, KRSC filter, NPQK output): such a conv
// is the GEMM Y[N*H*W x K] = X[N*H*W x C] * F[K x C]^T, so the template reuses
// gemm_f32 whole (knobs, constraints, profile, generator) on that GEMM, with
// the filter read transposed (B_TRANS) and conv2d_igemm's kernel arguments
// (CONV_1X1), so conv2d's reference checks it. cp.async is left out (it
// copies B's rows along N; here B is read along K).
#pragma once

#include "templates/gemm_f32.h"
#include "templates/kernel_template.h"

namespace tuner::templates {

class Conv2dGemmF32Template final : public KernelTemplate {
 public:
  std::string name() const override { return "conv2d_gemm_simt"; }
  std::string op() const override { return "conv2d"; }
  std::vector<DType> dtypes() const override { return {DType::kF32}; }
  std::string source_text() const override;
  std::optional<std::string> unsupported(const Workload& w) const override;
  search::ConfigSpace space(const Workload& w, const DeviceLimits& limits) const override;
  search::ConfigSpace reduced_space(const Workload& w, const DeviceLimits& limits) const override;
  costmodel::KernelProfile profile(const search::ConfigSpace& space, const search::Config& c,
                                   const Workload& w) const override;
  KernelInstance instantiate(const search::ConfigSpace& space, const search::Config& c,
                             const Workload& w) const override;

  /// The GEMM a 1x1 conv is: M = N*H*W, N = K, K = C.
  static Workload as_gemm(const Workload& w);

 private:
  GemmF32Template gemm_;
};

}  // namespace tuner::templates
