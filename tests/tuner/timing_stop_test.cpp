// The adaptive stopping rule of timed runs (tuner/timing_stop.h) on synthetic samples.
#include "tuner/timing_stop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

namespace tuner {
namespace {

std::vector<double> noisy(int n, double median, double relative_noise, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(median, median * relative_noise);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(d(rng));
  return v;
}

TEST(MedianConfidence, NarrowsWithSamplesAndWidensWithNoise) {
  EXPECT_TRUE(std::isinf(median_ci_half_width({1, 1, 1, 1, 1})));  // too few samples for an interval
  EXPECT_DOUBLE_EQ(median_ci_half_width(std::vector<double>(10, 2.0)), 0.0);
  const double quiet10 = median_ci_half_width(noisy(10, 1.0, 0.005, 1));
  const double quiet100 = median_ci_half_width(noisy(100, 1.0, 0.005, 1));
  const double loud100 = median_ci_half_width(noisy(100, 1.0, 0.05, 1));
  EXPECT_LT(quiet100, quiet10);
  EXPECT_GT(loud100, 5 * quiet100);
  EXPECT_LT(quiet100, 0.01);
  // Distribution-free: one wild outlier barely moves it.
  auto with_outlier = noisy(100, 1.0, 0.005, 1);
  with_outlier[7] = 1000;
  EXPECT_NEAR(median_ci_half_width(with_outlier), quiet100, quiet100);
}

TEST(TimingStop, AQuietKernelStopsAtTheFloorALoudOneAtTheCeiling) {
  MeasureSettings s;  // 10 runs and 1 ms at least; 1% noise; 100 ms of kernel time at most
  const auto quiet = noisy(10, 0.2, 0.002, 2);
  EXPECT_STREQ(timing_stop_reason(quiet, 5, s), "noise");
  EXPECT_EQ(timing_stop_reason(std::vector<double>(quiet.begin(), quiet.begin() + 9), 5, s), nullptr) << "below the floor";
  const auto loud = noisy(400, 0.2, 0.3, 3);  // 80 ms of kernel time, still noisy
  EXPECT_EQ(timing_stop_reason(loud, 100, s), nullptr);
  EXPECT_STREQ(timing_stop_reason(noisy(600, 0.2, 0.3, 3), 150, s), "max_time");
  // A kernel faster than the floor of kernel time keeps going until it has 1 ms.
  const auto tiny = noisy(10, 0.01, 0.001, 4);
  EXPECT_EQ(timing_stop_reason(tiny, 1, s), nullptr);
  EXPECT_STREQ(timing_stop_reason(noisy(101, 0.01, 0.001, 4), 2, s), "noise");
}

TEST(TimingStop, CeilingsAndTheFixedBudget) {
  MeasureSettings s;
  EXPECT_STREQ(timing_stop_reason({500.0}, 3500, s), "max_wall");  // one slow run: fewer runs, not a timeout
  EXPECT_EQ(timing_stop_reason({}, 3500, s), nullptr);            // never zero runs
  s.max_repeats = 12;
  EXPECT_STREQ(timing_stop_reason(noisy(12, 0.01, 0.5, 5), 1, s), "max_repeats");
  MeasureSettings fixed;
  fixed.max_noise = 0;  // the old protocol: a fixed budget of kernel time
  EXPECT_EQ(timing_stop_reason(std::vector<double>(50, 1.0), 60, fixed), nullptr);
  EXPECT_STREQ(timing_stop_reason(std::vector<double>(100, 1.0), 110, fixed), "max_time");
}

TEST(Percentile, InterpolatesBetweenOrderStatistics) {
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 0.5), 2);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 0.75) - percentile({1, 2, 3, 4, 5}, 0.25), 2);
}

}  // namespace
}  // namespace tuner
