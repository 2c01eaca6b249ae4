#include "templates/gemm_tc.h"

#include <gtest/gtest.h>

#include "templates/batched_gemm_f32.h"
#include "templates/kernel_files.h"
#include "templates/registry.h"
#include "template_checks.h"

namespace tuner::templates {
namespace {

TEST(GemmTcTemplate, ContractHoldsForGemmAndBatchedInBothDtypes) {
  for (bool batched : {false, true}) {
    GemmTcTemplate t(batched);
    for (const char* dt : {"f16", "bf16"}) {
      const char* odd = batched ? "B=3,M=200,N=136,K=300" : "M=200,N=136,K=300";
      const char* big = batched ? "B=16,M=512,N=512,K=64" : "M=8192,N=8192,K=8192";
      check_template_contract(t, parse_workload(t.op(), odd, dt), 16);
      check_template_contract(t, parse_workload(t.op(), big, dt), 16);
    }
  }
  check_template_contract(BatchedGemmF32Template(), parse_workload("batched_gemm", "B=3,M=200,N=136,K=300", "f32"));
}

TEST(GemmTcTemplate, RegisteredForF16AndBf16) {
  EXPECT_EQ(find_template("gemm", DType::kF16).name(), "gemm_tc_mma");
  EXPECT_EQ(find_template("gemm", DType::kBF16).name(), "gemm_tc_mma");
  EXPECT_EQ(find_template("gemm", DType::kF32).name(), "gemm_f32_simt");
  EXPECT_EQ(find_template("batched_gemm", DType::kF32).name(), "batched_gemm_f32_simt");
  EXPECT_EQ(find_template("batched_gemm", DType::kBF16).name(), "batched_gemm_tc_mma");
}

TEST(GemmTcTemplate, GeometryWorkspaceAndTensorCoreProfile) {
  GemmTcTemplate t(true);
  auto w = parse_workload("batched_gemm", "B=3,M=200,N=136,K=300", "bf16");
  auto space = t.space(w, h100_test_limits());
  // BM BN BK WM WN STAGES SPLIT_K GROUP_M OUT_F32
  search::Config c{128, 64, 32, 64, 32, 3, 2, 8, 1};
  ASSERT_TRUE(space.is_valid(c)) << *space.violation(c);
  auto k = t.instantiate(space, c, w);
  // ceil(200/128) = 2 block-rows x ceil(136/64) = 3 block-columns; z = 3 batches x 2 splits.
  EXPECT_EQ(k.launch.grid[0], 6u);
  EXPECT_EQ(k.launch.grid[2], 6u);
  EXPECT_EQ(k.launch.block[0], 32u * 2 * 2);
  EXPECT_EQ(k.launch.dynamic_shared_bytes, 3 * (128 * 32 + 32 * 64) * 2);
  ASSERT_EQ(k.buffers.size(), 4u);
  EXPECT_EQ(k.buffers[2].dtype, DType::kF32) << "OUT_F32";
  EXPECT_TRUE(k.buffers[3].workspace);
  // 8 partial outputs of 3*200*136 floats, then one counter per 32x32 tile: 3 * 7 * 5.
  EXPECT_EQ(k.buffers[3].elements, 8 * 3 * 200 * 136 + 3 * 7 * 5);
  EXPECT_TRUE(k.profile.tensor_cores);
  EXPECT_EQ(k.profile.vector_width, 1) << "K = 300 is not a multiple of 8: the guarded path";
  EXPECT_EQ(k.profile.main_loop_iterations, 5);  // ceil(300/32) = 10 k-tiles over 2 splits
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 3 * 200 * 136 * 300);
  EXPECT_DOUBLE_EQ(k.bytes, 2.0 * 3 * (200 * 300 + 300 * 136) + 4.0 * 3 * 200 * 136);
  EXPECT_EQ(k.reference_launch.grid[2], 3u);
  EXPECT_DOUBLE_EQ(k.tolerance, 1e-2);
  EXPECT_DOUBLE_EQ(GemmTcTemplate::tolerance(DType::kF16), 2e-3);
}

TEST(GemmTcTemplate, SplitKOnlyForSmallOutputsAndBoundedByK) {
  GemmTcTemplate t(false);
  auto big = parse_workload("gemm", "M=4096,N=4096,K=4096", "f16");
  auto space = t.space(big, h100_test_limits());
  EXPECT_FALSE(space.is_valid({128, 128, 32, 64, 64, 4, 2, 8, 0})) << "4096^2 outputs: no workspace for split-K";
  EXPECT_TRUE(space.is_valid({128, 128, 32, 64, 64, 4, 1, 8, 0}));
  auto decode = parse_workload("gemm", "M=16,N=4096,K=4096", "f16");
  EXPECT_TRUE(t.space(decode, h100_test_limits()).is_valid({32, 64, 64, 16, 32, 4, 8, 1, 0}));
  auto shallow = parse_workload("gemm", "M=16,N=4096,K=40", "f16");
  EXPECT_FALSE(t.space(shallow, h100_test_limits()).is_valid({32, 64, 64, 16, 32, 4, 8, 1, 0}))
      << "8 splits of 3 k16-steps";
  EXPECT_TRUE(t.unsupported(parse_workload("gemm", "M=100000,N=100000,K=8", "f16")).has_value());
  // Too much shared memory for the A100 (163 KiB): 5 x (256x64 + 64x256) x 2 bytes = 320 KiB.
  EXPECT_FALSE(space.is_valid({256, 256, 64, 64, 64, 5, 1, 8, 0}));
}

TEST(BatchedGemmF32Template, ReusesTheGemmGeneratorWithTheBatchInZ) {
  BatchedGemmF32Template t;
  auto w = parse_workload("batched_gemm", "B=5,M=100,N=70,K=33", "f32");
  auto space = t.space(w, h100_test_limits());
  search::Config c{64, 64, 4, 4, 16, 4, 2, 4, 8, 0, 0, 0};
  ASSERT_TRUE(space.is_valid(c));
  auto k = t.instantiate(space, c, w);
  EXPECT_EQ(k.kernel_name, "gemm_f32_batched");
  EXPECT_EQ(k.launch.grid[0], 4u);  // 2 x 2 tiles per batch
  EXPECT_EQ(k.launch.grid[2], 5u);
  EXPECT_EQ(k.buffers[0].elements, 5 * 100 * 33);
  EXPECT_NE(k.source.find("#define BATCHED 1\n"), std::string::npos);
  EXPECT_NE(expand_kernel_files(k.source).find("A += static_cast<size_t>(blockIdx.z) * M * K;"), std::string::npos);
  EXPECT_NE(expand_kernel_files(k.reference_source).find("#define GEMM_F32_REFERENCE gemm_f32_batched_reference"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(k.flops, 5 * 2.0 * 100 * 70 * 33);
  EXPECT_EQ(k.profile.blocks, 20);
}

}  // namespace
}  // namespace tuner::templates
