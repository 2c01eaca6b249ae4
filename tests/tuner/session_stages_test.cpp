// The tuning session drives its strategy exactly as the interface says
// (search/strategy.h): observe() the database's records on resume, then
// propose a batch, observe its results, and so on. The test runs sessions on
// a sim device, then replays the same strategy (same name, seed, space) in a
// plain propose/observe loop fed with the recorded outcomes: every batch the
// loop proposes must be the configs the session recorded, in order. Any extra
// or missing observe(), a reordered batch, or a session stage that changes
// what the strategy sees would make them diverge.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "templates/registry.h"
#include "tuner/strategy_factory.h"
#include "tuner/tuning_session.h"

namespace tuner {
namespace {

class SessionStages : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tuner_stages_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  TuneOptions options(const std::string& strategy, int64_t trials) const {
    TuneOptions o;
    o.workload = templates::parse_workload("gemm", "M=640,N=384,K=256", "f32");
    o.trials = trials;
    o.strategy = strategy;
    o.seed = 9;
    o.batch_size = 8;
    o.remeasure_top = 0;
    o.transfer = false;
    o.worker_executable = TUNER_BIN;
    return o;
  }

  /// The search trials in the order they were stored.
  static std::vector<db::ResultRow> search_rows(db::TuningDb& db) {
    db::QueryFilter f;
    f.op = "gemm";
    std::vector<db::ResultRow> out;
    for (auto& r : db.history(f))
      if (r.trial.purpose == "search") out.push_back(std::move(r));
    return out;
  }

  /// Drives a fresh strategy over the recorded outcomes: it observes the first `resumed` rows at once (as a
  /// resumed session does), then proposes batches of `batch` that must equal the next recorded configs.
  static void expect_same_as_plain_loop(const TuneOptions& o, const std::vector<db::ResultRow>& rows,
                                        size_t resumed, size_t batch) {
    const DeviceTarget device = resolve_device("sim:h100-sxm");
    const auto& tmpl = templates::find_template(o.workload.op, o.workload.dtype, &device.limits, "");
    const search::ConfigSpace space = tmpl.space(o.workload, device.limits);
    auto strategy = build_strategy(o.strategy, space, o.seed, tmpl, o.workload, device.gpu);
    std::vector<search::Config> configs;
    std::vector<search::TrialOutcome> outcomes;
    for (const auto& r : rows) {
      configs.push_back(space.from_json(nlohmann::json::parse(r.trial.config_json)));
      outcomes.push_back({r.trial.status == "ok", r.trial.time_ms});
    }
    strategy->observe({configs.begin(), configs.begin() + static_cast<std::ptrdiff_t>(resumed)},
                      {outcomes.begin(), outcomes.begin() + static_cast<std::ptrdiff_t>(resumed)});
    for (size_t at = resumed; at < rows.size(); at += batch) {
      const size_t n = std::min(batch, rows.size() - at);
      const auto proposed = strategy->propose(n);
      ASSERT_EQ(proposed.size(), n) << o.strategy << " at trial " << at;
      for (size_t i = 0; i < n; ++i)
        EXPECT_EQ(proposed[i], configs[at + i]) << o.strategy << ": trial " << at + i << " differs";
      strategy->observe({configs.begin() + static_cast<std::ptrdiff_t>(at),
                         configs.begin() + static_cast<std::ptrdiff_t>(at + n)},
                        {outcomes.begin() + static_cast<std::ptrdiff_t>(at),
                         outcomes.begin() + static_cast<std::ptrdiff_t>(at + n)});
    }
  }

  std::filesystem::path dir_;
};

// Two batches of 8 per strategy: the first drawn at random (no prior on a sim device), then one that
// depends on what the session fed observe(): xgb's model and bo's process are fitted from 8 rows, and
// every strategy leaves out the configs it saw. (ga stays random until 32 configs are measured, 24
// did not reach it either; AResumedSessionObservesTheRecordsFirst runs xgb's third and fourth batches.)
TEST_F(SessionStages, EachStrategyProposesWhatAPlainLoopOverItProposes) {
  const auto device = resolve_device("sim:h100-sxm");
  for (const char* name : {"xgb", "bo", "ga", "random"}) {
    db::TuningDb db((dir_ / (std::string(name) + ".db")).string());
    const TuneSummary sum = run_tuning(options(name, 16), device, db);
    EXPECT_EQ(sum.stop_reason, "budget of 16 trials reached") << name;
    const auto rows = search_rows(db);
    ASSERT_EQ(rows.size(), 16u) << name;
    expect_same_as_plain_loop(options(name, 16), rows, 0, 8);
  }
}

TEST_F(SessionStages, AResumedSessionObservesTheRecordsFirst) {
  const auto device = resolve_device("sim:h100-sxm");
  db::TuningDb db((dir_ / "resume.db").string());
  run_tuning(options("xgb", 16), device, db);  // 16 records, then a second session continues to 32
  run_tuning(options("xgb", 32), device, db);
  EXPECT_EQ(run_tuning(options("xgb", 32), device, db).stop_reason, "budget of 32 trials reached")
      << "a third session finds the budget spent";
  const auto rows = search_rows(db);
  ASSERT_EQ(rows.size(), 32u);
  expect_same_as_plain_loop(options("xgb", 32), rows, 16, 8);
}

TEST_F(SessionStages, AStrategyThatExpectsTooLittleStopsTheSessionAndSaysWhy) {
  const auto device = resolve_device("sim:h100-sxm");
  db::TuningDb db((dir_ / "ei.db").string());
  TuneOptions o = options("bo", 64);
  // bo's first batch is random, and it gives no estimate until 32 of its process's predictions were measured (8
  // random, then four batches of 8); its proposal then expects far less than a 10x speed-up.
  o.min_expected_improvement = 10.0;
  const TuneSummary sum = run_tuning(o, device, db);
  EXPECT_TRUE(sum.early_stopped);
  EXPECT_EQ(sum.stop_reason.rfind("expected improvement of the next batch", 0), 0u) << sum.stop_reason;
  EXPECT_EQ(search_rows(db).size(), 40u) << "no stop before 32 of bo's predictions are measured";
  // Without the threshold the same session runs to its budget.
  db::TuningDb full((dir_ / "full.db").string());
  EXPECT_EQ(run_tuning(options("bo", 24), device, full).stop_reason, "budget of 24 trials reached");
}

TEST_F(SessionStages, XgbStopsOnceItsTrustedEstimateIsTooLittle) {
  const auto device = resolve_device("sim:h100-sxm");
  db::TuningDb db((dir_ / "xgb_ei.db").string());
  TuneOptions o = options("xgb", 64);
  o.min_expected_improvement = 10.0;
  const TuneSummary sum = run_tuning(o, device, db);
  EXPECT_TRUE(sum.early_stopped);
  EXPECT_EQ(sum.stop_reason.rfind("expected improvement of the next batch", 0), 0u) << sum.stop_reason;
  // No estimate until 32 of the model's predictions were measured: a random first batch of 8, then four
  // model-guided batches of 8.
  EXPECT_EQ(search_rows(db).size(), 40u);
}

}  // namespace
}  // namespace tuner
