// The calibrated cost model against the published runs it was fitted to: every
// run within 10% with the default CostParams (one model, no per-run constants),
// and the error grows when a term is taken away, so each term carries weight.
// Then the held-out runs (Narayanan et al. 2021), which nothing is fitted to.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "search/parallel/calibration_runs.h"
#include "search/parallel/cluster_spec.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/planner.h"

namespace tuner::parallel {
namespace {

TEST(Calibration, EveryPublishedRunWithinTenPercent) {
  ASSERT_GE(calibration_runs().size(), 8u);
  for (const PublishedRun& run : calibration_runs()) {
    const RunPrediction p = predict_run(run);
    EXPECT_LE(std::fabs(p.error), 0.10) << run.label << ": predicted " << p.predicted_s << " s, published "
                                        << run.iteration_time_s << " s (" << p.config << ")";
  }
}

TEST(Calibration, FlatEfficiencyAndFreeMemoryOpsMissTheSmallModel) {
  // Without the efficiency curve, launch gaps and with flash attention, the 22B run (small GEMMs at tp 8)
  // comes out far too fast, as the planner's predictions did before these terms.
  const PublishedRun& run = calibration_runs().front();
  CostParams old;
  old.matmul_efficiency = 0.70;
  old.matmul_half_dim = 0;
  old.kernel_overhead_s = 0;
  PublishedRun flash = run;
  flash.attention = AttentionKernel::kFlash;
  EXPECT_LT(predict_run(flash, old).error, -0.10);
  EXPECT_LE(std::fabs(predict_run(run).error), 0.10);
}

TEST(Calibration, H100RunsNeedTheH100ThroughputTerm) {
  // The A100-fitted efficiencies applied to the H100's datasheet peak make the H100 runs far too fast; the H100's
  // sustained tensor throughput (one number for the GPU, not per run) brings them within 10%.
  int h100_runs = 0;
  for (const PublishedRun& run : calibration_runs()) {
    if (run.cluster.rfind("dgx-h100", 0) != 0) continue;
    ++h100_runs;
    CostParams datasheet;
    datasheet.tensor_throughput.clear();
    const double without = predict_run(run, datasheet).error, with = predict_run(run).error;
    EXPECT_LT(without, with) << run.label;
    EXPECT_LE(std::fabs(with), 0.10) << run.label;
  }
  EXPECT_GE(h100_runs, 2);
  // The dense Llama run is the one that pins it down.
  const auto llama = std::find_if(calibration_runs().begin(), calibration_runs().end(),
                                  [](const PublishedRun& r) { return r.model == "llama3-70b"; });
  ASSERT_NE(llama, calibration_runs().end());
  CostParams datasheet;
  datasheet.tensor_throughput.clear();
  EXPECT_LT(predict_run(*llama, datasheet).error, -0.15);
}

const PublishedRun& held_out(const std::string& size) {
  const auto& runs = held_out_runs();
  const auto it = std::find_if(runs.begin(), runs.end(),
                               [&](const PublishedRun& r) { return r.label.rfind("GPT " + size + " ", 0) == 0; });
  if (it == runs.end()) throw std::runtime_error("no held-out run " + size);
  return *it;
}

TEST(HeldOut, ZeroThreeTrafficHiddenBehindComputeIsNotFree) {
  // 18.4B on tp 8 x dp 32 at micro-batch 8: ZeRO-3's per-micro-batch all-gathers of the weights keep the network
  // busy for about as long as the layers compute. Counted free, they let the planner trade tensor-parallel attention
  // for in-node data parallelism under ZeRO-3 and land 19% fast; charged their interference, it keeps ZeRO 0/1.
  const PublishedRun& run = held_out("18.4B");
  PublishedRun zero3 = run;
  zero3.fix += ",mbs=8,zero=3";
  CostParams free_overlap;
  free_overlap.overlap_interference = 0;
  EXPECT_GT(predict_run(zero3).predicted_s, 1.03 * predict_run(zero3, free_overlap).predicted_s);
  EXPECT_NE(predict_run(run, free_overlap).config.find("zero=3"), std::string::npos);
  const RunPrediction planned = predict_run(run);
  EXPECT_EQ(planned.config.find("zero=3"), std::string::npos) << planned.config;
  EXPECT_GT(planned.error, -0.17) << planned.config;
}

TEST(HeldOut, PredictionsStayInTheirDocumentedBand) {
  // docs/calibration.md: the runs of 2021 had no sequence parallelism (pinned sp=0, as the 2022 full-recomputation
  // baselines of the calibration). With tp <= 4 the planned and the published configurations are within 10%; the
  // tp 8 runs within -13% .. +10%; 7 of 10 planned and 9 of 10 published configurations within 10% (3 and 4 when
  // sequence parallelism was assumed).
  ASSERT_EQ(held_out_runs().size(), 10u);
  int within[2] = {0, 0};
  for (const PublishedRun& run : held_out_runs()) {
    const bool small_tp = run.fix.rfind("tp=8", 0) != 0;
    EXPECT_NE(run.fix.find("sp=0"), std::string::npos) << run.label;
    for (bool published : {false, true}) {
      const RunPrediction p = predict_run(run, {}, published);
      SCOPED_TRACE(run.label + (published ? " (published configuration)" : " (planned)") + ": " + p.config);
      EXPECT_LE(p.error, 0.10);
      EXPECT_GE(p.error, small_tp ? -0.10 : -0.13);
      within[published] += std::abs(p.error) <= 0.10;
    }
  }
  EXPECT_GE(within[0], 7);
  EXPECT_GE(within[1], 9);
}

// The second held-out set (llm-foundry's MPT on 8 A100s with FSDP, found after the first was used): the model is
// too fast on all eight, by 3-18% (docs/calibration.md). The band is asserted so that a change that moves it is
// seen and the document updated.
// The MPT runs with their own attention kernel (a Triton FlashAttention-1 era kernel at 0.28 of peak, from the
// FlashAttention-2 paper's bands) and FSDP's fp32 gradient reduce-scatter: 6 of 8 within 10%. The unpipelined runs
// without recomputation stay too fast (-8 ... -15%); the checkpointed ones land within 5%.
TEST(HeldOut, FsdpRunsOnA100AreWithinTheDocumentedMargin) {
  ASSERT_EQ(fsdp_held_out_runs().size(), 8u);
  int within = 0;
  for (const PublishedRun& run : fsdp_held_out_runs()) {
    const RunPrediction q = predict_run(run, {}, true);
    EXPECT_GT(q.error, -0.16) << run.label;
    EXPECT_LT(q.error, 0.06) << run.label;
    if (run.fix.find("recompute=none") != std::string::npos) {
      EXPECT_LT(q.error, -0.05) << run.label;
    }
    within += std::fabs(q.error) <= 0.10;
    EXPECT_NE(q.config.find("zero=3"), std::string::npos) << q.config;
  }
  EXPECT_EQ(within, 6);
  // With the FlashAttention-2 class default instead, the same runs are 3-18% too fast (stop 37's figures).
  int within_fa2 = 0;
  for (PublishedRun run : fsdp_held_out_runs()) {
    run.attention_kernel_factor = 1;
    within_fa2 += std::fabs(predict_run(run, {}, true).error) <= 0.10;
  }
  EXPECT_LE(within_fa2, 3);
}

// sp=0 keeps norms, dropout and residual adds whole on every tensor-parallel rank: the plan says so, and at tp 8 it
// costs time (18.4B of the held-out set: 7.98 s with the token split, 8.67 s without).
TEST(HeldOut, WithoutSequenceParallelismTheNormsRunOnEveryRank) {
  const PublishedRun& run = held_out_runs().at(3);
  ASSERT_NE(run.label.find("18.4B"), std::string::npos);
  PlannerOptions o;
  o.global_batch = run.global_batch;
  o.attention = run.attention;
  o.pins = parse_pins("tp=8,pp=1,dp=32,recompute=full,mbs=8,zero=0,sp=0");
  const ModelGraph m = parse_model_spec(run.model);
  const ClusterSpec c = parse_cluster_spec(run.cluster);
  const Plan without = Planner(m, c, o).plan();
  o.pins = parse_pins("tp=8,pp=1,dp=32,recompute=full,mbs=8,zero=0");
  const Plan with = Planner(m, c, o).plan();
  EXPECT_FALSE(without.sequence_parallel);
  EXPECT_TRUE(with.sequence_parallel);
  EXPECT_GT(without.iteration_time_s, 1.05 * with.iteration_time_s);
  EXPECT_GT(without.stages[0].time.memory_bound_s, with.stages[0].time.memory_bound_s);
  EXPECT_EQ(to_string(parse_pins("tp=8,sp=0")), "tp=8,sp=0");
  EXPECT_THROW(parse_pins("sp=2"), SpecError);
}

}  // namespace
}  // namespace tuner::parallel
