// The few-channel conv2d (conv2d_patch_tc) without a GPU: its contract on the stem and ragged shapes,
// what it refuses, its shared-memory regions, and the whole computation emulated on the CPU with the
// kernel's own layout (conv_patch_layout.cuh): per block and pixel tile, the patch copied from the
// input, the im2col tile built from it through the tap offsets, the product with the filter tile and
// the guarded stores, against a direct convolution.
#include "templates/conv2d_patch_tc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "templates/conv2d.h"
#include "templates/kernels/conv_patch_layout.cuh"
#include "templates/registry.h"
#include "template_checks.h"

namespace tuner::templates {
namespace {

constexpr const char* kStem = "N=32,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3";

TEST(Conv2dPatchTcTemplate, ContractHoldsOnTheStemAndRaggedShapes) {
  Conv2dPatchTcTemplate t;
  for (const char* dt : {"f16", "bf16"}) {
    check_template_contract(t, parse_workload("conv2d", kStem, dt), 16);
    check_template_contract(t, parse_workload("conv2d", "N=2,H=15,W=13,C=6,K=20,R=3,S=3,stride=2,pad=1,dilation=2", dt), 16);
    check_template_contract(t, parse_workload("conv2d", "N=3,H=40,W=37,C=1,K=40,R=5,S=5,stride=1,pad=2", dt), 16);
  }
}

TEST(Conv2dPatchTcTemplate, TakesOnlyFewChannelsAndNamesTheAlternatives) {
  Conv2dPatchTcTemplate t;
  auto eight = t.unsupported(parse_workload("conv2d", "N=1,H=16,W=16,C=8,K=16,R=3,S=3,stride=1,pad=1", "f16"));
  ASSERT_TRUE(eight.has_value());
  EXPECT_NE(eight->find("C=8"), std::string::npos) << *eight;
  EXPECT_NE(eight->find("conv2d_igemm_tc"), std::string::npos) << *eight;
  auto wide = t.unsupported(parse_workload("conv2d", "N=1,H=32,W=32,C=7,K=16,R=7,S=7,stride=1,pad=3", "f16"));
  ASSERT_TRUE(wide.has_value()) << "343 taps";
  EXPECT_NE(wide->find("343"), std::string::npos) << *wide;
  EXPECT_EQ(t.unsupported(parse_workload("conv2d", "N=1,H=32,W=32,C=5,K=16,R=7,S=7,stride=1,pad=3", "f16")), std::nullopt)
      << "245 taps";
  // Registered for f16 and bf16 conv2d: `tune --template auto` measures it beside the general ones on the stem.
  std::vector<std::string> names;
  for (const auto* tt : templates_for("conv2d", DType::kF16, h100_test_limits())) names.push_back(tt->name());
  EXPECT_NE(std::find(names.begin(), names.end(), "conv2d_patch_tc"), names.end());
}

TEST(Conv2dPatchTcTemplate, SharedRegionsHoldWhatTheKernelTouches) {
  Conv2dPatchTcTemplate t;
  const auto w = parse_workload("conv2d", kStem, "f16");
  const auto space = t.space(w, h100_test_limits());
  ASSERT_GT(space.size(), 100u);
  for (const auto& c : space.enumerate()) {
    const ConvPatchTiling tl = Conv2dPatchTcTemplate::tiling(space, c, w.dtype);
    const ConvPatchGeom g = conv_patch_geom(32, 224, 224, 3, 64, 7, 7, 2, 3, 1, 112, 112, tl.tp, tl.tq, tl.bn);
    const ConvPatchSmem L = conv_patch_smem(g);
    ASSERT_EQ(g.kg, 147);
    ASSERT_EQ(g.kp, 160);
    EXPECT_EQ(g.lda * 2 / 16 % 2, 1) << "an odd number of 16-byte chunks per row";
    EXPECT_EQ(L.b - L.a, tl.tp * tl.tq * g.lda * 2);
    EXPECT_EQ(L.koff - L.b, tl.bn * g.lda * 2);
    EXPECT_EQ(L.koff % 16, 0);
    EXPECT_EQ(L.patch - L.koff, g.kp * 4);
    // The farthest element an im2col gather reads (the last pixel's last tap) is inside the patch.
    const int last = conv_patch_pixel_base(g, tl.tp * tl.tq - 1, tl.tq) + conv_patch_koff(g, g.kg - 1);
    EXPECT_EQ(last, g.ph * g.pw * g.c - 1);
    EXPECT_GE(L.bytes - L.patch, g.ph * g.pw * g.c * 2);
    EXPECT_EQ(L.bytes, Conv2dPatchTcTemplate::shared_bytes(tl, w));
    // Prefetching threads hold the whole patch between them (else the kernel falls back to loading it).
    if (tl.prefetch) {
      EXPECT_GE(Conv2dPatchTcTemplate::patch_regs(tl, w) * Conv2dPatchTcTemplate::threads(tl), g.ph * g.pw * g.c);
      EXPECT_NE(t.instantiate(space, c, w).source.find("#define PATCH_REGS " +
                                                       std::to_string(Conv2dPatchTcTemplate::patch_regs(tl, w))),
                std::string::npos);
    }
  }
}

// The GPU found the reduced space of a one-channel, nine-filter conv empty (the filter-tile rule): the
// smallest tile (4 x 8 pixels x 16 filters, one warp) is offered to every workload, full and reduced.
TEST(Conv2dPatchTcTemplate, TinyOutputsStillHaveConfigs) {
  Conv2dPatchTcTemplate t;
  for (const char* shape : {"N=3,H=9,W=10,C=1,K=9,R=5,S=3,stride=3,pad=2", "N=1,H=1,W=1,C=3,K=8,R=1,S=1,stride=1,pad=0",
                            "N=1,H=7,W=7,C=3,K=1,R=7,S=7,stride=1,pad=0"}) {
    const auto w = parse_workload("conv2d", shape, "f16");
    ASSERT_EQ(t.unsupported(w), std::nullopt) << shape;
    EXPECT_GT(t.reduced_space(w, h100_test_limits()).size(), 0u) << shape;
    EXPECT_TRUE(t.space(w, h100_test_limits()).is_valid(search::Config{4, 8, 16, 32, 16, 0, 0, 1})) << shape;
  }
}

// The kernel's computation on the CPU with small integers (exact in double), through the layout
// functions the kernel calls: every output is stored once and equals the direct convolution.
TEST(Conv2dPatchTcTemplate, EmulatedPatchAndIm2colComputeTheConvolution) {
  Conv2dPatchTcTemplate t;
  struct Case {
    const char* shape;
    search::Config config;  // TP, TQ, BN, WM, WN, PERSISTENT, PREFETCH, MIN_BLOCKS
  };
  const std::vector<Case> cases = {
      {"N=2,H=23,W=29,C=3,K=20,R=7,S=7,stride=2,pad=3", {4, 8, 32, 32, 16, 0, 0, 1}},
      {"N=2,H=23,W=29,C=3,K=20,R=7,S=7,stride=2,pad=3", {8, 16, 16, 32, 16, 132, 0, 1}},
      {"N=1,H=15,W=13,C=6,K=40,R=3,S=3,stride=2,pad=1,dilation=2", {4, 8, 32, 32, 16, 264, 0, 1}},
      {"N=2,H=23,W=29,C=3,K=20,R=7,S=7,stride=2,pad=3", {8, 8, 32, 16, 16, 264, 1, 2}},
      {"N=3,H=9,W=10,C=1,K=9,R=5,S=3,stride=3,pad=2", {4, 8, 16, 16, 16, 0, 0, 1}},
      {"N=1,H=20,W=7,C=5,K=24,R=1,S=1,stride=1,pad=0", {16, 8, 16, 64, 16, 132, 0, 1}},
      // Padding wider than the filter: whole patch rows and columns (and the tile's first pixels) are padding.
      {"N=2,H=6,W=5,C=3,K=8,R=1,S=1,stride=1,pad=2", {4, 8, 16, 32, 16, 0, 0, 1}},
      {"N=1,H=7,W=9,C=2,K=16,R=3,S=3,stride=2,pad=4", {4, 8, 16, 16, 16, 132, 1, 1}},
  };
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> small(-3, 3);
  for (const auto& ec : cases) {
    const auto w = parse_workload("conv2d", ec.shape, "f16");
    ASSERT_EQ(t.unsupported(w), std::nullopt) << ec.shape;
    const auto space = t.space(w, h100_test_limits());
    ASSERT_TRUE(space.is_valid(ec.config)) << ec.shape << ": " << *space.violation(ec.config);
    const auto k = t.instantiate(space, ec.config, w);
    const ConvPatchTiling tl = Conv2dPatchTcTemplate::tiling(space, ec.config, w.dtype);
    const auto& a = k.scalar_args;  // N, H, W, C, K, R, S, stride, pad, dilation, P, Q
    ASSERT_EQ(a.size(), 12u);
    const int N = a[0], H = a[1], W = a[2], C = a[3], K = a[4], stride = a[7], pad = a[8], P = a[10], Q = a[11];
    const ConvPatchGeom g = conv_patch_geom(N, H, W, C, K, a[5], a[6], stride, pad, a[9], P, Q, tl.tp, tl.tq, tl.bn);
    ASSERT_EQ(k.launch.grid[1], static_cast<unsigned>(g.tiles_k));
    ASSERT_EQ(k.launch.dynamic_shared_bytes, conv_patch_smem(g).bytes);
    // The filter's shape is compiled in (the kernel traps on a launch with another).
    for (const std::string& def : {"#define CONV_C " + std::to_string(C), "#define CONV_R " + std::to_string(a[5]),
                                  "#define CONV_S " + std::to_string(a[6]), "#define CONV_STRIDE " + std::to_string(stride),
                                  "#define CONV_DILATION " + std::to_string(a[9])})
      EXPECT_NE(k.source.find(def + "\n"), std::string::npos) << def;
    std::vector<double> x(static_cast<size_t>(N) * H * W * C), f(static_cast<size_t>(K) * g.kg);
    for (auto& v : x) v = small(rng);
    for (auto& v : f) v = small(rng);

    const int bm = tl.tp * tl.tq, tiles = g.n * g.tiles_p * g.tiles_q;
    std::vector<double> y(static_cast<size_t>(N) * P * Q * K, 0.0);
    std::vector<int> stores(y.size(), 0);
    for (unsigned by = 0; by < k.launch.grid[1]; ++by) {
      const int col0 = static_cast<int>(by) * tl.bn;
      std::vector<double> bs(static_cast<size_t>(tl.bn) * g.kp, 0.0);  // B [bn][kp]
      for (int n = 0; n < tl.bn; ++n)
        for (int kk = 0; kk < g.kg; ++kk)
          if (col0 + n < K) bs[static_cast<size_t>(n) * g.kp + kk] = f[static_cast<size_t>(col0 + n) * g.kg + kk];
      for (unsigned bx = 0; bx < k.launch.grid[0]; ++bx)
        for (int tile = static_cast<int>(bx); tile < tiles; tile += static_cast<int>(k.launch.grid[0])) {
          // The patch as the kernel copies it: its source and padding test are the kernel's own.
          const ConvPatchSrc src = conv_patch_src(g, tile);
          const int img = src.img, p0 = src.p0, q0 = src.q0;
          std::vector<double> patch(static_cast<size_t>(g.ph) * g.pw * C, 0.0);
          for (int ph = 0; ph < g.ph; ++ph)
            for (int j = 0; j < g.pw * C; ++j) {
              if (!conv_patch_inside(g, src, ph, j)) continue;
              const size_t at = static_cast<size_t>(img * H + src.h0 + ph) * W * C + static_cast<size_t>(src.w0 * C + j);
              ASSERT_LT(at, x.size()) << ec.shape;
              patch[static_cast<size_t>(ph) * g.pw * C + j] = x[at];
            }
          for (int m = 0; m < bm; ++m) {
            const int pb = conv_patch_pixel_base(g, m, tl.tq);
            const int p = p0 + m / tl.tq, q = q0 + m % tl.tq;
            for (int n = 0; n < tl.bn; ++n) {
              double acc = 0;
              for (int kk = 0; kk < g.kg; ++kk)
                acc += patch.at(static_cast<size_t>(pb + conv_patch_koff(g, kk))) * bs[static_cast<size_t>(n) * g.kp + kk];
              if (p >= P || q >= Q || col0 + n >= K) continue;
              const size_t o = (static_cast<size_t>(img * P + p) * Q + q) * K + col0 + n;
              y[o] = acc;
              ++stores[o];
            }
          }
        }
    }
    const std::vector<double> ref = direct_conv(w, x, f);
    for (size_t o = 0; o < y.size(); ++o) {
      ASSERT_EQ(stores[o], 1) << ec.shape << " output " << o << " stored " << stores[o] << " times";
      ASSERT_EQ(y[o], ref[o]) << ec.shape << " output " << o;
    }
  }
}

}  // namespace
}  // namespace tuner::templates
