// The tensor-core GEMM template (gemm_tc_mma for `gemm`, batched_gemm_tc_mma
// for `batched_gemm`; dtypes f16 and bf16): knobs, constraints, launch
// geometry, FLOP/byte counts, cost-model profile (tensor_cores = true) and
// reference check. The CUDA source is generated in gemm_tc_source.h.
//
// Knobs: BM×BN×BK block tile, WM×WN warp tile (mma.sync m16n8k16 tiles),
// STAGES cp.async pipeline depth (2–5), SPLIT_K (fp32 workspace partials,
// reduced by the last split to arrive; offered when batch·M·N <= 2^21),
// GROUP_M block rasterization, OUT_F32 (C in fp32 rather than the input type).
#pragma once

#include "templates/gemm_tc_source.h"
#include "templates/kernel_template.h"

namespace tuner::templates {

class GemmTcTemplate final : public KernelTemplate {
 public:
  /// batched: the `batched_gemm` op (shape B,M,N,K) rather than `gemm` (M,N,K).
  explicit GemmTcTemplate(bool batched) : batched_(batched) {}
  std::string name() const override { return batched_ ? "batched_gemm_tc_mma" : "gemm_tc_mma"; }
  std::string op() const override { return batched_ ? "batched_gemm" : "gemm"; }
  std::vector<DType> dtypes() const override { return {DType::kF16, DType::kBF16}; }
  std::string source_text() const override;
  std::optional<std::string> unsupported(const Workload& w) const override;
  search::ConfigSpace space(const Workload& w, const DeviceLimits& limits) const override;
  search::ConfigSpace reduced_space(const Workload& w, const DeviceLimits& limits) const override;
  costmodel::KernelProfile profile(const search::ConfigSpace& space, const search::Config& c,
                                   const Workload& w) const override;
  KernelInstance instantiate(const search::ConfigSpace& space, const search::Config& c,
                             const Workload& w) const override;
  /// OUT_F32 = 1: C in fp32.
  DType output_dtype(const Workload& w, const std::string& config_json) const override;

  static TcTiling tiling(const search::ConfigSpace& space, const search::Config& c, DType d);
  /// Max |out - ref| / max |ref| that passes for an operand dtype.
  static double tolerance(DType d);

 private:
  bool batched_;
};

/// The dtype a tensor-core GEMM config writes C in: f32 with OUT_F32 = 1, else the workload's (both templates).
DType gemm_output_dtype(const Workload& w, const std::string& config_json);

/// A GEMM workload's dimensions (batch 1 for the `gemm` op), shared by the tensor-core GEMM templates.
struct GemmDims {
  int64_t batch, m, n, k;
};
GemmDims gemm_dims(const Workload& w, bool batched);

/// Why a tensor-core GEMM template named `name` cannot index a workload: a matrix past 2^31-1
/// elements, more than 2^31-1 blocks of min_tile x min_tile, or M or N past the shared reference
/// kernel's grid; nullopt if it can.
std::optional<std::string> tc_gemm_size_problem(const std::string& name, const GemmDims& d, int min_tile);

/// The constraints every mma.sync warp-tiled template shares (gemm_tc_mma, conv2d_igemm_tc): warp
/// tiles divide block tiles, 64..256 threads, and A and B tiles split evenly into 16-byte chunks.
std::vector<search::Constraint> tc_warp_tile_constraints(const DeviceLimits& limits);

}  // namespace tuner::templates
