#include "templates/gemm_f32.h"

#include <gtest/gtest.h>

#include "templates/registry.h"

namespace tuner::templates {
namespace {

DeviceLimits h100_limits() {
  DeviceLimits l;
  l.arch = "sm_90";
  l.max_shared_per_block_bytes = 227 * 1024;
  return l;
}

TEST(GemmF32Template, EveryValidConfigMeetsTheLimits) {
  GemmF32Template t;
  auto w = parse_workload("gemm", "M=1000,N=1000,K=1000", "f32");
  DeviceLimits small = h100_limits();
  small.max_shared_per_block_bytes = 48 * 1024;
  auto space = t.space(w, small);
  EXPECT_GT(space.size(), 10000u);
  EXPECT_LT(space.size(), space.product_size());
  for (const auto& c : space.enumerate()) {
    auto k = t.instantiate(space, c, w);
    const unsigned threads = k.launch.block[0];
    ASSERT_GE(threads, 32u);
    ASSERT_LE(threads, 1024u);
    ASSERT_LE(k.launch.dynamic_shared_bytes, 48 * 1024);
    const auto tiling = GemmF32Template::tiling(space, c);
    ASSERT_EQ((tiling.bm * tiling.bk) % (static_cast<int>(threads) * tiling.vec), 0);
    ASSERT_EQ((tiling.bk * tiling.bn) % (static_cast<int>(threads) * tiling.vec), 0);
  }
  // A larger shared-memory limit admits more configs.
  EXPECT_GT(t.space(w, h100_limits()).size(), space.size());
}

TEST(GemmF32Template, InstanceGeometryAndCounts) {
  GemmF32Template t;
  auto w = parse_workload("gemm", "M=1000,N=1000,K=1000", "f32");
  auto space = t.space(w, h100_limits());
  search::Config c{128, 64, 8, 4, 16, 4, 2, 4, 8};
  ASSERT_TRUE(space.is_valid(c));
  auto k = t.instantiate(space, c, w);
  // grid: ceil(1000/128) = 8 block-rows x ceil(1000/64) = 16 block-columns = 128 blocks;
  // threads: (128/8) x (64/4) = 16 x 16 = 256.
  EXPECT_EQ(k.launch.grid[0], 128u);
  EXPECT_EQ(k.launch.block[0], 256u);
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 1000 * 1000 * 1000);
  EXPECT_DOUBLE_EQ(k.bytes, 4.0 * 3 * 1000 * 1000);
  EXPECT_EQ(k.scalar_args, (std::vector<int32_t>{1000, 1000, 1000}));
  ASSERT_EQ(k.buffers.size(), 3u);
  EXPECT_TRUE(k.buffers[2].output);
  EXPECT_EQ(k.buffers[0].elements, 1000 * 1000);
  // reference: 16x16 blocks over N (x) and M (y): ceil(1000/16) = 63.
  EXPECT_EQ(k.reference_launch.grid[0], 63u);
  EXPECT_EQ(k.reference_launch.grid[1], 63u);
  EXPECT_EQ(k.profile.blocks, 128);
  EXPECT_EQ(k.profile.main_loop_iterations, 63);  // ceil(1000 / 16)
  EXPECT_EQ(k.profile.vector_width, 4);           // K and N are multiples of 4
  auto odd = parse_workload("gemm", "M=1000,N=1001,K=999", "f32");
  EXPECT_EQ(t.instantiate(t.space(odd, h100_limits()), c, odd).profile.vector_width, 1);
}

TEST(GemmF32Template, ReducedSpaceIsSmallAndCoversEveryKnobValue) {
  GemmF32Template t;
  auto w = parse_workload("gemm", "M=1000,N=1000,K=1000", "f32");
  auto reduced = t.reduced_space(w, h100_limits());
  EXPECT_GE(reduced.size(), 8u);
  EXPECT_LE(reduced.size(), 64u);
  auto configs = reduced.enumerate();
  for (size_t k = 0; k < reduced.knobs().size(); ++k) {
    for (int64_t v : reduced.knobs()[k].values) {
      bool seen = false;
      for (const auto& c : configs) seen = seen || c[k] == v;
      EXPECT_TRUE(seen) << reduced.knobs()[k].name << "=" << v;
    }
  }
  auto full = t.space(w, h100_limits());
  for (const auto& c : configs) EXPECT_TRUE(full.is_valid(c));
}

TEST(TemplateRegistry, FindsGemmF32AndNamesWhatExists) {
  EXPECT_EQ(find_template("gemm", DType::kF32).name(), "gemm_f32_simt");
  try {
    find_template("conv3d", DType::kF32);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gemm (f32|f16|bf16)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tuner::templates
