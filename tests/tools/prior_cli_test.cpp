// `tuner tune --prior`: what ranks xgb's first batch. On a replay device the
// default (auto: compiled) ranks by the analytic model fed the recording's
// registers and spills, and its first trial is within 95% of the recording's
// best; the analytic prior with estimated registers is not. On a sim device
// --prior compiled compiles the prior's best through the session's cache; a
// bad value is bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_fixture.h"

namespace {

using tuner_cli_test::Cli;

const std::string kReplay = std::string(TUNER_SOURCE_DIR) + "/data/replay/softmax_f16_rows4096_cols4096_h100_2026-11-23.json";
constexpr double kRecordedBestMs = 0.0305;  // the recording's fastest config, 0.030496 ms, rounded up

TEST_F(Cli, OnAReplayDeviceTheFirstTrialIsRankedByTheRecordedResources) {
  // The best time of a one-trial xgb session on the recording with these --prior arguments.
  auto first_trial_ms = [this](const std::string& prior, const std::string& db_name) {
    auto r = run("tune --op softmax --shape rows=4096,cols=4096 --dtype f16 --device replay:" + kReplay +
                 " --trials 1 --batch 1 --remeasure 0 --transfer none --json --db " + (dir_ / db_name).string() + prior);
    EXPECT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["measured"], 1);
    return j["best"]["time_ms"].get<double>();
  };
  const double by_resources = first_trial_ms("", "a.db");
  const double by_estimate = first_trial_ms(" --prior analytic", "b.db");
  EXPECT_LE(by_resources, kRecordedBestMs / 0.95) << "the default prior's first pick is within 95% of the best";
  EXPECT_GT(by_estimate, kRecordedBestMs / 0.95) << "estimated registers rank another config first";
}

TEST_F(Cli, TheCompiledPriorCompilesThePriorsBestAndTheMeasuredConfigComesFromTheCache) {
  const std::string base = "tune --op softmax --shape rows=256,cols=128 --dtype f16 --device sim:h100-sxm --trials 1 "
                           "--batch 1 --remeasure 0 --transfer none --json";
  auto r = run(base + " --prior compiled --db " + (dir_ / "a.db").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prior_compiles"], 64) << "the analytic model's best 64 (AnnealingParams::prior_refine) compiled";
  EXPECT_GT(j["prior_compile_s"].get<double>(), 0);
  EXPECT_LE(j["prior_compile_s"].get<double>(), j["phases"]["search_s"].get<double>()) << "counted in the search phase";
  EXPECT_EQ(j["compiled_from_cache"], 1) << "the measured config was one of them";
  // On a sim device the default (auto) compiles nothing for a prior.
  auto d = run(base + " --db " + (dir_ / "b.db").string());
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(nlohmann::json::parse(d.out)["prior_compiles"], 0);
  // Re-measured finalists are not counted again: the same run into another database takes every one of its
  // trials' cubins from the cache, and the count is its trials, not trials + finalists.
  const std::string twice = "tune --op softmax --shape rows=256,cols=128 --dtype f16 --device sim:h100-sxm --trials 6 "
                            "--batch 3 --remeasure 2 --transfer none --json --db ";
  ASSERT_EQ(run(twice + (dir_ / "c.db").string()).code, 0);
  auto again = run(twice + (dir_ / "d.db").string());
  ASSERT_EQ(again.code, 0) << again.err;
  const auto a = nlohmann::json::parse(again.out);
  EXPECT_EQ(a["remeasured"], 2);
  EXPECT_EQ(a["compiled_from_cache"], 6);
}

TEST_F(Cli, ABadPriorIsBadInput) {
  auto r = run("tune --op softmax --shape rows=64,cols=64 --dtype f16 --device sim:h100-sxm --trials 1 --prior magic --db " +
               db());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--prior 'magic'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("auto, compiled, analytic, none"), std::string::npos) << r.err;
}

}  // namespace
