// Transfer between real recordings (tuner/replay_transfer.h), on the whole-space H100 recordings under
// data/replay: only recordings of one template at another shape or GPU feed each other; a recording's
// records become rows with the session's feature columns and speeds relative to the best row drawn, drawn
// the same way under a seed; and a model-guided search fed them starts from them (its first proposal
// differs from a cold start's and is the same under the same seed).
#include "tuner/replay_transfer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "costmodel/features.h"
#include "tuner/strategy_factory.h"

namespace tuner {
namespace {

std::string replay(const std::string& file) { return std::string(TUNER_SOURCE_DIR) + "/data/replay/" + file; }

class ReplayTransfer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    wgmma4k_ = new RecordedSpace(load_recorded_space(replay("gemm_f16_M4096_N4096_K4096_wgmma_h100_2026-11-25.json")));
    wgmma8k_ = new RecordedSpace(load_recorded_space(replay("gemm_f16_M8192_N8192_K8192_wgmma_h100_2026-11-25.json")));
    mma4k_ = new RecordedSpace(load_recorded_space(replay("gemm_f16_M4096_N4096_K4096_mma_h100_2026-11-25.json")));
    softmax_ = new RecordedSpace(load_recorded_space(replay("softmax_f16_rows4096_cols4096_h100_2026-11-25.json")));
  }
  static void TearDownTestSuite() {
    for (RecordedSpace* r : {wgmma4k_, wgmma8k_, mma4k_, softmax_}) delete r;
  }
  static RecordedSpace* wgmma4k_;
  static RecordedSpace* wgmma8k_;
  static RecordedSpace* mma4k_;
  static RecordedSpace* softmax_;
};
RecordedSpace* ReplayTransfer::wgmma4k_ = nullptr;
RecordedSpace* ReplayTransfer::wgmma8k_ = nullptr;
RecordedSpace* ReplayTransfer::mma4k_ = nullptr;
RecordedSpace* ReplayTransfer::softmax_ = nullptr;

TEST_F(ReplayTransfer, OnlyTheSameTemplateAtAnotherShapeFeedsASearch) {
  EXPECT_TRUE(transferable(*wgmma8k_, *wgmma4k_));
  EXPECT_TRUE(transferable(*wgmma4k_, *wgmma8k_));
  EXPECT_FALSE(transferable(*wgmma4k_, *wgmma4k_)) << "a recording does not feed itself";
  EXPECT_FALSE(transferable(*mma4k_, *wgmma4k_)) << "another template: other knobs, other feature columns";
  EXPECT_FALSE(transferable(*wgmma4k_, *mma4k_));
  EXPECT_FALSE(transferable(*softmax_, *wgmma4k_));
}

TEST_F(ReplayTransfer, RowsHaveTheSessionsColumnsAndSpeedsRelativeToTheBestDrawn) {
  const RecordedSpace& from = *wgmma8k_;
  const auto all = transfer_rows(from, 0, 1);
  ASSERT_EQ(all.size(), from.configs.size());
  // The columns the target's search scores its own configs with.
  std::vector<int64_t> dims;
  for (const auto& [n, v] : wgmma4k_->workload.dims) dims.push_back(v);
  const auto& c = wgmma4k_->configs.front();
  const size_t columns = costmodel::kernel_features(c.config, c.profile, dims, 2, wgmma4k_->gpu).size();
  float best = 0;
  for (const auto& r : all) {
    EXPECT_EQ(r.features.size(), columns);
    EXPECT_GT(r.relative_speed, 0.0f);
    EXPECT_LE(r.relative_speed, 1.0f);
    best = std::max(best, r.relative_speed);
  }
  EXPECT_FLOAT_EQ(best, 1.0f);
  // The fastest recorded config is the row at 1.
  const size_t fastest = static_cast<size_t>(
      std::min_element(from.configs.begin(), from.configs.end(),
                       [](const auto& a, const auto& b) { return a.time_ms < b.time_ms; }) - from.configs.begin());
  EXPECT_FLOAT_EQ(all[fastest].relative_speed, 1.0f);

  const auto some = transfer_rows(from, 64, 7);
  ASSERT_EQ(some.size(), 64u);
  EXPECT_FLOAT_EQ(std::max_element(some.begin(), some.end(), [](const auto& a, const auto& b) {
                    return a.relative_speed < b.relative_speed;
                  })->relative_speed, 1.0f) << "relative to the best of the rows drawn";
  const auto again = transfer_rows(from, 64, 7);
  const auto other = transfer_rows(from, 64, 8);
  bool same = true, differ = false;
  for (size_t i = 0; i < some.size(); ++i) {
    same = same && some[i].features == again[i].features && some[i].relative_speed == again[i].relative_speed;
    differ = differ || some[i].features != other[i].features;
  }
  EXPECT_TRUE(same) << "the same seed draws the same records";
  EXPECT_TRUE(differ) << "another seed draws other records";
}

TEST_F(ReplayTransfer, AWarmSearchStartsFromTheOtherShapesRecords) {
  const RecordedSpace& to = *wgmma4k_;
  auto first_proposal = [&](bool warm, uint64_t seed) {
    auto s = build_strategy("xgb", to.space, seed, *to.tmpl, to.workload, to.gpu);
    if (warm) {
      feed_transfer(*s->transfer_learner(), transfer_rows(*wgmma8k_, 0, seed));
      EXPECT_EQ(s->transfer_learner()->transfer_rows(), wgmma8k_->configs.size());
    }
    s->observe({}, {});
    if (warm) {
      EXPECT_EQ(s->transfer_learner()->fitted_rows(), wgmma8k_->configs.size());
    }
    return s->propose(16);
  };
  const auto warm = first_proposal(true, 3);
  EXPECT_EQ(warm.size(), 8u) << "the first proposal holds first_batch (8) configs";
  EXPECT_EQ(warm, first_proposal(true, 3)) << "deterministic under the seed";
  EXPECT_NE(warm, first_proposal(false, 3)) << "the transferred records steer the first proposal";
}

}  // namespace
}  // namespace tuner
