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
  search::Config c{128, 64, 8, 4, 16, 4, 2, 4, 8, 0, 0, 0};
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

// WARP_N picks the warp tile from the register tile; the constraints name why a config is out.
TEST(GemmF32Template, WarpTilingFragmentAndCpAsyncKnobs) {
  GemmF32Template t;
  auto w = parse_workload("gemm", "M=4096,N=4096,K=4096", "f32");
  auto space = t.space(w, h100_limits());
  auto config = [&](const char* json) { return space.from_json(nlohmann::json::parse(json)); };
  // 128x128, 8x8 per thread: WARP_N 8 is a 4x8-lane warp, tile 32x64; WARP_N 4 an 8x4 one, 64x32;
  // WARP_N 0 is one group for the whole block.
  const auto w8 = config(R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":8,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":8,"FRAG_DB":1,"CP_ASYNC":1})");
  ASSERT_TRUE(space.is_valid(w8)) << space.violation(w8).value_or("");
  GemmTiling g = GemmF32Template::tiling(space, w8);
  EXPECT_EQ(g.warp_n, 8);
  EXPECT_EQ(g.wm(), 32);
  EXPECT_EQ(g.wn(), 64);
  EXPECT_TRUE(g.frag_db);
  EXPECT_TRUE(g.cp_async);
  g = GemmF32Template::tiling(space, config(R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":8,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":4,"FRAG_DB":0,"CP_ASYNC":0})"));
  EXPECT_EQ(g.wm(), 64);
  EXPECT_EQ(g.wn(), 32);
  g = GemmF32Template::tiling(space, config(R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":8,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":0,"FRAG_DB":0,"CP_ASYNC":0})"));
  EXPECT_EQ(g.wm(), 128);
  EXPECT_EQ(g.wn(), 128);
  auto why = [&](const char* json) { return space.violation(config(json)).value_or("valid"); };
  const std::pair<const char*, const char*> refusals[] = {
      // A 32x64 block with 8x8 per thread is one warp: a warp tile equal to it would repeat WARP_N 0.
      {R"({"BM":32,"BN":64,"TM":8,"TN":8,"BK":8,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":8,"FRAG_DB":0,"CP_ASYNC":0})",
       "warp tile"},
      {R"({"BM":64,"BN":64,"TM":4,"TN":4,"BK":16,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":8,"FRAG_DB":1,"CP_ASYNC":0})",
       "FRAG_DB needs TM * TN >= 32"},
      {R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":8,"VEC":4,"STAGES":1,"PAD":4,"GROUP_M":8,"WARP_N":8,"FRAG_DB":0,"CP_ASYNC":1})",
       "CP_ASYNC needs STAGES == 2"},
      {R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":8,"VEC":2,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":8,"FRAG_DB":0,"CP_ASYNC":1})",
       "CP_ASYNC copies 16 bytes"},
  };
  for (const auto& [json, reason] : refusals) EXPECT_NE(why(json).find(reason), std::string::npos) << json;
  DeviceLimits turing = h100_limits();
  turing.arch = "sm_75";
  auto old = t.space(w, turing);
  EXPECT_FALSE(old.is_valid(w8));
  EXPECT_NE(old.violation(w8).value_or("").find("CP_ASYNC needs sm_80"), std::string::npos);
  // The warp tile changes the layout, so the kernel source, and the profile's shared-memory traffic.
  const auto block = config(R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":8,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":0,"FRAG_DB":1,"CP_ASYNC":1})");
  EXPECT_NE(t.instantiate(space, block, w).source, t.instantiate(space, w8, w).source);
  EXPECT_LT(t.profile(space, w8, w).shared_bytes, t.profile(space, block, w).shared_bytes);
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
