#include "costmodel/features.h"

#include <gtest/gtest.h>

#include <cmath>

#include "templates/gemm_f32.h"

namespace tuner::costmodel {
namespace {

struct Candidate {
  std::vector<int64_t> knobs;
  KernelProfile profile;
  std::vector<int64_t> dims;
};

Candidate gemm(const search::Config& c, const std::string& shape) {
  templates::GemmF32Template t;
  auto w = templates::parse_workload("gemm", shape, "f32");
  templates::DeviceLimits limits;
  limits.max_shared_per_block_bytes = 227 * 1024;
  auto space = t.space(w, limits);
  EXPECT_TRUE(space.is_valid(c));
  return {c, t.profile(space, c, w), {w.dim("M"), w.dim("N"), w.dim("K")}};
}

TEST(Features, NamesMatchValuesAndAreFinite) {
  auto h100 = *find_gpu_spec("h100-sxm");
  auto c = gemm({128, 128, 8, 8, 8, 4, 2, 4, 8, 0, 0, 0}, "M=1000,N=1000,K=1000");
  auto f = kernel_features(c.knobs, c.profile, c.dims, 4, h100);
  auto names = feature_names({"BM", "BN", "TM", "TN", "BK", "VEC", "STAGES", "PAD", "GROUP_M", "WARP_N", "FRAG_DB", "CP_ASYNC"}, {"M", "N", "K"});
  ASSERT_EQ(f.size(), names.size());
  for (size_t i = 0; i < f.size(); ++i) EXPECT_TRUE(std::isfinite(f[i])) << names[i];
  EXPECT_FLOAT_EQ(f[0], std::log2(129.0f));  // knob BM=128, log2(v + 1)
  EXPECT_EQ(kernel_features(c.knobs, c.profile, c.dims, 4, h100), f) << "features are a pure function";
}

TEST(Features, SeparateShapesConfigsAndGpus) {
  auto h100 = *find_gpu_spec("h100-sxm");
  auto a100 = *find_gpu_spec("a100-sxm4-80gb");
  auto a = gemm({128, 128, 8, 8, 8, 4, 2, 4, 8, 0, 0, 0}, "M=1000,N=1000,K=1000");
  auto b = gemm({128, 128, 8, 8, 8, 4, 2, 4, 8, 0, 0, 0}, "M=4096,N=64,K=4096");
  auto c = gemm({32, 32, 4, 4, 8, 4, 2, 4, 8, 0, 0, 0}, "M=1000,N=1000,K=1000");
  auto fa = kernel_features(a.knobs, a.profile, a.dims, 4, h100);
  EXPECT_NE(fa, kernel_features(b.knobs, b.profile, b.dims, 4, h100));
  EXPECT_NE(fa, kernel_features(c.knobs, c.profile, c.dims, 4, h100));
  EXPECT_NE(fa, kernel_features(a.knobs, a.profile, a.dims, 4, a100));
  // A tiny tile has lower arithmetic intensity at L2 than a 128x128 tile.
  auto names = feature_names({"BM", "BN", "TM", "TN", "BK", "VEC", "STAGES", "PAD", "GROUP_M", "WARP_N", "FRAG_DB", "CP_ASYNC"}, {"M", "N", "K"});
  const size_t ai = static_cast<size_t>(std::find(names.begin(), names.end(), "arith_intensity_l2") - names.begin());
  EXPECT_GT(fa[ai], kernel_features(c.knobs, c.profile, c.dims, 4, h100)[ai]);
}

}  // namespace
}  // namespace tuner::costmodel
