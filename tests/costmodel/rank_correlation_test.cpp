#include "costmodel/rank_correlation.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace tuner::costmodel {
namespace {

TEST(AverageRanks, TiesGetTheMeanOfTheRanksTheySpan) {
  EXPECT_EQ(average_ranks({10, 20, 20, 30}), (std::vector<double>{1, 2.5, 2.5, 4}));
  EXPECT_EQ(average_ranks({5, 5, 5}), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(average_ranks({3, 1, 2}), (std::vector<double>{3, 1, 2}));
  EXPECT_TRUE(average_ranks({}).empty());
}

TEST(Spearman, MonotoneIsOneAndReversedIsMinusOne) {
  // Any increasing transform keeps the ranks: x^3 and exp(x) against x.
  const std::vector<double> x{0.5, 1, 2, 3, 7, 11};
  std::vector<double> cube, neg;
  for (double v : x) {
    cube.push_back(v * v * v);
    neg.push_back(-std::exp(v));
  }
  EXPECT_DOUBLE_EQ(spearman(x, cube), 1.0);
  EXPECT_DOUBLE_EQ(spearman(x, neg), -1.0);
}

TEST(Spearman, TiesUseAverageRanksNotTheShortcutFormula) {
  // a ranks {1, 2.5, 2.5, 4}, b ranks {1, 3, 2, 4}: Pearson on the ranks is 4.5 / sqrt(4.5 * 5) = 0.94868;
  // the no-ties shortcut 1 - 6 sum d^2 / (n (n^2 - 1)) would give 0.95.
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 3, 2, 4}), 4.5 / std::sqrt(22.5), 1e-12);
  // Symmetric in its arguments.
  EXPECT_DOUBLE_EQ(spearman({1, 2, 2, 3}, {1, 3, 2, 4}), spearman({1, 3, 2, 4}, {1, 2, 2, 3}));
}

TEST(Spearman, KnownValueWithoutTies) {
  // d = {0, 0, 1, -1, 0} on n = 5: 1 - 6 * 2 / (5 * 24) = 0.9.
  EXPECT_NEAR(spearman({1, 2, 3, 4, 5}, {10, 20, 40, 30, 50}), 0.9, 1e-12);
}

TEST(Spearman, UndefinedCasesAreNaN) {
  EXPECT_TRUE(std::isnan(spearman({1, 2, 3}, {4, 4, 4})));  // constant series
  EXPECT_TRUE(std::isnan(spearman({1, 2, 3}, {1, 2})));     // lengths differ
  EXPECT_TRUE(std::isnan(spearman({1}, {1})));              // too short
}

TEST(Spearman, InfinityRanksLast) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(spearman({1, 2, inf}, {0.1, 0.2, 0.3}), 1.0);
}

TEST(TopKOverlap, CountsSharedIndicesOfTheKSmallest) {
  const std::vector<double> a{1, 2, 3, 4, 5, 6};
  const std::vector<double> b{6, 5, 1, 2, 3, 4};  // smallest three: indices 2, 3, 4
  EXPECT_EQ(top_k_overlap(a, b, 3), 1u);          // a's: 0, 1, 2
  EXPECT_EQ(top_k_overlap(a, a, 3), 3u);
  EXPECT_EQ(top_k_overlap(a, b, 100), 6u);        // k is capped at the length
  EXPECT_EQ(top_k_overlap(a, b, 0), 0u);
}

}  // namespace
}  // namespace tuner::costmodel
