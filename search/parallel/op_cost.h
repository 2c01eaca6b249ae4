// Compute time of one operator shard on one GPU: a tuned record's measured time
// when the lookup callback has one, else an analytic estimate -- FLOPs /
// (peak x efficiency) for matmuls, bytes / (DRAM bandwidth x efficiency) for
// memory-bound ops, the larger of the two for a GEMM -- plus a fixed launch
// overhead per kernel. GEMM efficiency is not flat: it falls at small
// dimensions along a calibrated curve, e_max x g(m) g(n) g(k) with
// g(x) = x / (x + x0), so narrow models and high tensor-parallel degrees pay for
// their small matmuls. Attention is either one fused (flash) kernel, which
// skips the masked half of a causal score matrix, or the unfused sequence of
// Megatron-LM before flash attention: QK^T and AV as batched GEMMs, and the
// scale-mask-softmax and dropout over the b h s^2 scores as memory-bound
// kernels. Every estimate says which part of its time is memory-bound and how
// many of its parts came from tuned records, so a plan shows its sources.
//
// The defaults of CostParams are calibrated against published training runs
// (docs/calibration.md, calibration_runs.h).
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

/// How attention cores run.
enum class AttentionKernel {
  kFlash,    ///< One fused kernel (FlashAttention); a causal mask halves its work.
  kUnfused,  ///< QK^T and AV batched GEMMs around memory-bound scale-mask-softmax and dropout (Megatron-LM 2021-22).
};
std::string to_string(AttentionKernel a);
/// "flash" or "unfused"; nullopt otherwise.
std::optional<AttentionKernel> attention_kernel_from_string(const std::string& s);

/// Efficiency factors of the analytic estimate (fractions of the datasheet peaks), calibrated on published runs.
struct CostParams {
  double matmul_efficiency = 0.84;     ///< e_max: the fraction of dense peak a large GEMM reaches.
  double matmul_half_dim = 160;        ///< x0: a GEMM dimension of x0 halves the efficiency (per dimension).
  double attention_efficiency = 0.55;  ///< Fused attention reaches this fraction of peak on the work it does.
  double memory_efficiency = 0.80;     ///< Streaming kernels reach this fraction of DRAM bandwidth.
  double kernel_overhead_s = 8e-6;     ///< Launch gap per kernel (seconds).
  /// Fraction of a collective's time hidden behind compute that still slows that compute: NCCL's kernels hold SMs
  /// and DRAM bandwidth while they run. Charged on the ZeRO-2/3 per-micro-batch collectives, the data-parallel
  /// gradient reduction overlapped with backward and context parallelism's ring K/V exchange (overlapped_comm_s).
  /// A prior, not fitted (the calibration runs barely move it): about the share of an A100's 108 SMs that NCCL's
  /// 16 channels occupy.
  double overlap_interference = 0.15;
  /// Tensor-core throughput a GPU sustains in training, relative to the A100 the efficiencies above were fitted on,
  /// keyed by GpuSpec::key (unlisted GPUs: 1). An A100 holds its datasheet clock under load; an H100 SXM's 989
  /// TFLOP/s (1.83 GHz) is not held at its 700 W cap with every SM busy. Scales matmuls and fused attention, not
  /// memory-bound kernels. Fitted on the H100 runs of docs/calibration.md (with overlap_interference).
  /// The H200 is the H100's chip at the same power: the same factor.
  std::map<std::string, double> tensor_throughput = {{"h100-sxm", 0.80}, {"h200-sxm", 0.80}};
  AttentionKernel attention = AttentionKernel::kFlash;  ///< How attention cores run.
};

/// Seconds a collective of comm_s adds when it runs beside work_s of compute that hides it: the excess the work
/// cannot hide, plus overlap_interference of the hidden part (NCCL's kernels slow the compute they run beside).
/// With interference 1 that is comm_s whole; with 0, only the excess.
double overlapped_comm_s(const CostParams& p, double comm_s, double work_s);

/// Seconds of an op shard, with how many of its parts (kernels) were tuned records.
struct OpTime {
  double seconds = 0;
  double memory_s = 0;  ///< Of which memory-bound kernels (norms, softmax, elementwise, dropout).
  int parts = 0;        ///< Kernels the estimate is made of.
  int tuned_parts = 0;  ///< Of which came from tuned records.
  OpTime& operator+=(const OpTime& o) {
    seconds += o.seconds;
    memory_s += o.memory_s;
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
  /// Attention core for `batch` x `heads` heads of length seq and width head_dim: QK^T, softmax, AV; causal
  /// masks halve a flash kernel's work; dropout > 0 adds a dropout pass over the scores when unfused.
  OpTime attention(int64_t batch, int64_t heads, int64_t seq, int64_t head_dim, const std::string& dtype,
                   bool causal = true, double dropout = 0);
  /// A kernel that streams `bytes` through DRAM (no tuned record exists for it).
  OpTime memory_bound(double bytes) const;
  /// The analytic efficiency of an m x n x k GEMM: e_max g(m) g(n) g(k).
  double gemm_efficiency(int64_t m, int64_t n, int64_t k) const;
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
  double tensor_scale_ = 1;  ///< params_.tensor_throughput of this GPU.
};

}  // namespace tuner::parallel
