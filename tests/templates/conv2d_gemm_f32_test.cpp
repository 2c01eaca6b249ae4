// The fp32 1x1 conv2d template (conv2d_gemm_simt) without a GPU: which shapes it takes, that it is
// gemm_f32 on the GEMM the conv is (space, profile, launch) with the conv's buffers, arguments and
// reference, and that the transposed filter's slab map (gemm_f32_layout.cuh's A map over BN rows)
// covers each filter-tile element once.
#include "templates/conv2d_gemm_f32.h"

#include <gtest/gtest.h>

#include <set>

#include "templates/conv2d.h"
#include "templates/kernels/gemm_f32_layout.cuh"
#include "templates/registry.h"
#include "template_checks.h"

namespace tuner::templates {
namespace {

TEST(Conv2dGemmF32Template, ContractHoldsOnResNetAndRaggedOneByOnes) {
  Conv2dGemmF32Template t;
  check_template_contract(t, parse_workload("conv2d", "N=32,H=28,W=28,C=512,K=128,R=1,S=1,stride=1,pad=0", "f32"));
  check_template_contract(t, parse_workload("conv2d", "N=3,H=9,W=10,C=17,K=33,R=1,S=1,stride=1,pad=0", "f32"));
}

TEST(Conv2dGemmF32Template, TakesOnlyUnpaddedStrideOneOneByOnesAndNamesTheGeneralTemplate) {
  Conv2dGemmF32Template t;
  for (const char* shape : {"N=1,H=8,W=8,C=16,K=16,R=3,S=3,stride=1,pad=1", "N=1,H=8,W=8,C=16,K=16,R=1,S=1,stride=2,pad=0",
                            "N=1,H=8,W=8,C=16,K=16,R=1,S=1,stride=1,pad=1"}) {
    auto why = t.unsupported(parse_workload("conv2d", shape, "f32"));
    ASSERT_TRUE(why.has_value()) << shape;
    EXPECT_NE(why->find("conv2d_igemm_simt takes any shape"), std::string::npos) << *why;
  }
  EXPECT_EQ(t.unsupported(parse_workload("conv2d", "N=1,H=8,W=8,C=16,K=16,R=1,S=1,stride=1,pad=0,dilation=3", "f32")),
            std::nullopt)
      << "dilation does not matter for a 1x1 filter";
  // Built without a GPU: conv2d_igemm_simt stays the f32 default; this one is chosen by name.
  const auto h100 = h100_test_limits();
  EXPECT_EQ(find_template("conv2d", DType::kF32, &h100).name(), "conv2d_igemm_simt");
  EXPECT_EQ(find_template("conv2d", DType::kF32, &h100, "conv2d_gemm_simt").name(), "conv2d_gemm_simt");
}

TEST(Conv2dGemmF32Template, IsGemmF32OnTheConvsGemmWithTheConvsArguments) {
  Conv2dGemmF32Template t;
  GemmF32Template gemm;
  const auto limits = h100_test_limits();
  const auto w = parse_workload("conv2d", "N=3,H=9,W=10,C=17,K=33,R=1,S=1,stride=1,pad=0", "f32");
  const auto g = Conv2dGemmF32Template::as_gemm(w);
  EXPECT_EQ(g.dim("M"), 270);
  EXPECT_EQ(g.dim("N"), 33);
  EXPECT_EQ(g.dim("K"), 17);
  const auto space = t.space(w, limits);
  const auto gemm_space = gemm.space(g, limits);
  EXPECT_LT(space.size(), gemm_space.size()) << "cp.async left out";
  Conv2dTemplate simt;
  const auto simt_space = simt.reduced_space(w, limits);
  const auto conv = simt.instantiate(simt_space, simt_space.at(0), w);
  int checked = 0;
  for (const auto& c : space.enumerate()) {
    if (checked++ % 997 != 0) continue;  // a spread sample
    EXPECT_EQ(space.value(c, "CP_ASYNC"), 0);
    const auto k = t.instantiate(space, c, w);
    const auto gk = gemm.instantiate(gemm_space, gemm_space.from_json(space.to_json(c)), g);
    EXPECT_EQ(k.kernel_name, "conv2d_gemm_simt");
    EXPECT_EQ(k.launch.grid, gk.launch.grid);
    EXPECT_EQ(k.launch.block, gk.launch.block);
    EXPECT_EQ(k.launch.dynamic_shared_bytes, gk.launch.dynamic_shared_bytes);
    EXPECT_EQ(k.scalar_args, conv.scalar_args) << "conv2d_igemm's arguments, so conv2d's reference checks it";
    ASSERT_EQ(k.buffers.size(), conv.buffers.size());
    for (size_t i = 0; i < k.buffers.size(); ++i) {
      EXPECT_EQ(k.buffers[i].name, conv.buffers[i].name);
      EXPECT_EQ(k.buffers[i].elements, conv.buffers[i].elements);
    }
    EXPECT_EQ(k.reference_source, conv.reference_source);
    EXPECT_NE(k.source.find("#define B_TRANS 1\n"), std::string::npos);
    EXPECT_NE(k.source.find("#define CONV_1X1 1\n"), std::string::npos);
    EXPECT_EQ(nlohmann::json(k.profile), nlohmann::json(gk.profile));
  }
  EXPECT_GT(checked, 10);
}

// load_b / store_b with B_TRANS read the filter tile's BN rows of BK along K with A's vector map: every
// (n, k) of the tile is one vector's element exactly once.
TEST(Conv2dGemmF32Template, TransposedFilterSlabMapCoversTheTileOnce) {
  for (int bn : {16, 32, 64, 128})
    for (int bk : {8, 16, 32, 64})
      for (int vec : {1, 2, 4}) {
        if (bk % vec != 0) continue;
        const F32Layout lay{64, bn, 4, 4, 64, bn, bk, vec};
        std::set<std::pair<int, int>> seen;
        const int vecs = bn * (bk / vec);
        for (int v = 0; v < vecs; ++v)
          for (int e = 0; e < vec; ++e) {
            const int n = f32_a_row(lay, v), k = f32_a_k(lay, v) + e;
            ASSERT_LT(n, bn);
            ASSERT_LT(k, bk);
            EXPECT_TRUE(seen.insert({n, k}).second) << "bn " << bn << " bk " << bk << " vec " << vec;
          }
        EXPECT_EQ(seen.size(), static_cast<size_t>(bn * bk));
        EXPECT_EQ(vecs, bk * (bn / vec)) << "as many vectors as B's own map: kBVecs serves both";
      }
}

}  // namespace
}  // namespace tuner::templates
