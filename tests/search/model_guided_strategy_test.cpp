// The model-guided strategy with a known scoring function standing in for a
// trained model: annealing finds the function's optimum, nothing is proposed
// twice, and a seed replays exactly.
#include "search/model_guided_strategy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace tuner::search {
namespace {

// 6 knobs x 8 values = 262144 configs; the score peaks at (5,2,7,1,4,6).
ConfigSpace guided_big_space() {
  std::vector<Knob> knobs;
  for (const char* n : {"a", "b", "c", "d", "e", "f"}) knobs.push_back({n, {0, 1, 2, 3, 4, 5, 6, 7}, ""});
  return ConfigSpace(std::move(knobs), {});
}
const Config kPeak{5, 2, 7, 1, 4, 6};

double truth(const Config& c) {
  double s = 0;
  for (size_t i = 0; i < c.size(); ++i) s -= std::abs(static_cast<double>(c[i] - kPeak[i]));
  return s;
}

/// Scores features (which are the knob values) with the known function; "fits" by counting rows.
class KnownFunction final : public costmodel::CostModel {
 public:
  bool fit(const costmodel::FeatureMatrix& x, const std::vector<float>&, const std::vector<float>&, std::string*) override {
    rows_seen = x.rows;
    return true;
  }
  std::vector<float> predict(const costmodel::FeatureMatrix& x) const override {
    std::vector<float> out;
    for (size_t r = 0; r < x.rows; ++r) {
      Config c(x.cols);
      for (size_t k = 0; k < x.cols; ++k) c[k] = static_cast<int64_t>(x.values[r * x.cols + k]);
      out.push_back(static_cast<float>(truth(c)));
    }
    return out;
  }
  size_t rows_seen = 0;
};

/// Mean = the known function; spread 8 on configs whose knob a is 0 (a region the data never reached), 0
/// elsewhere, as an ensemble whose members disagree only there.
class UncertainFunction final : public costmodel::CostModel {
 public:
  bool fit(const costmodel::FeatureMatrix&, const std::vector<float>&, const std::vector<float>&, std::string*) override {
    return true;
  }
  std::vector<float> predict(const costmodel::FeatureMatrix& x) const override { return known_.predict(x); }
  bool predict_spread(const costmodel::FeatureMatrix& x, std::vector<float>* mean,
                      std::vector<float>* spread) const override {
    *mean = known_.predict(x);
    spread->clear();
    for (size_t r = 0; r < x.rows; ++r) spread->push_back(x.values[r * x.cols] == 0 ? 8.0f : 0.0f);
    return true;
  }

 private:
  KnownFunction known_;
};

/// The whole model share by annealing, in batches of 16, 16, 32: the search these tests of annealing, diversity and
/// the confidence bound are about (by default most of a batch is the incumbent's neighbourhood, batches of 8).
AnnealingParams annealing_only() {
  AnnealingParams p;
  p.local_share = 0;
  p.first_batch = 16;
  p.batch_growth = 1;
  return p;
}

Featurizer identity() {
  return [](const Config& c) { return std::vector<float>(c.begin(), c.end()); };
}

std::vector<TrialOutcome> outcomes_of(const std::vector<Config>& cs) {
  std::vector<TrialOutcome> out;
  for (const auto& c : cs) out.push_back({true, 1.0 / (20.0 + truth(c))});
  return out;
}

TEST(ModelGuidedStrategy, AnnealingFindsTheOptimumOfAKnownFunction) {
  auto space = guided_big_space();
  ModelGuidedStrategy s(space, 4, std::make_unique<KnownFunction>(), identity(), annealing_only());
  auto first = s.propose(16);  // random: the model has no rows yet
  s.observe(first, outcomes_of(first));
  auto second = s.propose(16);
  ASSERT_EQ(second.size(), 16u);
  EXPECT_NE(std::find(second.begin(), second.end(), kPeak), second.end())
      << "the optimum of 262144 configs is not in the first model-guided batch";
  // The batch is mostly near the optimum: its median distance is small.
  std::vector<double> d;
  for (const auto& c : second) d.push_back(-truth(c));
  std::sort(d.begin(), d.end());
  EXPECT_LE(d[d.size() / 2], 3.0);
}

TEST(ModelGuidedStrategy, NeverProposesAConfigTwice) {
  ConfigSpace space({{"a", {0, 1, 2, 3, 4, 5, 6, 7}, ""}, {"b", {0, 1, 2, 3, 4, 5, 6, 7}, ""}}, {});
  AnnealingParams p;
  p.chains = 8;
  p.steps = 20;
  p.min_rows = 4;
  ModelGuidedStrategy s(space, 1, std::make_unique<KnownFunction>(), identity(), p);
  std::set<Config> seen;
  size_t total = 0;
  while (true) {
    auto batch = s.propose(7);
    if (batch.empty()) break;
    for (const auto& c : batch) EXPECT_TRUE(seen.insert(c).second) << "proposed twice";
    total += batch.size();
    s.observe(batch, std::vector<TrialOutcome>(batch.size(), TrialOutcome{true, 1.0}));
  }
  EXPECT_EQ(total, 64u);
}

TEST(ModelGuidedStrategy, ReplaysExactlyUnderASeed) {
  auto space = guided_big_space();
  auto run = [&](uint64_t seed) {
    ModelGuidedStrategy s(space, seed, std::make_unique<KnownFunction>(), identity());
    std::vector<Config> all;
    for (int round = 0; round < 3; ++round) {
      auto b = s.propose(12);
      s.observe(b, outcomes_of(b));
      all.insert(all.end(), b.begin(), b.end());
    }
    return all;
  };
  EXPECT_EQ(run(9), run(9));
  EXPECT_NE(run(9), run(10));
}

TEST(ModelGuidedStrategy, HistoryIsNeverProposedAndTrainsTheModel) {
  auto space = guided_big_space();
  auto model = std::make_unique<KnownFunction>();
  auto* raw = model.get();
  ModelGuidedStrategy s(space, 2, std::move(model), identity());
  std::vector<Config> history{kPeak};
  std::vector<TrialOutcome> outcomes{{true, 0.05}};
  for (int i = 0; i < 9; ++i) {
    history.push_back(space.at(static_cast<uint64_t>(i) * 1000));
    outcomes.push_back({false, 0});
  }
  s.observe(history, outcomes);
  EXPECT_EQ(raw->rows_seen, 10u);
  auto batch = s.propose(16);
  EXPECT_EQ(std::find(batch.begin(), batch.end(), kPeak), batch.end());
}

TEST(ModelGuidedStrategy, TransferredRowsAloneMakeTheFirstBatchModelGuided) {
  auto space = guided_big_space();
  auto model = std::make_unique<KnownFunction>();
  auto* raw = model.get();
  ModelGuidedStrategy s(space, 6, std::move(model), identity());
  // Ten records "of another workload": no own rows, no minimum beyond the model's.
  for (int i = 0; i < 10; ++i) {
    Config c = space.at(static_cast<uint64_t>(i) * 7919);
    s.add_transfer(std::vector<float>(c.begin(), c.end()), static_cast<float>(i) / 10.0f);
  }
  s.observe({}, {});
  EXPECT_EQ(raw->rows_seen, 10u);
  auto batch = s.propose(16);
  EXPECT_NE(std::find(batch.begin(), batch.end(), kPeak), batch.end()) << "the first batch was not model-guided";
}

TEST(ModelGuidedStrategy, TransferOfZeroOneAndManyRecords) {
  auto space = guided_big_space();
  AnnealingParams p = annealing_only();
  p.min_rows = 1;  // the model's own minimum; transfer adds none of its own
  for (int records : {0, 1, 500}) {
    auto model = std::make_unique<KnownFunction>();
    auto* raw = model.get();
    ModelGuidedStrategy s(space, 9, std::move(model), identity(), p);
    for (int i = 0; i < records; ++i) {
      Config c = space.at(static_cast<uint64_t>(i) * 523 % space.size());
      s.add_transfer(std::vector<float>(c.begin(), c.end()), 0.5f);
    }
    s.observe({}, {});
    EXPECT_EQ(s.transfer_rows(), static_cast<size_t>(records));
    // A ranking needs two rows: many records train the model at once; one waits for a single own row.
    EXPECT_EQ(raw->rows_seen, records >= 2 ? static_cast<size_t>(records) : 0u) << records << " records";
    auto batch = s.propose(16);
    ASSERT_EQ(batch.size(), 16u);
    const bool guided = std::find(batch.begin(), batch.end(), kPeak) != batch.end();
    EXPECT_EQ(guided, records >= 2) << records << " records";
    std::vector<Config> one(batch.begin(), batch.begin() + 1);
    s.observe(one, outcomes_of(one));
    const size_t rows = static_cast<size_t>(records) + 1;
    EXPECT_EQ(raw->rows_seen, rows >= 2 ? rows : 0u) << records << " records and one own row";
  }
}

TEST(ModelGuidedStrategy, ATransferOnlyFirstBatchHedgesWithWellScoredRandomPicks) {
  auto space = guided_big_space();
  AnnealingParams full;
  full.first_batch = 0;  // batches of 32 from the start: this test is about the hedge, not the batch size
  ModelGuidedStrategy s(space, 11, std::make_unique<KnownFunction>(), identity(), full);
  for (int i = 0; i < 20; ++i) {
    Config c = space.at(static_cast<uint64_t>(i) * 7919);
    s.add_transfer(std::vector<float>(c.begin(), c.end()), 0.5f);
  }
  s.observe({}, {});
  auto batch = s.propose(32);
  ASSERT_EQ(batch.size(), 32u);
  // Model picks (even positions) sit near the model's optimum; hedge picks (odd positions) are spread
  // out, yet better than a uniform draw: from the best quarter of a sample as the model scores it.
  double model_d = 0, hedge_d = 0;
  for (size_t i = 0; i < batch.size(); ++i) (i % 2 ? hedge_d : model_d) += -truth(batch[i]) / 16.0;
  EXPECT_LT(model_d, hedge_d);
  double uniform_d = 0;
  Rng rng(11);
  for (int i = 0; i < 2000; ++i) uniform_d += -truth(space.sample(rng)) / 2000.0;
  EXPECT_LT(hedge_d, uniform_d);
  EXPECT_EQ(std::set<Config>(batch.begin(), batch.end()).size(), batch.size());

  // Once the session has its own rows, the batch is the model's again (5% random).
  s.observe(batch, outcomes_of(batch));
  auto next = s.propose(32);
  double next_d = 0;
  for (const auto& c : next) next_d += -truth(c) / 32.0;
  EXPECT_LT(next_d, hedge_d);
}

TEST(ModelGuidedStrategy, WithAPriorATransferOnlyBatchHedgesWithThePriorsBestFirst) {
  // The transferred model (the known function, peak (5,2,7,1,4,6)) and a prior that peaks elsewhere
  // ((0,0,0,0,0,0)): the hedge is the prior's picks, interleaved from position 0, so a good prior is
  // measured first even when a model of another shape or GPU is sure of itself.
  auto space = guided_big_space();
  AnnealingParams full;
  full.first_batch = 0;
  full.prior_pool = 4096;
  auto prior = [](const Config& c) {
    double s = 0;
    for (int64_t v : c) s -= static_cast<double>(v);
    return s;
  };
  ModelGuidedStrategy s(space, 11, std::make_unique<KnownFunction>(), identity(), full, prior);
  for (int i = 0; i < 20; ++i) {
    Config c = space.at(static_cast<uint64_t>(i) * 7919);
    s.add_transfer(std::vector<float>(c.begin(), c.end()), 0.5f);
  }
  s.observe({}, {});
  auto batch = s.propose(16);
  ASSERT_EQ(batch.size(), 16u);
  // Position 0 is the prior's best among the configs it ranked (a sample of the large space: near 0s).
  double prior_half = 0, model_half = 0;
  for (size_t i = 0; i < batch.size(); ++i) (i % 2 ? model_half : prior_half) += prior(batch[i]) / 8.0;
  EXPECT_GT(prior(batch[0]), -6.0) << "the prior's best of 4096 sampled configs sits near its peak";
  EXPECT_GT(prior_half, model_half) << "even positions are the prior's picks";
  EXPECT_EQ(std::set<Config>(batch.begin(), batch.end()).size(), batch.size());
  // The model's own picks (odd positions) still sit near its optimum.
  double model_d = 0;
  for (size_t i = 1; i < batch.size(); i += 2) model_d += -truth(batch[i]) / 8.0;
  EXPECT_LT(model_d, 6.0);
}

TEST(ModelGuidedStrategy, DiversityWidensTheBatchWithoutLeavingTheGoodRegion) {
  auto space = guided_big_space();
  auto batch_of = [&space](double diversity) {
    AnnealingParams p = annealing_only();
    p.diversity = diversity;
    p.epsilon = 0;
    ModelGuidedStrategy s(space, 21, std::make_unique<KnownFunction>(), identity(), p);
    auto first = s.propose(16);
    s.observe(first, outcomes_of(first));
    return s.propose(16);
  };
  auto distinct_values = [](const std::vector<Config>& batch) {
    size_t n = 0;
    for (size_t k = 0; k < batch.front().size(); ++k) {
      std::set<int64_t> v;
      for (const auto& c : batch) v.insert(c[k]);
      n += v.size();
    }
    return n;
  };
  const auto plain = batch_of(0.0), diverse = batch_of(0.5);
  EXPECT_GT(distinct_values(diverse), distinct_values(plain));
  // Still the model's region: the best of the batch is the optimum in both.
  EXPECT_NE(std::find(plain.begin(), plain.end(), kPeak), plain.end());
  EXPECT_NE(std::find(diverse.begin(), diverse.end(), kPeak), diverse.end());
}

TEST(ModelGuidedStrategy, APriorRanksTheFirstBatchWhichStartsSmallAndGrows) {
  // 4 knobs x 8 values = 4096 configs, all ranked by the prior (prior_pool 4096).
  std::vector<Knob> knobs;
  for (const char* n : {"a", "b", "c", "d"}) knobs.push_back({n, {0, 1, 2, 3, 4, 5, 6, 7}, ""});
  ConfigSpace space(std::move(knobs), {});
  const Config peak{5, 2, 7, 1};
  auto prior = [&peak](const Config& c) {
    double s = 0;
    for (size_t i = 0; i < c.size(); ++i) s -= std::abs(static_cast<double>(c[i] - peak[i]));
    return s;
  };
  ModelGuidedStrategy s(space, 4, std::make_unique<KnownFunction>(), identity(), AnnealingParams{}, prior);
  auto first = s.propose(64);
  EXPECT_EQ(first.size(), 8u) << "with a prior the first batch is capped at prior_first_batch";
  EXPECT_EQ(first.front(), peak) << "the prior's best comes first";
  // Without a prior the same seed's first batch is a random draw, which almost never holds the peak.
  ModelGuidedStrategy cold(space, 4, std::make_unique<KnownFunction>(), identity());
  auto random_first = cold.propose(64);
  EXPECT_EQ(random_first.size(), 8u) << "first_batch";
  EXPECT_EQ(std::count(random_first.begin(), random_first.end(), peak), 0);
  // Batches grow with the model's own rows: 8 rows seen -> first_batch (8), then 16 -> 8, ..., 40 -> 40 / 4 = 10.
  std::vector<TrialOutcome> out(first.size(), TrialOutcome{true, 1.0});
  s.observe(first, out);
  for (size_t rows = 8; rows < 40; rows += 8) {
    auto next = s.propose(64);
    EXPECT_EQ(next.size(), 8u) << rows << " rows";
    s.observe(next, std::vector<TrialOutcome>(next.size(), TrialOutcome{true, 1.0}));
  }
  EXPECT_EQ(s.propose(64).size(), 10u);
}

// 4 knobs x 8 values (4096 configs, all ranked by a prior), and a prior that peaks at (5,2,7,1).
ConfigSpace prior_space() {
  std::vector<Knob> knobs;
  for (const char* n : {"a", "b", "c", "d"}) knobs.push_back({n, {0, 1, 2, 3, 4, 5, 6, 7}, ""});
  return ConfigSpace(std::move(knobs), {});
}
const Config kPriorPeak{5, 2, 7, 1};
double distance_prior(const Config& c) {
  double s = 0;
  for (size_t i = 0; i < c.size(); ++i) s -= std::abs(static_cast<double>(c[i] - kPriorPeak[i]));
  return s;
}

TEST(ModelGuidedStrategy, ARefinerReRanksThePriorsBestBeforeTheFirstBatch) {
  auto space = prior_space();
  // What compiling tells: the prior's favourite does not compile, and (5,2,7,2), which the prior ranks
  // below several others, is the fastest; nothing more is known of the rest (NaN).
  const Config fastest{5, 2, 7, 2};
  std::vector<std::vector<Config>> asked;
  PriorRefiner refine = [&](const std::vector<Config>& configs) {
    asked.push_back(configs);
    std::vector<double> out;
    for (const auto& c : configs)
      out.push_back(c == kPriorPeak ? -1e30 : c == fastest ? 1.0 : std::numeric_limits<double>::quiet_NaN());
    return out;
  };
  AnnealingParams params;
  params.prior_refine = 32;
  ModelGuidedStrategy s(space, 4, std::make_unique<KnownFunction>(), identity(), params, distance_prior, refine);
  const auto first = s.propose(64);
  ASSERT_EQ(asked.size(), 1u) << "the refiner runs once, before the first batch";
  ASSERT_EQ(asked[0].size(), 32u) << "on the prior's best prior_refine configs";
  EXPECT_EQ(asked[0].front(), kPriorPeak);
  for (const auto& c : asked[0]) EXPECT_GE(distance_prior(c), -2) << "only the prior's best are refined";
  EXPECT_EQ(s.prior_refined(), 32u);
  EXPECT_EQ(first.size(), params.prior_first_batch) << "a prior's first batch is small";
  EXPECT_EQ(first.front(), fastest) << "the refined best comes first";
  EXPECT_EQ(std::count(first.begin(), first.end(), kPriorPeak), 0) << "a config that does not compile ranks last";
  // Without the refiner the prior's own favourite comes first.
  ModelGuidedStrategy plain(space, 4, std::make_unique<KnownFunction>(), identity(), params, distance_prior);
  EXPECT_EQ(plain.propose(64).front(), kPriorPeak);
  // The same seed replays the same batches, and the refiner is not asked again.
  ModelGuidedStrategy again(space, 4, std::make_unique<KnownFunction>(), identity(), params, distance_prior, refine);
  EXPECT_EQ(again.propose(64), first);
  s.observe(first, std::vector<TrialOutcome>(first.size(), TrialOutcome{true, 1.0}));
  s.propose(64);
  EXPECT_EQ(asked.size(), 2u) << "one call per strategy";
}

TEST(ModelGuidedStrategy, TheUpperConfidenceBoundPicksAnUnexploredHighMeanCandidate) {
  auto space = guided_big_space();
  auto batch_of = [&space](double kappa) {
    AnnealingParams p = annealing_only();
    p.ucb_kappa = kappa;
    ModelGuidedStrategy s(space, 5, std::make_unique<UncertainFunction>(), identity(), p);
    auto first = s.propose(16);
    s.observe(first, outcomes_of(first));
    return s.propose(16);
  };
  // (0,2,7,1,4,6): mean -5 (five steps from the peak), spread 8: bound 3, above the peak's 0.
  const Config unexplored{0, 2, 7, 1, 4, 6};
  const auto bold = batch_of(1.0), plain = batch_of(0.0);
  ASSERT_FALSE(bold.empty());
  EXPECT_EQ(bold.front(), unexplored) << "the best bound comes first";
  size_t bold_a0 = 0, plain_a0 = 0;
  for (const auto& c : bold) bold_a0 += c[0] == 0;
  for (const auto& c : plain) plain_a0 += c[0] == 0;
  EXPECT_GE(bold_a0, 8u) << "most of the batch explores the uncertain region";
  EXPECT_EQ(plain_a0, 0u) << "by the mean alone the region is poor";
  EXPECT_NE(std::find(plain.begin(), plain.end(), kPeak), plain.end());
}

/// The known function, upside down while it was last fitted on 100 rows or more (the transferred records
/// of a workload whose best configs are this one's worst).
class MisledByManyRows final : public costmodel::CostModel {
 public:
  bool fit(const costmodel::FeatureMatrix& x, const std::vector<float>&, const std::vector<float>&, std::string*) override {
    rows_seen = x.rows;
    return true;
  }
  std::vector<float> predict(const costmodel::FeatureMatrix& x) const override {
    std::vector<float> out = known_.predict(x);
    if (rows_seen >= 100)
      for (float& v : out) v = -v;
    return out;
  }
  size_t rows_seen = 0;

 private:
  KnownFunction known_;
};

TEST(ModelGuidedStrategy, TheLocalShareIsTheModelsBestNearTheIncumbent) {
  auto space = guided_big_space();
  AnnealingParams p;
  p.local_share = 1;  // the whole model share from the incumbent's neighbourhood
  p.local_seeds = 1;
  p.local_hops = 2;
  p.epsilon = 0;
  p.first_batch = 8;
  ModelGuidedStrategy s(space, 3, std::make_unique<KnownFunction>(), identity(), p);
  std::vector<Config> history;
  for (uint64_t i = 1; i <= 8; ++i) history.push_back(space.at(i * 30011));
  std::vector<TrialOutcome> out;  // every config runs; the better by the known function, the faster
  for (const auto& c : history) out.push_back({true, 50.0 - truth(c)});
  s.observe(history, out);
  const Config incumbent = *std::max_element(history.begin(), history.end(),
                                             [](const Config& a, const Config& b) { return truth(a) < truth(b); });
  auto batch = s.propose(8);
  ASSERT_EQ(batch.size(), 8u);
  for (const auto& c : batch) {
    int changed = 0;
    for (size_t k = 0; k < c.size(); ++k) changed += c[k] != incumbent[k] ? 1 : 0;
    EXPECT_GE(changed, 1);
    EXPECT_LE(changed, 2) << "a local pick is at most local_hops knob changes from the incumbent";
  }
  // The first pick moves the two knobs farthest from the peak onto it: truth(incumbent) + the two
  // largest |incumbent_k - peak_k|.
  std::vector<double> gaps;
  for (size_t k = 0; k < incumbent.size(); ++k) gaps.push_back(std::abs(static_cast<double>(incumbent[k] - kPeak[k])));
  std::sort(gaps.rbegin(), gaps.rend());
  EXPECT_EQ(truth(batch.front()), truth(incumbent) + gaps[0] + gaps[1]);
}

TEST(ModelGuidedStrategy, BatchGrowthSetsHowFastBatchesGrow) {
  auto space = guided_big_space();
  AnnealingParams p;
  p.first_batch = 8;
  p.batch_growth = 0.25;
  ModelGuidedStrategy s(space, 5, std::make_unique<KnownFunction>(), identity(), p);
  // At most max(8, rows / 4): rows 0, 8, 16, 24, 32 -> 8; 40 -> 10; 50 -> 12; 62 -> 15 (15.5 rounded down).
  std::vector<size_t> sizes;
  for (int round = 0; round < 8; ++round) {
    auto b = s.propose(64);
    sizes.push_back(b.size());
    s.observe(b, std::vector<TrialOutcome>(b.size(), TrialOutcome{true, 1.0}));
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{8, 8, 8, 8, 8, 10, 12, 15}));
}

TEST(ModelGuidedStrategy, TransferredRowsThatMispredictThisWorkloadAreDropped) {
  auto space = guided_big_space();
  for (bool misled : {true, false}) {
    std::unique_ptr<costmodel::CostModel> model;
    if (misled) model = std::make_unique<MisledByManyRows>();
    else model = std::make_unique<KnownFunction>();
    auto* raw = model.get();
    ModelGuidedStrategy s(space, 8, std::move(model), identity(), annealing_only());  // a first batch of 16
    for (int i = 0; i < 100; ++i) {
      Config c = space.at(static_cast<uint64_t>(i) * 2621);
      s.add_transfer(std::vector<float>(c.begin(), c.end()), 0.5f);
    }
    s.observe({}, {});
    auto first = s.propose(16);
    std::vector<TrialOutcome> out;  // every config runs; the better by the known function, the faster
    for (const auto& c : first) out.push_back({true, 50.0 - truth(c)});
    s.observe(first, out);
    EXPECT_EQ(s.transfer_dropped(), misled) << (misled ? "misled" : "helped");
    const size_t rows = misled ? static_cast<MisledByManyRows*>(raw)->rows_seen
                               : static_cast<KnownFunction*>(raw)->rows_seen;
    EXPECT_EQ(rows, misled ? 16u : 116u) << "the refit after the check uses the transferred rows only if kept";
  }
}

TEST(ModelGuidedStrategy, ExpectsNothingMoreOnceTheModelsOptimumIsMeasured) {
  // Speeds exp(truth / 10): the known function's scores are exactly on the scale of log speed, so every
  // prediction holds and the estimate is what the best-predicted config would add to the incumbent.
  auto space = guided_big_space();
  ModelGuidedStrategy s(space, 3, std::make_unique<KnownFunction>(), identity());
  auto outcomes = [](const std::vector<Config>& cs) {
    std::vector<TrialOutcome> out;
    for (const auto& c : cs) out.push_back({true, std::exp(-truth(c) / 10)});
    return out;
  };
  EXPECT_LT(s.expected_improvement(), 0) << "no estimate before anything is measured";
  bool peak_measured = false, estimated_before_peak = false;
  for (int round = 0; round < 40 && !peak_measured; ++round) {
    auto batch = s.propose(64);
    ASSERT_FALSE(batch.empty());
    const bool has_peak = std::find(batch.begin(), batch.end(), kPeak) != batch.end();
    if (s.expected_improvement() >= 0 && has_peak) {
      estimated_before_peak = true;
      EXPECT_GT(s.expected_improvement(), 0.05) << "a batch that holds the optimum, predicted exactly";
    }
    s.observe(batch, outcomes(batch));
    peak_measured = has_peak;
  }
  ASSERT_TRUE(peak_measured);
  // Until enough predictions were measured there is no estimate; then it is nothing.
  for (int round = 0; round < 8; ++round) {
    auto batch = s.propose(64);
    if (s.expected_improvement() >= 0) break;
    s.observe(batch, outcomes(batch));
  }
  ASSERT_GE(s.expected_improvement(), 0) << "predictions were measured, so there is an estimate";
  EXPECT_LT(s.expected_improvement(), 1e-6) << "nothing beats the optimum, and every prediction held";
  RecordProperty("estimated_before_peak", estimated_before_peak ? 1 : 0);
}

}  // namespace
}  // namespace tuner::search
