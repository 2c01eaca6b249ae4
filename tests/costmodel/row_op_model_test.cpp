#include "costmodel/row_op_model.h"

#include <cmath>

#include <gtest/gtest.h>

#include "templates/row_norm.h"

namespace tuner::costmodel {
namespace {

const GpuSpec& row_op_h100() {
  static const GpuSpec g = *find_gpu_spec("h100-sxm");
  return g;
}

struct Row {
  int rt, rpb, vec, one_pass, cache;
};

KernelProfile row_profile(const Row& r, const std::string& shape = "rows=4096,cols=4096",
                          const std::string& dtype = "f16", templates::RowOp op = templates::RowOp::kSoftmax) {
  templates::RowNormTemplate tmpl(op);
  const auto w = templates::parse_workload(tmpl.op(), shape, dtype);
  const auto space = tmpl.space(w, templates::DeviceLimits{});
  search::Config c{r.rt, r.rpb, r.vec, r.one_pass, r.cache};
  if (op == templates::RowOp::kLayernorm) c.push_back(1);  // MIN_BLOCKS: the compiler's own choice
  EXPECT_TRUE(space.is_valid(c)) << space.violation(c).value_or("");
  return tmpl.profile(space, c, w);
}

TEST(RowOpModel, TheTemplateFillsTheRowShape) {
  const auto p = row_profile({128, 4, 8, 1, 0});
  ASSERT_TRUE(is_row_op(p));
  EXPECT_EQ(p.row.rows, 4096);
  EXPECT_EQ(p.row.cols, 4096);
  EXPECT_EQ(p.row.elem_bytes, 2);
  EXPECT_EQ(p.row.row_threads, 128);
  EXPECT_EQ(p.row.rows_per_block, 4);
  EXPECT_EQ(p.row.vec, 8);
  EXPECT_TRUE(p.row.one_pass);
  EXPECT_FALSE(p.row.cache);
  EXPECT_FALSE(p.row.layernorm);
  // It survives the JSON trip to the measurement worker.
  const KernelProfile back = nlohmann::json(p).get<KernelProfile>();
  EXPECT_EQ(back.row.rows_per_block, 4);
  EXPECT_TRUE(back.row.one_pass);
  // A GEMM-like profile is not a row op.
  EXPECT_FALSE(is_row_op(KernelProfile{}));
}

TEST(RowOpModel, TinySharedMemoryGetsTheSmallestCarveout) {
  // 64 threads, 20 bytes of static shared memory: 8 KB carveout / (20 + 1024 reserved) = 7 blocks,
  // though threads (32) and block slots (32) would allow 32.
  const auto p = row_profile({64, 1, 8, 0, 0});
  const auto o = row_op_occupancy(p, {32, 20, 0}, row_op_h100());
  EXPECT_EQ(o.blocks_per_sm, 7);
  EXPECT_EQ(o.limiter, "shared memory carveout");
  // No shared memory at all: no carveout limit.
  EXPECT_EQ(row_op_occupancy(p, {32, 0, 0}, row_op_h100()).blocks_per_sm, 32);
  // The generic occupancy (GEMMs) is unchanged.
  EXPECT_EQ(occupancy(p, {32, 20, 0}, row_op_h100()).blocks_per_sm, 32);
}

TEST(RowOpModel, OneRowPerSmallBlockIsSlowerThanFour) {
  // The recording's strongest effect: at 64 threads per row, 1 row per block leaves 14 warps per SM.
  const KernelResources res{32, 20, 0};
  const auto one = estimate(row_profile({64, 1, 8, 0, 0}), res, row_op_h100());
  const auto four = estimate(row_profile({64, 4, 8, 0, 0}), {32, 80, 0}, row_op_h100());
  ASSERT_TRUE(one.launchable && four.launchable);
  EXPECT_GT(one.time_ms, 1.3 * four.time_ms);
}

TEST(RowOpModel, WideVectorsAndFewerPassesAreFaster) {
  const KernelResources res{32, 144, 0};
  const double v1 = estimate(row_profile({128, 4, 1, 0, 0}), res, row_op_h100()).time_ms;
  const double v8 = estimate(row_profile({128, 4, 8, 0, 0}), res, row_op_h100()).time_ms;
  EXPECT_GT(v1, v8);
  // A row too big for L2 to hold across passes: a two-pass re-read costs DRAM traffic, one pass less.
  const auto two = estimate(row_profile({256, 1, 4, 0, 0}, "rows=16384,cols=16384", "f32"), {32, 68, 0}, row_op_h100());
  const auto one = estimate(row_profile({256, 1, 4, 1, 0}, "rows=16384,cols=16384", "f32"), {32, 68, 0}, row_op_h100());
  EXPECT_GT(two.dram_ms, one.dram_ms);
}

TEST(RowOpModel, CrossWarpOnlineMergesMakeHugeRowGroupsSlow) {
  // 1024 threads per row: every thread merges 32 (max, sum) pairs with two exps each.
  const KernelResources res{32, 260, 0};
  const double one_pass = estimate(row_profile({1024, 1, 4, 1, 0}), res, row_op_h100()).time_ms;
  const double two_pass = estimate(row_profile({1024, 1, 4, 0, 0}), res, row_op_h100()).time_ms;
  const double small = estimate(row_profile({256, 2, 8, 1, 0}), {32, 136, 0}, row_op_h100()).time_ms;
  EXPECT_GT(one_pass, two_pass);
  EXPECT_GT(two_pass, small);
}

TEST(RowOpModel, APrefetchedCachedRowWaitsOneRoundTrip) {
  // 32768 f16 columns over 512 threads: 8 vectors per thread. CACHE 1 waits for each in turn, CACHE 2
  // (same registers assumed, to isolate the effect) issues all 8 loads first.
  const KernelResources res{64, 260, 0};
  const auto p1 = row_profile({512, 1, 8, 1, 1}, "rows=4096,cols=32768");
  const auto p2 = row_profile({512, 1, 8, 1, 2}, "rows=4096,cols=32768");
  EXPECT_FALSE(p1.row.prefetch);
  ASSERT_TRUE(p2.row.prefetch);
  const auto e1 = estimate(p1, res, row_op_h100()), e2 = estimate(p2, res, row_op_h100());
  ASSERT_TRUE(e1.launchable && e2.launchable);
  EXPECT_LT(e2.latency_ms, 0.6 * e1.latency_ms);  // 7 of the 8 round trips, the bulk of the chain
  EXPECT_LT(e2.time_ms, e1.time_ms);
  // Both read the row from DRAM once: the same transfer.
  EXPECT_DOUBLE_EQ(e1.dram_ms, e2.dram_ms);
}

TEST(RowOpModel, PassesOverGlobalMemoryAndTheRealVectorWidth) {
  EXPECT_EQ(row_profile({128, 4, 8, 0, 0}).row.global_reads(), 3);  // max, sum, output
  EXPECT_EQ(row_profile({128, 4, 8, 1, 0}).row.global_reads(), 2);  // online pair, output
  EXPECT_EQ(row_profile({128, 4, 8, 1, 1}).row.global_reads(), 1);  // cached
  EXPECT_EQ(row_profile({128, 4, 8, 0, 2}).row.global_reads(), 1);
  // More passes: more L2 traffic in the estimate.
  const KernelResources res{32, 144, 0};
  EXPECT_GT(estimate(row_profile({128, 4, 8, 0, 0}), res, row_op_h100()).l2_ms,
            estimate(row_profile({128, 4, 8, 1, 0}), res, row_op_h100()).l2_ms);
  // cols % vec != 0: the kernel takes its element-wise path: 2-byte accesses fill half of each L1
  // wavefront, twice the wavefronts of VEC 8.
  const auto aligned = row_profile({128, 4, 8, 1, 0}, "rows=4096,cols=4096");
  const auto ragged = row_profile({128, 4, 8, 1, 0}, "rows=4096,cols=4100");
  EXPECT_EQ(aligned.row.vector_width(), 8);
  EXPECT_EQ(ragged.row.vector_width(), 1);
  const double issue_aligned = estimate(aligned, res, row_op_h100()).compute_ms;
  const double issue_ragged = estimate(ragged, res, row_op_h100()).compute_ms;
  EXPECT_NEAR(issue_ragged / issue_aligned, 2.0 * 4100 / 4096, 0.01);
  EXPECT_GT(issue_aligned, 0);
}

TEST(RowOpModel, LayernormAndOtherShapesGiveFinitePositiveTimes) {
  for (const auto* shape : {"rows=1,cols=1", "rows=65536,cols=128", "rows=1024,cols=32768"})
    for (auto op : {templates::RowOp::kSoftmax, templates::RowOp::kLayernorm}) {
      const auto e = estimate(row_profile({32, 1, 4, 1, 0}, shape, "f32", op), {40, 0, 0}, row_op_h100());
      ASSERT_TRUE(e.launchable) << shape;
      EXPECT_GT(e.time_ms, 0) << shape;
      EXPECT_TRUE(std::isfinite(e.time_ms)) << shape;
    }
}

TEST(RowOpModel, LaunchLimitsStillApply) {
  auto p = row_profile({128, 4, 8, 1, 0});
  EXPECT_FALSE(estimate(p, {300, 0, 0}, row_op_h100()).launchable);  // registers past 255
  EXPECT_FALSE(estimate(p, {32, 300 * 1024, 0}, row_op_h100()).launchable);
}

TEST(RowOpModel, IsDeterministicAndParametersMatter) {
  const auto p = row_profile({64, 2, 4, 1, 1});
  const KernelResources res{92, 40, 0};
  EXPECT_EQ(estimate(p, res, row_op_h100()).time_ms, estimate(p, res, row_op_h100()).time_ms);
  EXPECT_EQ(estimate(p, res, row_op_h100()).time_ms, estimate_row_op(p, res, row_op_h100()).time_ms);
  RowModelParams slow;
  slow.memory_latency_cycles *= 2;
  EXPECT_GT(estimate_row_op(p, res, row_op_h100(), slow).time_ms, estimate_row_op(p, res, row_op_h100()).time_ms);
}

}  // namespace
}  // namespace tuner::costmodel
