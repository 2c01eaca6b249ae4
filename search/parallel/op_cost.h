// Compute time of one operator shard on one GPU: a tuned record's measured time
// when the lookup callback has one, else an analytic estimate -- FLOPs /
// (peak x efficiency) for matmuls, bytes / (DRAM bandwidth x efficiency) for
// memory-bound ops, the larger of the two for a GEMM. Every estimate says how
// many of its parts came from tuned records, so a plan shows its sources.
//
// This file knows nothing of SQLite: tuned records arrive through TunedLookup,
// which tools/ wires to the tuning database. It does not decide sharding.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "costmodel/gpu_spec.h"

namespace tuner::parallel {

/// A workload as the tuning database names it: op ("gemm", "batched_gemm", "softmax",
/// "layernorm"), canonical shape ("M=..,N=..,K=.."), dtype ("bf16").
struct OpKey {
  std::string op;
  std::string shape;
  std::string dtype;
};

/// Returns a tuned time in seconds for the workload, or nullopt when none is recorded.
using TunedLookup = std::function<std::optional<double>(const OpKey&)>;

/// Efficiency factors of the analytic estimate (fractions of the datasheet peaks).
struct CostParams {
  double matmul_efficiency = 0.70;     ///< Large GEMMs on tensor cores reach about 70% of dense peak.
  double attention_efficiency = 0.50;  ///< Fused attention (QK^T, softmax, AV) reaches about 50%.
  double memory_efficiency = 0.80;     ///< Streaming kernels reach about 80% of DRAM bandwidth.
};

/// Seconds of an op shard, with how many of its parts (kernels) were tuned records.
struct OpTime {
  double seconds = 0;
  int parts = 0;        ///< Kernels the estimate is made of.
  int tuned_parts = 0;  ///< Of which came from tuned records.
  OpTime& operator+=(const OpTime& o) {
    seconds += o.seconds;
    parts += o.parts;
    tuned_parts += o.tuned_parts;
    return *this;
  }
};

/// "tuned", "analytic" or "mixed" for an estimate.
std::string source_of(const OpTime& t);

class OpCostModel {
 public:
  OpCostModel(costmodel::GpuSpec gpu, CostParams params, TunedLookup lookup);

  /// batch x [m,k] x [k,n]; batch 1 is a "gemm", more a "batched_gemm".
  OpTime gemm(int64_t m, int64_t n, int64_t k, const std::string& dtype, int64_t batch = 1);
  OpTime softmax(int64_t rows, int64_t cols, const std::string& dtype);
  OpTime layernorm(int64_t rows, int64_t cols, const std::string& dtype);
  /// Attention core for `batch` x `heads` heads of length seq and width head_dim: QK^T, softmax, AV.
  OpTime attention(int64_t batch, int64_t heads, int64_t seq, int64_t head_dim, const std::string& dtype);
  /// A kernel that streams `bytes` through DRAM (no tuned record exists for it).
  OpTime memory_bound(double bytes) const;
  /// A matmul-like kernel of `flops` at the matmul efficiency (no tuned record).
  OpTime compute_bound(double flops, const std::string& dtype) const;

  double peak_flops(const std::string& dtype) const;
  const costmodel::GpuSpec& gpu() const { return gpu_; }
  const CostParams& params() const { return params_; }
  int64_t lookups() const { return lookups_; }
  int64_t tuned_hits() const { return hits_; }

 private:
  std::optional<double> tuned(const OpKey& key);

  costmodel::GpuSpec gpu_;
  CostParams params_;
  TunedLookup lookup_;
  std::map<std::string, std::optional<double>> cache_;
  int64_t lookups_ = 0, hits_ = 0;
};

}  // namespace tuner::parallel
