// The Gaussian process of the bo strategy: its Cholesky factorisation, that
// the posterior interpolates its data and is unsure away from it, and the
// expected-improvement formula.
#include "search/gaussian_process.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tuner::search {
namespace {

TEST(Cholesky, RecoversTheFactorOfAKnownMatrix) {
  // L = [[2,0,0],[1,3,0],[4,5,6]]; A = L L^T: 4, 2, 8 / 2, 1+9, 4+15 / 8, 19, 16+25+36.
  std::vector<double> a = {4, 2, 8, 2, 10, 19, 8, 19, 77};
  ASSERT_TRUE(cholesky(a, 3));
  const std::vector<double> l = {2, 0, 0, 1, 3, 0, 4, 5, 6};
  for (size_t i = 0; i < 9; ++i) EXPECT_NEAR(a[i], l[i], 1e-12) << "entry " << i;
}

TEST(Cholesky, RefusesAMatrixThatIsNotPositiveDefinite) {
  std::vector<double> a = {1, 2, 2, 1};  // eigenvalues 3 and -1
  EXPECT_FALSE(cholesky(a, 2));
}

TEST(GaussianProcess, InterpolatesItsDataAndIsUnsureFarFromIt) {
  std::vector<double> x, y;
  for (int i = 0; i <= 10; ++i) {
    x.push_back(0.05 * i);  // inputs in [0, 0.5]
    y.push_back(std::sin(6.0 * 0.05 * i));
  }
  GaussianProcess gp;
  ASSERT_TRUE(gp.fit(x, 1, y));
  for (int i = 0; i <= 10; ++i) {
    double mean = 0, sd = 0;
    gp.predict(&x[i], &mean, &sd);
    EXPECT_NEAR(mean, y[i], 0.02) << "at x = " << x[i];
  }
  double near_mean = 0, near_sd = 0, far_mean = 0, far_sd = 0;
  const double near = 0.225, far = 1.0;
  gp.predict(&near, &near_mean, &near_sd);
  gp.predict(&far, &far_mean, &far_sd);
  EXPECT_NEAR(near_mean, std::sin(6.0 * near), 0.05);
  EXPECT_GT(far_sd, 5 * near_sd);
}

TEST(ExpectedImprovement, MatchesTheClosedFormAtKnownPoints) {
  // At mean == best the improvement is sd * pdf(0) = sd / sqrt(2 pi).
  EXPECT_NEAR(expected_improvement(1.0, 2.0, 1.0), 2.0 / std::sqrt(2 * M_PI), 1e-12);
  // Far below the best with no spread: the certain improvement.
  EXPECT_NEAR(expected_improvement(-3.0, 1e-9, 1.0), 4.0, 1e-9);
  // Far above: nothing to expect.
  EXPECT_LT(expected_improvement(10.0, 1.0, 0.0), 1e-15);
}

}  // namespace
}  // namespace tuner::search
