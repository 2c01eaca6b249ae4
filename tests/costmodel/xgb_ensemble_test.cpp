// The bootstrap ensemble of XGBoost rankers: its spread is small where the
// training rows are dense and large where they are sparse, it replays under a
// seed, and it saves and loads (its own bytes and a lone XgbModel's).
#include "costmodel/xgb_ensemble.h"

#include "search/model_guided_strategy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tuner::costmodel {
namespace {

float uniform(std::mt19937& rng) { return float(rng() >> 8) * (1.0f / 16777216.0f); }

// Two features; the truth rises with x1 and waves along x0. Rows: `dense` with x0 in [0, 0.5), `sparse` with x0 in
// [0.5, 1).
void make_data(size_t dense, size_t sparse, uint32_t seed, FeatureMatrix* x, std::vector<float>* t) {
  std::mt19937 rng(seed);
  for (size_t i = 0; i < dense + sparse; ++i) {
    const float x0 = (i < dense ? 0.0f : 0.5f) + 0.5f * uniform(rng), x1 = uniform(rng);
    x->add_row({x0, x1});
    t->push_back(0.5f + 0.3f * std::sin(9.0f * x0) + 0.2f * x1);
  }
}

double mean_spread(const XgbEnsemble& e, float lo, float hi) {
  FeatureMatrix q;
  for (int i = 0; i < 200; ++i) q.add_row({lo + (hi - lo) * (i % 20) / 20.0f, (i / 20) / 10.0f});
  std::vector<float> mean, spread;
  EXPECT_TRUE(e.predict_spread(q, &mean, &spread));
  EXPECT_EQ(spread.size(), q.rows);
  double s = 0;
  for (float v : spread) s += v;
  return s / static_cast<double>(spread.size());
}

// On average over data sets: for one data set of three (seed 5) the dense region's spread is the larger
// (0.13 against 0.11), since members also disagree on the fine structure they fit where rows are many.
TEST(XgbEnsemble, SpreadIsSmallerWhereRowsAreDenseOnAverage) {
  double dense = 0, sparse = 0;
  for (uint32_t seed : {3u, 4u, 5u}) {
    FeatureMatrix x;
    std::vector<float> t;
    make_data(200, 8, seed, &x, &t);
    EnsembleParams p;
    p.member.seed = seed;
    XgbEnsemble e(p);
    std::string error;
    ASSERT_TRUE(e.fit(x, t, {}, &error)) << error;
    EXPECT_EQ(e.members(), 5u);
    dense += mean_spread(e, 0.0f, 0.5f);
    sparse += mean_spread(e, 0.5f, 1.0f);
  }
  EXPECT_GT(sparse, 0.0);
  EXPECT_LT(dense, sparse) << "200 rows below x0 = 0.5, 8 above";
}

TEST(XgbEnsemble, SpreadShrinksAsRowsArrive) {
  FeatureMatrix few, many;
  std::vector<float> tf, tm;
  make_data(12, 0, 5, &few, &tf);
  make_data(400, 0, 5, &many, &tm);
  XgbEnsemble a, b;
  ASSERT_TRUE(a.fit(few, tf, {}, nullptr));
  ASSERT_TRUE(b.fit(many, tm, {}, nullptr));
  EXPECT_LT(mean_spread(b, 0.0f, 0.5f), mean_spread(a, 0.0f, 0.5f));
}

TEST(XgbEnsemble, SameSeedSamePredictionsOtherSeedOthers) {
  FeatureMatrix x;
  std::vector<float> t;
  make_data(60, 10, 7, &x, &t);
  auto fitted = [&](uint64_t seed) {
    EnsembleParams p;
    p.member.seed = seed;
    XgbEnsemble e(p);
    EXPECT_TRUE(e.fit(x, t, {}, nullptr));
    std::vector<float> mean, spread;
    EXPECT_TRUE(e.predict_spread(x, &mean, &spread));
    mean.insert(mean.end(), spread.begin(), spread.end());
    return mean;
  };
  EXPECT_EQ(fitted(4), fitted(4));
  EXPECT_NE(fitted(4), fitted(5));
}

TEST(XgbEnsemble, SaveLoadRoundTripAndALoneModelLoadsWithSpreadZero) {
  FeatureMatrix x;
  std::vector<float> t;
  make_data(60, 10, 9, &x, &t);
  XgbEnsemble e;
  ASSERT_TRUE(e.fit(x, t, {}, nullptr));
  XgbEnsemble restored;
  std::string error;
  ASSERT_TRUE(restored.load(e.save(), &error)) << error;
  std::vector<float> m1, s1, m2, s2;
  ASSERT_TRUE(e.predict_spread(x, &m1, &s1));
  ASSERT_TRUE(restored.predict_spread(x, &m2, &s2));
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(s1, s2);
  EXPECT_FALSE(restored.load("tuner-xgb-ensemble 1\n2\n0 1 99999\nxx", &error));
  EXPECT_EQ(restored.members(), 5u) << "a failed load keeps the ensemble";

  XgbModel lone;
  ASSERT_TRUE(lone.fit(x, t, {}, nullptr));
  XgbEnsemble from_lone;
  ASSERT_TRUE(from_lone.load(lone.save(), &error)) << error;
  EXPECT_EQ(from_lone.members(), 1u);
  ASSERT_TRUE(from_lone.predict_spread(x, &m2, &s2));
  for (float s : s2) EXPECT_EQ(s, 0.0f);
}

TEST(XgbEnsemble, UnfittedPredictsNothingAndBadDataFails) {
  XgbEnsemble e;
  FeatureMatrix x;
  x.add_row({1, 2});
  EXPECT_TRUE(e.predict(x).empty());
  std::string error;
  EXPECT_FALSE(e.fit(x, {1.0f}, {}, &error));
  EXPECT_FALSE(error.empty());
}

// The model-guided search on the real ensemble (bootstrap resamples, confidence bound) replays under a seed.
TEST(XgbEnsemble, TheModelGuidedSearchOnItProposesTheSameUnderTheSameSeed) {
  std::vector<search::Knob> knobs;
  for (const char* n : {"a", "b", "c", "d", "e", "f"}) knobs.push_back({n, {0, 1, 2, 3, 4, 5, 6, 7}, ""});
  const search::ConfigSpace space(std::move(knobs), {});
  auto time_of = [](const search::Config& c) {
    double d = 0;
    const int peak[] = {5, 2, 7, 1, 4, 6};
    for (size_t i = 0; i < c.size(); ++i) d += std::abs(static_cast<double>(c[i] - peak[i]));
    return 1.0 + d;
  };
  auto run = [&](uint64_t seed) {
    search::AnnealingParams p;
    p.chains = 32;
    p.steps = 60;
    EnsembleParams e;
    e.member.seed = seed;
    search::ModelGuidedStrategy s(space, seed, std::make_unique<XgbEnsemble>(e),
                                  [](const search::Config& c) { return std::vector<float>(c.begin(), c.end()); }, p);
    std::vector<search::Config> all;
    for (int round = 0; round < 3; ++round) {
      auto b = s.propose(12);
      std::vector<search::TrialOutcome> out;
      for (const auto& c : b) out.push_back({true, time_of(c)});
      s.observe(b, out);
      all.insert(all.end(), b.begin(), b.end());
    }
    return all;
  };
  const auto a = run(3);
  EXPECT_EQ(a.size(), 24u) << "three batches of first_batch (8) while the model has fewer than 32 rows";
  EXPECT_EQ(a, run(3));
  EXPECT_NE(a, run(4));
}

}  // namespace
}  // namespace tuner::costmodel
