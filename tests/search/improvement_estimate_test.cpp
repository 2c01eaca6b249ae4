// The expected improvement of a ranking model's next batch: the score line,
// the batch integral, and the out-of-sample trust that gates an estimate.
#include "search/improvement_estimate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "search/gaussian_process.h"

namespace tuner::search {
namespace {

TEST(ImprovementEstimate, TheScoreLineIsFittedOnTheBetterHalf) {
  // log speed = 0.5 + 2 score on the better half; the worse half lies off the line and is ignored.
  std::vector<double> scores, speeds;
  for (int i = 0; i < 8; ++i) {
    const double s = 0.1 * i;
    scores.push_back(s);
    speeds.push_back(std::exp(0.5 + 2 * s) * (i < 4 ? 0.01 : 1.0));
  }
  const ScoreLine line = fit_score_line(scores, speeds);
  ASSERT_TRUE(line.valid);
  EXPECT_NEAR(line.slope, 2.0, 1e-9);
  EXPECT_NEAR(line.intercept, 0.5, 1e-9);
  // Failures (speed 0) are left out; fewer than 4 successes, or scores that order speeds backwards, fit nothing.
  EXPECT_FALSE(fit_score_line({1, 2, 3, 4}, {1, 2, 0, 4}).valid);
  EXPECT_FALSE(fit_score_line({1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1}).valid);
}

TEST(ImprovementEstimate, TheBatchIntegralMatchesTheClosedFormForOneConfig) {
  // One config: E[max(0, X)], X ~ N(m, s^2), is the GP's expected improvement of a time below best = 0.
  for (double m : {-0.3, -0.05, 0.0, 0.1})
    EXPECT_NEAR(batch_expected_improvement({m}, 0.1), expected_improvement(-m, 0.1, 0.0), 1e-6) << m;
  // More configs can only add; without spread it is the best prediction's gain, or nothing.
  EXPECT_GT(batch_expected_improvement({-0.05, -0.05}, 0.1), batch_expected_improvement({-0.05}, 0.1));
  EXPECT_DOUBLE_EQ(batch_expected_improvement({-0.2, 0.03}, 0), 0.03);
  EXPECT_DOUBLE_EQ(batch_expected_improvement({-0.2, -0.1}, 0), 0.0);
}

TEST(ImprovementEstimate, NoEstimateUntilEnoughPredictionsWereMeasured) {
  ImprovementEstimate e(64, 4);
  // Scores 0..7 with log speed = score / 10: the best measured has score 7.
  std::vector<double> scores, speeds;
  for (int i = 0; i < 8; ++i) {
    scores.push_back(i);
    speeds.push_back(std::exp(0.1 * i));
  }
  e.calibrate(scores, speeds);
  EXPECT_LT(e.expect({100, 101, 102, 103}, {6, 6, 6, 9}), 0) << "no residuals yet";
  // The predictions held (the configs measured as predicted): no spread, so the estimate is the best
  // prediction's own gain over the incumbent, here score 9 against 7: exp(0.2) - 1.
  for (uint64_t k = 100; k < 104; ++k) e.measured(k, std::exp(0.1 * (k == 103 ? 9 : 6)));
  EXPECT_EQ(e.residuals(), 4u);
  EXPECT_NEAR(e.expect({200, 201}, {9, 5}), std::exp(0.2) - 1, 1e-9);
  // A batch predicted below the incumbent expects nothing when the predictions have held...
  EXPECT_NEAR(e.expect({300, 301}, {5, 6}), 0.0, 1e-12);
}

TEST(ImprovementEstimate, PredictionsThatMissWidenTheSpreadAndShiftByTheirBias) {
  std::vector<double> scores, speeds;
  for (int i = 0; i < 8; ++i) {
    scores.push_back(i);
    speeds.push_back(std::exp(0.1 * i));
  }
  // Configs measured 30% faster and slower than predicted, in turn: bias 0, a wide spread.
  ImprovementEstimate noisy(64, 4);
  noisy.calibrate(scores, speeds);
  noisy.expect({1, 2, 3, 4}, {5, 5, 5, 5});
  for (uint64_t k = 1; k <= 4; ++k) noisy.measured(k, std::exp(0.5 + (k % 2 ? 0.3 : -0.3)));
  const double wide = noisy.expect({10}, {5});
  EXPECT_GT(wide, 0.05) << "score 5 is predicted 20% slower than the best, but the model misses by 30%";
  // Configs all measured 30% faster than predicted: the same batch then expects a 10% gain or more.
  ImprovementEstimate biased(64, 4);
  biased.calibrate(scores, speeds);
  biased.expect({1, 2, 3, 4}, {5, 5, 5, 5});
  for (uint64_t k = 1; k <= 4; ++k) biased.measured(k, std::exp(0.5 + 0.3));
  EXPECT_NEAR(biased.expect({10}, {5}), std::exp(0.1) - 1, 1e-9);
  // Failed configs and configs never predicted add no residual.
  biased.measured(10, 0);
  biased.measured(999, 1.0);
  EXPECT_EQ(biased.residuals(), 4u);
}

}  // namespace
}  // namespace tuner::search
