// The row-wise normalization templates, softmax and layernorm (shape
// rows=..,cols=.., dtypes f32, f16, bf16): knobs, constraints, launch
// geometry, compulsory bytes (their figure of merit is the fraction of DRAM
// bandwidth), cost-model profile and reference check. The CUDA source is
// generated in row_norm_source.h.
//
// Knobs: ROW_THREADS threads per row (whole warps), ROWS_PER_BLOCK, VEC
// elements per global access, ONE_PASS (online softmax / pairwise-merged
// moments, kernels/row_stats.cuh) or two passes, CACHE the row in registers
// (1: fp32, loaded on first use; 2: as elements, every load issued first:
// half the registers for f16/bf16) or re-read it per pass (0).
#pragma once

#include "templates/kernel_template.h"
#include "templates/row_norm_source.h"

namespace tuner::templates {

class RowNormTemplate final : public KernelTemplate {
 public:
  explicit RowNormTemplate(RowOp op) : op_(op) {}
  std::string name() const override { return op_ == RowOp::kSoftmax ? "softmax_rows" : "layernorm_rows"; }
  std::string op() const override { return op_ == RowOp::kSoftmax ? "softmax" : "layernorm"; }
  std::vector<DType> dtypes() const override { return {DType::kF32, DType::kF16, DType::kBF16}; }
  std::string source_text() const override;
  std::optional<std::string> unsupported(const Workload& w) const override;
  search::ConfigSpace space(const Workload& w, const DeviceLimits& limits) const override;
  search::ConfigSpace reduced_space(const Workload& w, const DeviceLimits& limits) const override;
  costmodel::KernelProfile profile(const search::ConfigSpace& space, const search::Config& c,
                                   const Workload& w) const override;
  KernelInstance instantiate(const search::ConfigSpace& space, const search::Config& c,
                             const Workload& w) const override;

  /// The tiling a config stands for on workload w.
  RowTiling tiling(const search::ConfigSpace& space, const search::Config& c, const Workload& w) const;
  /// Max |out - ref| / max |ref| that passes for a dtype.
  static double tolerance(DType d);

 private:
  RowOp op_;
};

}  // namespace tuner::templates
