// Kernel-time estimates: analytic roofline figures by hand, and tuned records
// taking precedence (looked up once per workload).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "search/parallel/op_cost.h"

namespace tuner::parallel {
namespace {

costmodel::GpuSpec gpu() { return *costmodel::find_gpu_spec("h100-sxm"); }

CostParams plain() {
  CostParams p;
  p.matmul_efficiency = 0.70;
  p.matmul_half_dim = 0;  // flat efficiency
  p.attention_efficiency = 0.50;
  p.memory_efficiency = 0.80;
  p.kernel_overhead_s = 0;
  p.tensor_throughput.clear();  // the datasheet peak, whatever the GPU
  return p;
}

TEST(OpCost, AnalyticGemmIsComputeOrMemoryBound) {
  OpCostModel m(gpu(), plain(), {});
  // 8192^3 bf16: 2 * 8192^3 = 1.0995e12 FLOP / (989.4e12 * 0.70) = 1.5876 ms (compute-bound).
  const OpTime big = m.gemm(8192, 8192, 8192, "bf16");
  EXPECT_NEAR(big.seconds, 2.0 * 8192 * 8192 * 8192 / (989.4e12 * 0.70), 1e-9);
  EXPECT_EQ(big.memory_s, 0);
  EXPECT_EQ(source_of(big), "analytic");
  // 1 x 8192 x 8192: 134e6 FLOP is nothing; bytes (8192 + 8192^2 + 8192) * 2 = 134.25 MB
  // / (3350e9 * 0.80) = 50.1 us (memory-bound).
  const OpTime thin = m.gemm(1, 8192, 8192, "bf16");
  EXPECT_NEAR(thin.seconds, (8192.0 + 8192.0 * 8192 + 8192) * 2 / (3350e9 * 0.80), 1e-12);
  // Fused causal attention: 4 b h s^2 d = 4 * 2 * 8 * 1024^2 * 128 FLOP, half of it masked, at 0.50 of peak.
  EXPECT_NEAR(m.attention(2, 8, 1024, 128, "bf16").seconds, 0.5 * 4.0 * 16 * 1024 * 1024 * 128 / (989.4e12 * 0.5),
              1e-12);
  EXPECT_NEAR(m.attention(2, 8, 1024, 128, "bf16", false).seconds, 4.0 * 16 * 1024 * 1024 * 128 / (989.4e12 * 0.5),
              1e-12);
}

TEST(OpCost, GemmEfficiencyFallsAtSmallDimensionsAndKernelsPayALaunchGap) {
  CostParams p = plain();
  p.matmul_half_dim = 128;
  p.kernel_overhead_s = 5e-6;
  OpCostModel m(gpu(), p, {});
  // e = 0.70 * g(m) g(n) g(k), g(x) = x / (x + 128): 4096^3 -> 0.70 * (4096/4224)^3 = 0.6383.
  EXPECT_NEAR(m.gemm_efficiency(4096, 4096, 4096), 0.70 * std::pow(4096.0 / 4224, 3), 1e-12);
  EXPECT_NEAR(m.gemm(4096, 4096, 4096, "bf16").seconds,
              2.0 * 4096 * 4096 * 4096 / (989.4e12 * 0.70 * std::pow(4096.0 / 4224, 3)) + 5e-6, 1e-12);
  // A hidden-1024 GEMM at tp 8 (k = 128) runs at half the efficiency of its k = 12288 sibling, near enough.
  EXPECT_LT(m.gemm_efficiency(4096, 4096, 128), 0.51 * m.gemm_efficiency(4096, 4096, 12288) / 0.99);
  // A memory-bound kernel: bytes at 80% of 3350 GB/s, plus the gap, all of it memory-bound.
  const OpTime mb = m.memory_bound(1e9);
  EXPECT_NEAR(mb.seconds, 1e9 / (3350e9 * 0.8) + 5e-6, 1e-12);
  EXPECT_DOUBLE_EQ(mb.memory_s, mb.seconds);
}

TEST(OpCost, UnfusedAttentionStreamsItsScoresThroughMemory) {
  CostParams p = plain();
  p.attention = AttentionKernel::kUnfused;
  OpCostModel unfused(gpu(), p, {});
  OpCostModel flash(gpu(), plain(), {});
  // b h = 16 heads of s = 2048, d = 128, dropout 0.1: the scores are 16 * 2048^2 = 67.1e6 elements.
  const OpTime u = unfused.attention(2, 8, 2048, 128, "bf16", true, 0.1);
  const double scores = 16.0 * 2048 * 2048;
  // softmax reads and writes them (2 * 2 bytes), dropout reads, writes and masks them (2 + 2 + 1 bytes).
  EXPECT_NEAR(u.memory_s, (scores * 4 + scores * 5) / (3350e9 * 0.8), 1e-12);
  // QK^T and AV are batched GEMMs of 2 * 16 * 2048^2 * 128 FLOP each (24.8 us at 70%), but each also moves
  // 16 * (2048^2 + 2 * 2048 * 128) * 2 bytes (56.3 us at 80% of DRAM): memory-bound, GEMMs all the same.
  const double gemm_bytes = 16.0 * (2048.0 * 2048 + 2 * 2048.0 * 128) * 2;
  EXPECT_NEAR(u.seconds - u.memory_s,
              2 * std::max(2.0 * scores * 128 / (989.4e12 * 0.70), gemm_bytes / (3350e9 * 0.8)), 1e-12);
  EXPECT_GT(u.seconds, 2 * flash.attention(2, 8, 2048, 128, "bf16", true, 0.1).seconds);
  EXPECT_EQ(u.parts, 4);
  EXPECT_EQ(to_string(AttentionKernel::kUnfused), "unfused");
  EXPECT_EQ(attention_kernel_from_string("flash"), AttentionKernel::kFlash);
  EXPECT_FALSE(attention_kernel_from_string("xformers"));
}

TEST(OpCost, TunedRecordsWinAndAreLookedUpOnce) {
  int calls = 0;
  OpCostModel m(gpu(), plain(), [&calls](const OpKey& k) -> std::optional<double> {
    ++calls;
    if (k.op == "gemm" && k.shape == "M=64,N=256,K=256" && k.dtype == "f32") return 2e-6;
    return std::nullopt;
  });
  const OpTime t = m.gemm(64, 256, 256, "f32");
  EXPECT_DOUBLE_EQ(t.seconds, 2e-6);
  EXPECT_EQ(source_of(t), "tuned");
  m.gemm(64, 256, 256, "f32");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(m.tuned_hits(), 1);
  EXPECT_EQ(source_of(m.gemm(64, 256, 512, "f32")), "analytic");
  // Attention asks for its three kernels (two batched GEMMs and a softmax); without all three it stays analytic.
  EXPECT_EQ(source_of(m.attention(1, 2, 64, 32, "f32")), "analytic");
  EXPECT_EQ(m.lookups(), 5);
}

}  // namespace
}  // namespace tuner::parallel
