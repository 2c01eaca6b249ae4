// The fp32 SIMT GEMM template (C = A·B, row-major, any M, N, K): its knobs,
// constraints, launch geometry, FLOP/byte counts, cost-model profile and
// reference check. The CUDA source itself is generated in gemm_f32_source.h.
//
// Knobs (the seed notes' L, V, S and the usual extras): BM×BN block tile (L),
// TM×TN per-thread register tile (V), BK k-slab (S), VEC global-load width,
// STAGES shared-memory buffers, PAD floats per shared row, GROUP_M block
// rasterization; WARP_N warp tiling (0: the whole block is one thread group, the
// original layout; 4 or 8: one-warp groups of 8x4 or 4x8 lanes), FRAG_DB
// register double-buffered fragments, CP_ASYNC B slabs by cp.async (sm_80+).
#pragma once

#include "templates/gemm_f32_source.h"
#include "templates/kernel_template.h"

namespace tuner::templates {

class GemmF32Template final : public KernelTemplate {
 public:
  std::string name() const override { return "gemm_f32_simt"; }
  std::string op() const override { return "gemm"; }
  std::vector<DType> dtypes() const override { return {DType::kF32}; }
  std::string source_text() const override;
  std::optional<std::string> unsupported(const Workload& w) const override;
  search::ConfigSpace space(const Workload& w, const DeviceLimits& limits) const override;
  search::ConfigSpace reduced_space(const Workload& w, const DeviceLimits& limits) const override;
  costmodel::KernelProfile profile(const search::ConfigSpace& space, const search::Config& c,
                                   const Workload& w) const override;
  KernelInstance instantiate(const search::ConfigSpace& space, const search::Config& c,
                             const Workload& w) const override;

  /// The tiling a config stands for.
  static GemmTiling tiling(const search::ConfigSpace& space, const search::Config& c);
};

}  // namespace tuner::templates
