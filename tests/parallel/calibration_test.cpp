// The calibrated cost model against the published runs it was fitted to: every
// run within 10% with the default CostParams (one model, no per-run constants),
// and the error grows when a term is taken away, so each term carries weight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "search/parallel/calibration_runs.h"

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

}  // namespace
}  // namespace tuner::parallel
