// Kernel-time estimates: analytic roofline figures by hand, and tuned records
// taking precedence (looked up once per workload).
#include <gtest/gtest.h>

#include "search/parallel/op_cost.h"

namespace tuner::parallel {
namespace {

costmodel::GpuSpec gpu() { return *costmodel::find_gpu_spec("h100-sxm"); }

TEST(OpCost, AnalyticGemmIsComputeOrMemoryBound) {
  OpCostModel m(gpu(), {}, {});
  // 8192^3 bf16: 2 * 8192^3 = 1.0995e12 FLOP / (989.4e12 * 0.70) = 1.5876 ms (compute-bound).
  const OpTime big = m.gemm(8192, 8192, 8192, "bf16");
  EXPECT_NEAR(big.seconds, 2.0 * 8192 * 8192 * 8192 / (989.4e12 * 0.70), 1e-9);
  EXPECT_EQ(source_of(big), "analytic");
  // 1 x 8192 x 8192: 134e6 FLOP is nothing; bytes (8192 + 8192^2 + 8192) * 2 = 134.25 MB
  // / (3350e9 * 0.80) = 50.1 us (memory-bound).
  const OpTime thin = m.gemm(1, 8192, 8192, "bf16");
  EXPECT_NEAR(thin.seconds, (8192.0 + 8192.0 * 8192 + 8192) * 2 / (3350e9 * 0.80), 1e-12);
  // Fused attention: 4 * b h s^2 d = 4 * 2 * 8 * 1024^2 * 128 FLOP at 0.50 of peak.
  EXPECT_NEAR(m.attention(2, 8, 1024, 128, "bf16").seconds, 4.0 * 16 * 1024 * 1024 * 128 / (989.4e12 * 0.5), 1e-12);
}

TEST(OpCost, TunedRecordsWinAndAreLookedUpOnce) {
  int calls = 0;
  OpCostModel m(gpu(), {}, [&calls](const OpKey& k) -> std::optional<double> {
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
