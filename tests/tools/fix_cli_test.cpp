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

TEST_F(Cli, BadFixesAreBadInputAndTouchNothing) {
  struct Case {
    std::string fix, says, allowed;
  };
  for (const Case& c : {Case{"TILE=64", "'TILE' is not a knob", "allowed: BM, BN"},
                        Case{"BM=100", "BM=100 is not a value", "allowed: "},
                        Case{"BM=64,BM=128", "fixed twice", ""},
                        Case{"BM", "--fix 'BM' is not KNOB=INTEGER", "allowed: a comma-separated list"},
                        Case{"BM=x", "--fix 'BM=x' is not KNOB=INTEGER", "allowed:"}}) {
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
  EXPECT_FALSE(std::filesystem::exists(db())) << "bad input is refused before the database is opened";
  // Several templates run the workload: --fix needs one named.
  auto a = run("tune --op gemm --shape M=256,N=256,K=256 --dtype f16 --device sim:h100-sxm --trials 5 --fix BM=64 --db " + db());
  EXPECT_EQ(a.code, 2) << a.err;
  EXPECT_NE(a.err.find("name one with --template"), std::string::npos) << a.err;
}

}  // namespace
