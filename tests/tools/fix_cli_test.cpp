// `tuner tune --fix KNOB=V,..`: the session searches only the configs with those knob values (and
// measures exactly one config when every knob is fixed, as a profiler run needs); a knob the template
// lacks, a value the knob does not take, values no config has together, a malformed list and --fix with
// several templates are bad input (exit 2, one line naming the value and what is allowed).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_fixture.h"

namespace {

using tuner_cli_test::Cli;

const std::string kTune = "tune --op gemm --shape M=256,N=256,K=256 --dtype f16 --template gemm_tc_mma "
                          "--device sim:h100-sxm --remeasure 0 --transfer none --json";

TEST_F(Cli, FixedKnobsHoldInEveryMeasuredConfig) {
  auto r = run(kTune + " --trials 8 --batch 8 --fix BM=64,STAGES=3 --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["measured"], 8);
  auto h = run("query --db " + db() + " --history --json");
  ASSERT_EQ(h.code, 0) << h.err;
  const auto hist = nlohmann::json::parse(h.out);
  ASSERT_EQ(hist.size(), 8u);
  for (const auto& t : hist) {
    EXPECT_EQ(t["config"]["BM"], 64) << t["config"];
    EXPECT_EQ(t["config"]["STAGES"], 3) << t["config"];
  }
  // The same budget unpinned measures other values too: the pin is what held them.
  auto u = run(kTune + " --trials 8 --batch 8 --db " + (dir_ / "u.db").string());
  ASSERT_EQ(u.code, 0) << u.err;
  auto uh = nlohmann::json::parse(run("query --db " + (dir_ / "u.db").string() + " --history --json").out);
  bool other = false;
  for (const auto& t : uh) other = other || t["config"]["BM"] != 64 || t["config"]["STAGES"] != 3;
  EXPECT_TRUE(other);
}

TEST_F(Cli, EveryKnobFixedMeasuresThatOneConfig) {
  // Take a config the template offers, then pin all its knobs.
  auto first = run(kTune + " --trials 1 --db " + (dir_ / "a.db").string());
  ASSERT_EQ(first.code, 0) << first.err;
  const auto cfg = nlohmann::json::parse(first.out)["best"]["config"];
  std::string fix;
  for (auto it = cfg.begin(); it != cfg.end(); ++it)
    fix += (fix.empty() ? "" : ",") + it.key() + "=" + std::to_string(it.value().get<int64_t>());
  auto r = run(kTune + " --trials 200 --fix " + fix + " --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["space_size"], 1);
  EXPECT_EQ(j["measured"], 1);
  EXPECT_EQ(j["best"]["config"], cfg);
}

// On a database that already holds the workload's trials outside the fix (an earlier run with other
// values and no re-measuring): the budget counts the trials inside the fix only, the finalists re-measured
// and the best reported are inside it, and the run does not fail on the others.
TEST_F(Cli, AFixOnASharedDatabaseCountsReMeasuresAndReportsOnlyItsOwnConfigs) {
  auto a = run(kTune + " --trials 8 --batch 8 --db " + db());
  ASSERT_EQ(a.code, 0) << a.err;
  const auto first = nlohmann::json::parse(a.out);
  const int64_t best_bm = first["best"]["config"]["BM"].get<int64_t>();
  const int64_t other_bm = best_bm == 64 ? 128 : 64;  // a BM the earlier best does not have
  int inside_before = 0;
  for (const auto& t : nlohmann::json::parse(run("query --db " + db() + " --history --json").out))
    inside_before += t["config"]["BM"] == other_bm ? 1 : 0;
  // The default --remeasure 5 re-measures finalists: only configs inside the fix.
  auto b = run("tune --op gemm --shape M=256,N=256,K=256 --dtype f16 --template gemm_tc_mma --device sim:h100-sxm "
               "--transfer none --json --trials 6 --batch 8 --fix BM=" + std::to_string(other_bm) + " --db " + db());
  ASSERT_EQ(b.code, 0) << b.err;
  const auto j = nlohmann::json::parse(b.out);
  EXPECT_EQ(j["measured"], std::max(0, 6 - inside_before)) << "the budget counts the trials inside the fix";
  EXPECT_EQ(j["best"]["config"]["BM"], other_bm) << "the best reported is inside the fix";
  const auto hist = nlohmann::json::parse(
      run("query --db " + db() + " --history --json --session " + std::to_string(j["session_id"].get<int64_t>())).out);
  int remeasured = 0;
  for (const auto& t : hist) {
    EXPECT_EQ(t["config"]["BM"], other_bm) << t;
    remeasured += t["purpose"] == "remeasure" ? 1 : 0;
  }
  EXPECT_GT(remeasured, 0) << "finalists were re-measured";
}

TEST_F(Cli, BadFixesAreBadInputAndTouchNothing) {
  struct Case {
    std::string fix, says, allowed;
  };
  for (const Case& c : {Case{"TILE=64", "'TILE' is not a knob", "allowed: BM, BN"},
                        Case{"BM=100", "BM=100 is not a value", "allowed: "},
                        Case{"BM=64,BM=128", "fixed twice", ""},
                        Case{"BM", "--fix 'BM' is not KNOB=INTEGER", "allowed: a comma-separated list"},
                        Case{"BM=x", "--fix 'BM=x' is not KNOB=INTEGER", "allowed:"},
                        Case{"BM=99999999999999999999", "out of range", "allowed:"},
                        Case{"''", "names no knob", "allowed:"}}) {
    auto r = run(kTune + " --trials 5 --fix " + c.fix + " --db " + db());
    EXPECT_EQ(r.code, 2) << c.fix << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.allowed), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  // Values the knobs take, but no config has together (pingpong needs two consumers).
  auto e = run("tune --op conv2d --shape N=2,H=16,W=16,C=64,K=64,R=3,S=3,stride=1,pad=1 --dtype f16 "
               "--template conv2d_igemm_wgmma --device sim:h100-sxm --trials 5 --fix PINGPONG=1,CONSUMERS=1 --db " + db());
  EXPECT_EQ(e.code, 2) << e.err;
  EXPECT_NE(e.err.find("no config of conv2d_igemm_wgmma"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("allowed: PINGPONG in {0, 1}; CONSUMERS in {1, 2}"), std::string::npos) << e.err;
  // On a replay device the space is what the file recorded: the H200 decode recording predates BN 32.
  auto rp = run("tune --op gemm --shape M=64,N=4096,K=4096 --dtype f16 --device replay:" + std::string(TUNER_SOURCE_DIR) +
                "/data/replay/gemm_f16_M64_N4096_K4096_wgmma_h200_2026-11-25.json --fix BN=32 --trials 5 --db " + db());
  EXPECT_EQ(rp.code, 2) << rp.err;
  EXPECT_NE(rp.err.find("recorded in"), std::string::npos) << rp.err;
  // It names the values the recorded configs take ("values that meet its constraints" left the user to guess).
  EXPECT_NE(rp.err.find("allowed: BN in {64, 128, 192, 256}"), std::string::npos) << rp.err;
  EXPECT_FALSE(std::filesystem::exists(db())) << "bad input is refused before the database is opened";
  // Several templates run the workload: --fix needs one named.
  auto a = run("tune --op gemm --shape M=256,N=256,K=256 --dtype f16 --device sim:h100-sxm --trials 5 --fix BM=64 --db " + db());
  EXPECT_EQ(a.code, 2) << a.err;
  EXPECT_NE(a.err.find("name one with --template"), std::string::npos) << a.err;
}

}  // namespace
