// Measuring with several workers at once (`--workers N` on sim and replay devices, `--device cuda:all`
// or a list of GPUs): every config of a batch measured exactly once, each worker started once for the
// whole session, and device lists checked before anything runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "db/tuning_db.h"
#include "tests/tools/cli_fixture.h"

namespace {

using tuner_cli_test::Cli;

TEST_F(Cli, SeveralWorkersShareEachBatchAndMeasureEveryConfigOnce) {
  auto r = run("tune --op gemm --shape M=64,N=64,K=64 --device sim:h100-sxm --trials 16 --batch 8 --workers 3 "
               "--strategy random --remeasure 0 --sim-delay-ms 20 --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["workers"], 3);
  EXPECT_EQ(j["measured"], 16);
  // Two batches, three workers, each started once: a worker outlives the batch its lane started it in.
  EXPECT_EQ(j["worker_starts"], 3);
  auto store = tuner::db::TuningDb::open_existing(db());
  std::set<std::string> configs;
  for (const auto& row : store.history({})) configs.insert(row.trial.config_json);
  EXPECT_EQ(configs.size(), 16u);
}

TEST_F(Cli, DeviceListsAndWorkerCountsAreCheckedBeforeAnythingRuns) {
  const std::string base = "tune --op gemm --shape M=64,N=64,K=64 --trials 4 --db " + db() + " ";
  std::vector<std::pair<std::string, std::string>> cases = {
      {base + "--device cuda:0,0", "names cuda:0 twice"},
      {base + "--device cuda:1,", "malformed device list"},
      {base + "--device sim:h100-sxm --workers 0", "--workers 0"},
      {base + "--device sim:h100-sxm --workers 65", "--workers 65"},
  };
  if (!std::filesystem::exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1"))
    cases.push_back({base + "--device cuda:all", "cuda:all"});
  for (const auto& [args, needle] : cases) {
    auto r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db())) << "a refused command created the database";
}

}  // namespace
