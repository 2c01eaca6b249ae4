#include "templates/conv2d.h"
#include "templates/conv2d_tc.h"

#include <gtest/gtest.h>

#include "templates/registry.h"
#include "template_checks.h"

namespace tuner::templates {
namespace {

TEST(Conv2dTemplate, ContractHoldsInEveryDtype) {
  Conv2dTemplate t;
  for (const char* dt : {"f32", "f16", "bf16"}) {
    check_template_contract(t, parse_workload("conv2d", "N=2,H=15,W=13,C=6,K=20,R=3,S=3,stride=2,pad=1,dilation=2", dt));
    check_template_contract(t, parse_workload("conv2d", "N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1", dt));
  }
  EXPECT_EQ(find_template("conv2d", DType::kF32).name(), "conv2d_igemm_simt");
  EXPECT_EQ(find_template("conv2d", DType::kF16).name(), "conv2d_igemm_tc");
  EXPECT_EQ(find_template("conv2d", DType::kBF16).name(), "conv2d_igemm_tc");
  Conv2dTcTemplate tc;
  for (const char* dt : {"f16", "bf16"}) {
    check_template_contract(tc, parse_workload("conv2d", "N=2,H=15,W=13,C=6,K=20,R=3,S=3,stride=2,pad=1,dilation=2", dt));
    check_template_contract(tc, parse_workload("conv2d", "N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1", dt));
  }
}

TEST(Conv2dTcTemplate, TensorCoreInstanceSharesTheSimtReferenceAndBuffers) {
  Conv2dTcTemplate t;
  auto w = parse_workload("conv2d", "N=2,H=15,W=13,C=16,K=20,R=3,S=3,stride=2,pad=1,dilation=2", "f16");
  auto space = t.space(w, h100_test_limits());
  search::Config c{64, 64, 32, 32, 32, 3};  // BM BN BK WM WN STAGES
  ASSERT_TRUE(space.is_valid(c)) << *space.violation(c);
  auto k = t.instantiate(space, c, w);
  // GEMM-M = 2*7*6 = 84 -> 2 pixel tiles; K = 20 -> 1 filter tile; 4 warps.
  EXPECT_EQ(k.launch.grid[0], 2u);
  EXPECT_EQ(k.launch.block[0], 128u);
  EXPECT_EQ(k.launch.dynamic_shared_bytes, 3 * (64 + 64) * 32 * 2);
  EXPECT_EQ(k.kernel_name, "conv2d_igemm");
  EXPECT_EQ(k.reference_kernel_name, "conv2d_reference");
  EXPECT_EQ(k.buffers.size(), 3u);
  EXPECT_EQ(k.scalar_args.size(), 12u);
  EXPECT_TRUE(k.profile.tensor_cores);
  EXPECT_EQ(k.profile.vector_width, 8) << "C = 16: 16-byte cp.async chunks of channels";
  EXPECT_DOUBLE_EQ(k.tolerance, 2e-3);
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 84 * 20 * (3 * 3 * 16));
}

TEST(Conv2dTemplate, ImplicitGemmShapeGeometryAndCounts) {
  Conv2dTemplate t;
  // P = (15 + 2 - 2*2 - 1) / 2 + 1 = 7; Q = (13 + 2 - 4 - 1) / 2 + 1 = 6.
  auto w = parse_workload("conv2d", "N=2,H=15,W=13,C=6,K=20,R=3,S=3,stride=2,pad=1,dilation=2", "f32");
  EXPECT_EQ(conv_output_p(w), 7);
  EXPECT_EQ(conv_output_q(w), 6);
  auto space = t.space(w, h100_test_limits());
  search::Config c{64, 32, 4, 2, 8, 2};  // BM BN TM TN BK STAGES
  ASSERT_TRUE(space.is_valid(c)) << *space.violation(c);
  auto k = t.instantiate(space, c, w);
  // GEMM-M = 2*7*6 = 84 -> 2 tiles of 64; GEMM-N = 20 -> 1 tile of 32; threads (64/4)*(32/2) = 256.
  EXPECT_EQ(k.launch.grid[0], 2u);
  EXPECT_EQ(k.launch.block[0], 256u);
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 84 * 20 * (3 * 3 * 6));
  EXPECT_DOUBLE_EQ(k.bytes, 4.0 * (2 * 15 * 13 * 6 + 20 * 54 + 84 * 20));
  EXPECT_EQ(k.buffers[2].elements, 84 * 20);
  EXPECT_EQ(k.scalar_args, (std::vector<int32_t>{2, 15, 13, 6, 20, 3, 3, 2, 1, 2, 7, 6}));
  EXPECT_EQ(k.profile.main_loop_iterations, 7);  // ceil(54 / 8)
  EXPECT_EQ(k.reference_launch.grid[0], 2u);     // ceil(20 / 16)
  EXPECT_EQ(k.reference_launch.grid[1], 6u);     // ceil(84 / 16)
  EXPECT_DOUBLE_EQ(k.tolerance, 1e-4);
  EXPECT_FALSE(space.is_valid({256, 128, 1, 1, 32, 2})) << "32768 threads";
  EXPECT_FALSE(space.is_valid({128, 128, 4, 4, 32, 2})) << "64 KiB of shared memory";
  EXPECT_EQ(k.launch.dynamic_shared_bytes, 2 * 8 * (64 + 32) * 4);
  auto empty = parse_workload("conv2d", "N=1,H=3,W=3,C=1,K=1,R=5,S=5,stride=1,pad=0", "f32");
  EXPECT_TRUE(t.unsupported(empty).has_value()) << "a 5x5 filter on a 3x3 image has no output";
}

}  // namespace
}  // namespace tuner::templates
