#include "search/parallel/op_cost.h"

#include <algorithm>

#include "search/parallel/op_graph.h"

namespace tuner::parallel {

std::string to_string(AttentionKernel a) { return a == AttentionKernel::kFlash ? "flash" : "unfused"; }

std::optional<AttentionKernel> attention_kernel_from_string(const std::string& s) {
  if (s == "flash") return AttentionKernel::kFlash;
  if (s == "unfused") return AttentionKernel::kUnfused;
  return std::nullopt;
}

std::string source_of(const OpTime& t) {
  if (t.tuned_parts == 0) return "analytic";
  return t.tuned_parts == t.parts ? "tuned" : "mixed";
}

OpCostModel::OpCostModel(costmodel::GpuSpec gpu, CostParams params, TunedLookup lookup)
    : gpu_(std::move(gpu)), params_(std::move(params)), lookup_(std::move(lookup)) {
  auto it = params_.tensor_throughput.find(gpu_.key);
  if (it != params_.tensor_throughput.end() && it->second > 0) tensor_scale_ = it->second;
}

double OpCostModel::peak_flops(const std::string& dtype) const {
  if (dtype == "f32") return gpu_.peak_fp32_tflops * 1e12;
  if (dtype == "f16") return gpu_.peak_fp16_tflops * 1e12;
  return gpu_.peak_bf16_tflops * 1e12;
}

std::optional<double> OpCostModel::tuned(const OpKey& key) {
  if (!lookup_) return std::nullopt;
  const std::string k = key.op + "|" + key.shape + "|" + key.dtype;
  auto it = cache_.find(k);
  if (it != cache_.end()) return it->second;
  ++lookups_;
  std::optional<double> t = lookup_(key);
  if (t && *t <= 0) t.reset();
  if (t) ++hits_;
  cache_.emplace(k, t);
  return t;
}

double overlapped_comm_s(const CostParams& p, double comm_s, double work_s) {
  return std::max(0.0, comm_s - work_s) + p.overlap_interference * std::min(comm_s, work_s);
}

OpTime OpCostModel::memory_bound(double bytes) const {
  const double t = bytes / (gpu_.dram_bandwidth_gbps * 1e9 * params_.memory_efficiency) + params_.kernel_overhead_s;
  return {t, t, 1, 0};
}

OpTime OpCostModel::compute_bound(double flops, const std::string& dtype) const {
  return {flops / (peak_flops(dtype) * params_.matmul_efficiency * tensor_scale_) + params_.kernel_overhead_s, 0, 1, 0};
}

double OpCostModel::gemm_efficiency(int64_t m, int64_t n, int64_t k) const {
  const double x0 = params_.matmul_half_dim;
  auto g = [x0](int64_t x) { return static_cast<double>(x) / (static_cast<double>(x) + x0); };
  return params_.matmul_efficiency * tensor_scale_ * g(m) * g(n) * g(k);
}

OpTime OpCostModel::gemm(int64_t m, int64_t n, int64_t k, const std::string& dtype, int64_t batch) {
  m = std::max<int64_t>(m, 1), n = std::max<int64_t>(n, 1), k = std::max<int64_t>(k, 1);
  OpKey key;
  key.dtype = dtype;
  if (batch > 1) {
    key.op = "batched_gemm";
    key.shape = "B=" + std::to_string(batch) + ",M=" + std::to_string(m) + ",N=" + std::to_string(n) +
                ",K=" + std::to_string(k);
  } else {
    key.op = "gemm";
    key.shape = "M=" + std::to_string(m) + ",N=" + std::to_string(n) + ",K=" + std::to_string(k);
  }
  if (auto t = tuned(key)) return {*t + params_.kernel_overhead_s, 0, 1, 1};
  const double b = static_cast<double>(batch);
  const double flops = 2.0 * b * m * n * k;
  const double bytes = b * (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n) *
                       dtype_bytes(dtype);
  const double compute = flops / (peak_flops(dtype) * gemm_efficiency(m, n, k)) + params_.kernel_overhead_s;
  return {std::max(compute, memory_bound(bytes).seconds), 0, 1, 0};
}

OpTime OpCostModel::softmax(int64_t rows, int64_t cols, const std::string& dtype) {
  OpKey key{"softmax", "rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols), dtype};
  if (auto t = tuned(key)) return {*t + params_.kernel_overhead_s, *t + params_.kernel_overhead_s, 1, 1};
  return memory_bound(2.0 * rows * cols * dtype_bytes(dtype));
}

OpTime OpCostModel::layernorm(int64_t rows, int64_t cols, const std::string& dtype) {
  OpKey key{"layernorm", "rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols), dtype};
  if (auto t = tuned(key)) return {*t + params_.kernel_overhead_s, *t + params_.kernel_overhead_s, 1, 1};
  return memory_bound(2.0 * rows * cols * dtype_bytes(dtype));
}

OpTime OpCostModel::attention(int64_t batch, int64_t heads, int64_t seq, int64_t head_dim, const std::string& dtype,
                              bool causal, double dropout) {
  const int64_t bh = std::max<int64_t>(batch * heads, 1);
  OpKey qk{"batched_gemm",
           "B=" + std::to_string(bh) + ",M=" + std::to_string(seq) + ",N=" + std::to_string(seq) +
               ",K=" + std::to_string(head_dim),
           dtype};
  OpKey av{"batched_gemm",
           "B=" + std::to_string(bh) + ",M=" + std::to_string(seq) + ",N=" + std::to_string(head_dim) +
               ",K=" + std::to_string(seq),
           dtype};
  OpKey sm{"softmax", "rows=" + std::to_string(bh * seq) + ",cols=" + std::to_string(seq), dtype};
  const double scores = static_cast<double>(bh) * seq * seq;
  // Dropout over the scores: read, write and a one-byte mask per element.
  const double dropout_bytes = dropout > 0 ? scores * (2.0 * dtype_bytes(dtype) + 1) : 0;
  if (params_.attention == AttentionKernel::kUnfused) {
    OpTime t = gemm(seq, seq, head_dim, dtype, bh);
    t += gemm(seq, head_dim, seq, dtype, bh);
    t += softmax(bh * seq, seq, dtype);
    if (dropout_bytes > 0) t += memory_bound(dropout_bytes);
    return t;
  }
  auto t_qk = tuned(qk), t_av = tuned(av), t_sm = tuned(sm);
  if (t_qk && t_av && t_sm)
    return {*t_qk + *t_av + *t_sm + 3 * params_.kernel_overhead_s, *t_sm + params_.kernel_overhead_s, 3, 3};
  // One fused kernel: 4 b h s^2 d FLOPs (half of them skipped under a causal mask) at the attention efficiency.
  const double flops = 4.0 * scores * head_dim * (causal ? 0.5 : 1.0);
  return {flops / (peak_flops(dtype) * params_.attention_efficiency * tensor_scale_) + params_.kernel_overhead_s, 0, 1,
          0};
}

}  // namespace tuner::parallel
