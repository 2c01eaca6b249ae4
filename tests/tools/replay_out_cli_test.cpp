// `tune --replay-out FILE` interrupted: a file already there is never replaced by a part of the space (a Ctrl-C in
// the first moments turned a 3,607-config recording into an empty one that could not be read back), a part goes
// beside it as FILE-partial and replays, and nothing measured writes nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_fixture.h"

namespace {

using tuner_cli_test::Cli;
using tuner_cli_test::slurp;

/// Spawns `args`, waits until `ready` holds (or 10 s), sends SIGINT and returns the exit code.
template <class Ready>
int interrupted(pid_t pid, Ready ready) {
  for (int i = 0; i < 1000 && !ready(); ++i) usleep(10 * 1000);
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(Cli, AnInterruptedReplayOutNeverReplacesTheFileThere) {
  const std::string keep = (dir_ / "keep.json").string(), partial = (dir_ / "keep-partial.json").string();
  const std::string precious = "{\"a recording\": \"of an hour of a GPU\"}\n";
  std::ofstream(keep) << precious;
  const std::string out = (dir_ / "run.out").string();
  const pid_t pid = spawn("tune --op softmax --shape rows=256,cols=1024 --device sim:h100-sxm --trials 400 --batch 2 "
                          "--sim-delay-ms 20 --seed 3 --replay-out " + keep + " --db " + db(), out);
  ASSERT_GT(pid, 0);
  const int code = interrupted(pid, [&] {
    const auto h = run("query --db " + db() + " --history --json");
    return h.code == 0 && nlohmann::json::parse(h.out).size() >= 2;
  });
  EXPECT_EQ(code, 128 + SIGINT) << slurp(out + ".err");
  EXPECT_EQ(slurp(keep), precious) << "the file named is left as it was";
  ASSERT_TRUE(std::filesystem::exists(partial)) << slurp(out);
  EXPECT_NE(slurp(out).find("written to " + partial + " (interrupted: a part of the space)"), std::string::npos)
      << slurp(out);
  // The part is a recording that replays.
  const auto replay = run("tune --op softmax --shape rows=256,cols=1024 --device replay:" + partial +
                          " --trials 2 --quiet --db " + (dir_ / "r.db").string());
  EXPECT_EQ(replay.code, 0) << replay.err;
}

TEST_F(Cli, AReplayOutInterruptedBeforeAnyMeasurementWritesNothing) {
  const std::string keep = (dir_ / "keep.json").string();
  const std::string precious = "{\"a recording\": 1}\n";
  std::ofstream(keep) << precious;
  const std::string out = (dir_ / "run.out").string();
  // The compiled prior compiles its first batch, one at a time on a cold cache, before anything is measured: the
  // interrupt comes in those compiles (as in cli_test.cpp's InterruptDoesNotWaitForTheCompiledPriorsBatchOfCompiles).
  const std::string cache = (dir_ / "cache").string();
  setenv("TUNER_CACHE_DIR", cache.c_str(), 1);
  const pid_t pid = spawn("tune --op softmax --shape rows=4096,cols=4096 --dtype f16 --device sim:h100-sxm --trials 30 "
                          "--prior compiled --compile-threads 1 --json --replay-out " + keep + " --db " + db(), out);
  unsetenv("TUNER_CACHE_DIR");
  ASSERT_GT(pid, 0);
  const auto start = std::chrono::steady_clock::now();
  const int code = interrupted(pid, [&] { return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(1000); });
  ASSERT_EQ(nlohmann::json::parse(slurp(out)).at("measured"), 0) << "the case interrupts before a measurement";
  EXPECT_EQ(code, 128 + SIGINT) << slurp(out + ".err");
  EXPECT_EQ(slurp(keep), precious);
  EXPECT_NE(slurp(out + ".err").find("nothing was measured: no replay data written ('" + keep + "' is left as it was)"),
            std::string::npos)
      << slurp(out + ".err");
  for (const auto& e : std::filesystem::directory_iterator(dir_))
    EXPECT_EQ(e.path().string().find("partial"), std::string::npos) << e.path();
}

}  // namespace
