// The fp32 SIMT batched GEMM template (batched_gemm_f32_simt; shape
// B=..,M=..,N=..,K=.., packed strided batches: A[b] at A + b*M*K, B[b] at
// B + b*K*N, C[b] at C + b*M*N). It reuses the gemm_f32 template whole: the
// same knobs, constraints and generator (gemm_f32_batched_source adds the
// batch offsets from blockIdx.z); only the grid (batch in z) and the counts
// differ.
#pragma once

#include "templates/gemm_f32.h"
#include "templates/kernel_template.h"

namespace tuner::templates {

class BatchedGemmF32Template final : public KernelTemplate {
 public:
  std::string name() const override { return "batched_gemm_f32_simt"; }
  std::string op() const override { return "batched_gemm"; }
  std::vector<DType> dtypes() const override { return {DType::kF32}; }
  std::string source_text() const override;
  std::optional<std::string> unsupported(const Workload& w) const override;
  search::ConfigSpace space(const Workload& w, const DeviceLimits& limits) const override;
  search::ConfigSpace reduced_space(const Workload& w, const DeviceLimits& limits) const override;
  costmodel::KernelProfile profile(const search::ConfigSpace& space, const search::Config& c,
                                   const Workload& w) const override;
  KernelInstance instantiate(const search::ConfigSpace& space, const search::Config& c,
                             const Workload& w) const override;

 private:
  GemmF32Template gemm_;
};

}  // namespace tuner::templates
