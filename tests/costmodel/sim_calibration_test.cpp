// The sim device against the committed whole-space recordings (data/replay/): a property of the
// analytic model, checked as a test so that a change to the model that loses the real ranking fails.
#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "costmodel/rank_correlation.h"
#include "costmodel/ring_gemm_model.h"
#include "costmodel/row_op_model.h"
#include "tuner/device_limits.h"
#include "tuner/replay_oracle.h"

namespace tuner {
namespace {

const std::string kReplayDir = std::string(TUNER_SOURCE_DIR) + "/data/replay";
const std::string kSoftmaxH100 = kReplayDir + "/softmax_f16_rows4096_cols4096_h100_2026-11-23.json";

TEST(SimCalibration, TheSoftmaxRecordingLoadsWholly) {
  const RecordedSpace s = load_recorded_space(kSoftmaxH100);
  EXPECT_EQ(s.gpu.key, "h100-sxm");
  EXPECT_EQ(s.tmpl->name(), "softmax_rows");
  EXPECT_EQ(s.configs.size(), 252u);  // the whole space of the recording's day (CACHE 0 and 1)
  // Since then CACHE 2 (element registers, loads first) joined the template's space (358 configs); an
  // oracle answers for what it recorded, so its space is the recorded configs.
  EXPECT_EQ(s.tmpl->space(s.workload, limits_of(s.gpu)).size(), 358u);
  EXPECT_EQ(s.space.size(), 252u);
  EXPECT_EQ(s.not_ok, 0u);
  EXPECT_EQ(s.outside_space, 0u);
  EXPECT_NEAR(s.best_ms, 0.0305, 0.0005);
  // Recorded resources reach the model: ROW_THREADS=64 with CACHE=1 keeps the row in 80+ registers.
  const auto heavy = std::max_element(s.configs.begin(), s.configs.end(), [](const auto& a, const auto& b) {
    return a.resources.registers < b.resources.registers;
  });
  EXPECT_GE(heavy->resources.registers, 80);
  EXPECT_TRUE(costmodel::is_row_op(heavy->profile));
}

TEST(SimCalibration, SimRanksTheRealSoftmaxSpace) {
  const RecordedSpace s = load_recorded_space(kSoftmaxH100);
  const auto a = rank_agreement(s, sim_estimates(s));
  EXPECT_GE(a.spearman, 0.7);
  EXPECT_LE(a.pick_over_best, 1.2);  // the sim's first pick is within 20% of the real best
  EXPECT_GE(a.top10_overlap, 2u);
}

TEST(SimCalibration, HoldsOnTheHalfTheParametersWereNotFittedOn) {
  // The shipped parameters are the rounded fit on split 1's first half (bench/sim_vs_replay_bench):
  // the same shuffle here, judged on the other half.
  const RecordedSpace s = load_recorded_space(kSoftmaxH100);
  std::vector<size_t> idx(s.configs.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::mt19937_64 rng(1);
  std::shuffle(idx.begin(), idx.end(), rng);
  const std::vector<size_t> held_out(idx.begin() + idx.size() / 2, idx.end());
  EXPECT_GE(rank_agreement(s, sim_estimates(s), held_out).spearman, 0.7);
}

TEST(SimCalibration, EveryRecordingIsRankedWell) {
  const auto files = replay_files(kReplayDir);
  ASSERT_FALSE(files.empty());
  size_t gemms = 0;
  for (const auto& f : files) {
    const RecordedSpace s = load_recorded_space(f);
    ASSERT_FALSE(s.configs.empty()) << f;
    gemms += s.tmpl->op() == "gemm";
    EXPECT_GE(rank_agreement(s, sim_estimates(s)).spearman, 0.7) << f;
  }
  EXPECT_GE(gemms, 3u) << "the GEMM recordings (mma 4096^3, wgmma 4096^3 and 8192^3) are judged too";
}

// The ring-GEMM parameters are the rounded fit on the 4096^3 wgmma recording (ring_gemm_model.h); the
// 8192^3 one (another size, another lease) is out of sample: the shipped model must rank it, and put
// its first pick within 25% of the real best (the generic model's pick was 1.49x).
TEST(SimCalibration, RingGemmHoldsOnTheRecordingItWasNotFittedOn) {
  const RecordedSpace s = load_recorded_space(kReplayDir + "/gemm_f16_M8192_N8192_K8192_wgmma_h100_2026-11-25.json");
  ASSERT_TRUE(costmodel::is_ring_gemm(s.configs.front().profile));
  const auto a = rank_agreement(s, sim_estimates(s));
  EXPECT_GE(a.spearman, 0.8);
  EXPECT_LE(a.pick_over_best, 1.25);
  // And on either random half of it (split 1 as the bench draws it).
  std::vector<size_t> idx(s.configs.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::mt19937_64 rng(1);
  std::shuffle(idx.begin(), idx.end(), rng);
  const std::vector<size_t> first(idx.begin(), idx.begin() + idx.size() / 2), second(idx.begin() + idx.size() / 2, idx.end());
  EXPECT_GE(rank_agreement(s, sim_estimates(s), first).spearman, 0.75);
  EXPECT_GE(rank_agreement(s, sim_estimates(s), second).spearman, 0.75);
}

// What the ring path adds over the generic model: on the recording it was fitted on, the ranking and the
// first pick are far better than the generic path's (Spearman 0.65, pick 1.51x).
TEST(SimCalibration, RingGemmRanksTheWgmmaSpaceBetterThanTheGenericModel) {
  const RecordedSpace s = load_recorded_space(kReplayDir + "/gemm_f16_M4096_N4096_K4096_wgmma_h100_2026-11-25.json");
  std::vector<double> generic;
  for (const auto& c : s.configs) {
    auto p = c.profile;
    p.gemm = {};
    generic.push_back(costmodel::estimate(p, c.resources, s.gpu).time_ms);
  }
  const auto ring = rank_agreement(s, sim_estimates(s)), old = rank_agreement(s, generic);
  EXPECT_GE(ring.spearman, 0.9);
  EXPECT_GT(ring.spearman, old.spearman + 0.1);
  EXPECT_LE(ring.pick_over_best, 1.1);
}

// The mma.sync terms on Hopper (analytic_model.cpp: warps per scheduler hide a k-step's latency; a
// k-tile's sync stalls the block; both constants chosen on this recording): on each random half (split 1
// as the bench draws it) the ranking beats the model without them (Spearman 0.80 and 0.83; now 0.88 and
// 0.88) and measuring in the sim's order reaches 95% of the half's best within 5 trials (without them: at
// 32 and 28; now 3 and 1); on the whole recording the first pick is within 10% of the best (without
// them: 1.15x).
TEST(SimCalibration, MmaSyncPathRanksEachHalfOfTheMmaRecording) {
  const RecordedSpace s = load_recorded_space(kReplayDir + "/gemm_f16_M4096_N4096_K4096_mma_h100_2026-11-25.json");
  ASSERT_FALSE(costmodel::is_ring_gemm(s.configs.front().profile));
  const std::vector<double> est = sim_estimates(s);
  std::vector<size_t> idx(s.configs.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::mt19937_64 rng(1);
  std::shuffle(idx.begin(), idx.end(), rng);
  const std::vector<size_t> first(idx.begin(), idx.begin() + idx.size() / 2), second(idx.begin() + idx.size() / 2, idx.end());
  EXPECT_LE(rank_agreement(s, est).pick_over_best, 1.1);
  for (const auto& half : {first, second}) {
    const auto a = rank_agreement(s, est, half);
    EXPECT_GE(a.spearman, 0.85);
    std::vector<size_t> order = half;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return est[x] < est[y]; });
    double best = s.configs[half.front()].time_ms;
    for (size_t i : half) best = std::min(best, s.configs[i].time_ms);
    const auto good = std::find_if(order.begin(), order.end(),
                                   [&](size_t i) { return best / s.configs[i].time_ms >= 0.95; });
    EXPECT_LE(good - order.begin() + 1, 5);
  }
}

TEST(SimCalibration, ReplayFilesListsJsonFilesSorted) {
  const auto files = replay_files(kReplayDir);
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end()));
  EXPECT_NE(std::find(files.begin(), files.end(), kSoftmaxH100), files.end());
  EXPECT_TRUE(replay_files(kReplayDir + "/no-such-folder").empty());
}

}  // namespace
}  // namespace tuner
