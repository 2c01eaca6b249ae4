// The Hopper GEMM template (gemm_tc_wgmma for `gemm`, batched_gemm_tc_wgmma for
// `batched_gemm`; dtypes f16 and bf16; sm_90 only, compiled for sm_90a): TMA
// bulk tensor copies into a multi-stage shared ring, warp-specialised producer
// and consumer warpgroups, wgmma.mma_async from shared-memory descriptors. The
// CUDA source is generated in gemm_wgmma_source.h.
//
// Knobs: BM x BN block tile (BN is the wgmma n), CONSUMERS warpgroups sharing
// BM, STAGES ring depth (2–6), GROUP_M block rasterization, OUT_F32 (C in
// fp32 rather than the input type), SPLIT_K (1, 2, 4, 8: K splits reduced in
// fp32 through gemm_tc's workspace by the CTA of the last split to finish;
// offered when batch·M·N <= 2^21 and every split has a k-tile), PERSISTENT (0,
// or the device's SM count: a persistent grid of about that many CTAs looping
// over the work units, the ring's phases running on across them). The k-tile is fixed at 64 (the 128-byte
// swizzle span of f16/bf16). N and K must be multiples of 8 (TMA strides are
// multiples of 16 bytes); gemm_tc_mma takes any shape.
#pragma once

#include "templates/gemm_wgmma_source.h"
#include "templates/kernel_template.h"

namespace tuner::templates {

class GemmWgmmaTemplate final : public KernelTemplate {
 public:
  /// batched: the `batched_gemm` op (shape B,M,N,K) rather than `gemm` (M,N,K).
  explicit GemmWgmmaTemplate(bool batched) : batched_(batched) {}
  std::string name() const override { return batched_ ? "batched_gemm_tc_wgmma" : "gemm_tc_wgmma"; }
  std::string op() const override { return batched_ ? "batched_gemm" : "gemm"; }
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
  /// OUT_F32 = 1: C in fp32.
  DType output_dtype(const Workload& w, const std::string& config_json) const override;

  static WgmmaTiling tiling(const search::ConfigSpace& space, const search::Config& c, DType d);

 private:
  /// The mma.sync template of the same op, named where this one cannot run.
  std::string fallback() const { return batched_ ? "batched_gemm_tc_mma" : "gemm_tc_mma"; }
  bool batched_;
};

}  // namespace tuner::templates
