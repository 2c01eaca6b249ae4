// The `tuner` program as users run it: the acceptance flow on a sim device,
// JSON output, and bad input (exit code 2, one line on stderr, database untouched).
#include <gtest/gtest.h>

#include <chrono>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "tests/tools/cli_fixture.h"

namespace {

using tuner_cli_test::Cli;
using tuner_cli_test::CmdResult;
using tuner_cli_test::slurp;

TEST_F(Cli, TuneThenQueryTheBestRecordAsJson) {
  auto t = run("tune --op gemm --shape M=1000,N=1000,K=1000 --device sim:h100-sxm --trials 8 --strategy random --seed 3 --db " + db() + " --json");
  ASSERT_EQ(t.code, 0) << t.err;
  auto tj = nlohmann::json::parse(t.out);
  EXPECT_EQ(tj["measured"], 8);
  EXPECT_TRUE(tj["estimate"].get<bool>());

  auto q = run("query --db " + db() + " --op gemm --shape M=1000,N=1000,K=1000 --device sim:h100-sxm --best --json");
  ASSERT_EQ(q.code, 0) << q.err;
  auto j = nlohmann::json::parse(q.out);
  for (const char* key : {"op", "shape", "dtype", "device", "config", "status", "time_ms", "gflops"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["op"], "gemm");
  EXPECT_EQ(j["shape"], "M=1000,N=1000,K=1000");
  EXPECT_EQ(j["dtype"], "f32");
  EXPECT_EQ(j["device"], "sim:h100-sxm");
  EXPECT_EQ(j["status"], "ok");
  EXPECT_TRUE(j["config"].contains("BM"));
  EXPECT_EQ(j["time_ms"], tj["best"]["time_ms"]);

  auto h = run("query --db " + db() + " --history --json");
  ASSERT_EQ(h.code, 0) << h.err;
  EXPECT_EQ(tj["remeasured"], 5);  // the default --remeasure 5: the five best measured once more
  const auto hj = nlohmann::json::parse(h.out);
  EXPECT_EQ(hj.size(), 8u + 5u);
  // A trial listed on its own has no pooled count or mean (every row said measurements 1); a best record has.
  EXPECT_FALSE(hj[0].contains("measurements")) << hj[0].dump();
  EXPECT_FALSE(hj[0].contains("mean_time_ms")) << hj[0].dump();
  EXPECT_TRUE(j.contains("mean_time_ms"));
  auto s = run("query --db " + db() + " --sessions");
  EXPECT_EQ(s.code, 0);
  EXPECT_NE(s.out.find("finished"), std::string::npos);
  auto table = run("query --db " + db());
  EXPECT_NE(table.out.find("estimate"), std::string::npos) << "sim figures must be labelled";
}

// `--trials all` writes a recording by default. Its name carries the dtype and the template, and it never
// replaces a file: two dtypes of one shape used to share a name, and the second run silently replaced an
// earlier recording (on a GPU, maybe an hour of it).
TEST_F(Cli, DefaultRecordingsNameTheWholeWorkloadAndNeverReplaceAFile) {
  auto record = [&](const char* dtype) {
    const std::string cmd = "cd " + dir_.string() + " && " + std::string(TUNER_BIN) +
                            " tune --op softmax --shape rows=1024,cols=2048 --dtype " + dtype +
                            " --template softmax_rows --fix ROW_THREADS=32,ROWS_PER_BLOCK=1,VEC=1 --trials all"
                            " --device sim:h100-sxm --remeasure 0 --quiet --json --db " + db() + " > out.json 2> err.txt";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp((dir_ / "err.txt").string());
    return nlohmann::json::parse(slurp((dir_ / "out.json").string()))["replay_out"].get<std::string>();
  };
  const std::string stem = "softmax_rows_1024_cols_2048_";
  const std::string f16 = record("f16"), f32 = record("f32"), again = record("f16");
  EXPECT_EQ(f16, stem + "f16_softmax_rows_sim_h100-sxm.replay.json");
  EXPECT_EQ(f32, stem + "f32_softmax_rows_sim_h100-sxm.replay.json");
  EXPECT_EQ(again, stem + "f16_softmax_rows_sim_h100-sxm-2.replay.json");
  for (const auto& f : {f16, f32, again}) {
    const auto j = nlohmann::json::parse(slurp((dir_ / f).string()));
    EXPECT_EQ(j["dtype"], f == f32 ? "f32" : "f16") << f;
    EXPECT_FALSE(j["records"].empty()) << f;
  }
  // Re-recorded from a replay device, the name carries the recorded GPU, not the path typed (it held
  // "replay_.._data_replay_...json.replay.json").
  const std::string rec = std::string(TUNER_SOURCE_DIR) + "/data/replay/softmax_f16_rows4096_cols4096_h100_2026-11-25.json";
  const std::string cmd = "cd " + dir_.string() + " && " + std::string(TUNER_BIN) +
                          " tune --op softmax --shape rows=4096,cols=4096 --dtype f16 --device replay:" + rec +
                          " --trials all --strategy grid --remeasure 0 --quiet --json --db " + db() +
                          " > out.json 2> err.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp((dir_ / "err.txt").string());
  EXPECT_EQ(nlohmann::json::parse(slurp((dir_ / "out.json").string()))["replay_out"],
            "softmax_rows_4096_cols_4096_f16_softmax_rows_replay_NVIDIA_H100_80GB_HBM3.replay.json");
}

TEST_F(Cli, RecordsReplayDataAndTunesAgainstIt) {
  const std::string file = (dir_ / "rec.replay.json").string();
  auto rec = run("tune --op gemm --shape M=1000,N=1000,K=1000 --device sim:h100-sxm --trials 12 --strategy grid "
                 "--remeasure 0 --db " + db() + " --replay-out " + file + " --json");
  ASSERT_EQ(rec.code, 0) << rec.err;
  const auto rj = nlohmann::json::parse(rec.out);

  // Grid over the same space again, answered from the file: the same times, nothing compiled.
  const std::string db2 = (dir_ / "replayed.db").string();
  auto rep = run("tune --op gemm --shape M=1000,N=1000,K=1000 --device replay:" + file +
                 " --trials 12 --strategy grid --db " + db2 + " --json");
  ASSERT_EQ(rep.code, 0) << rep.err;
  const auto pj = nlohmann::json::parse(rep.out);
  EXPECT_EQ(pj["measured"], 12);
  EXPECT_EQ(pj["errors"], 0);
  EXPECT_EQ(pj["compiled_from_cache"], 0);
  EXPECT_EQ(pj["remeasured"], 0);
  EXPECT_EQ(pj["best"]["time_ms"], rj["best"]["time_ms"]);
  EXPECT_EQ(pj["best"]["config"], rj["best"]["config"]);
  EXPECT_EQ(pj["device"], "replay:sim:h100-sxm");

  // The device's space is what the recording holds: a larger budget finds the space exhausted, and the
  // configs the recording lacks are never proposed, let alone guessed.
  auto more = run("tune --op gemm --shape M=1000,N=1000,K=1000 --device replay:" + file +
                  " --trials 14 --strategy grid --db " + db2 + " --json");
  ASSERT_EQ(more.code, 0) << more.err;
  const auto mj = nlohmann::json::parse(more.out);
  EXPECT_EQ(mj["space_size"], 12);
  EXPECT_EQ(mj["measured"], 0);
  EXPECT_EQ(mj["errors"], 0);
  EXPECT_EQ(mj["stop_reason"], "space exhausted") << mj.dump();
  // A budget of exactly the space (--trials all) ends with it too, and says that (it said "budget of 12 trials").
  auto whole = run("tune --op gemm --shape M=1000,N=1000,K=1000 --device replay:" + file +
                   " --trials all --strategy grid --remeasure 0 --json --db " + (dir_ / "whole.db").string() +
                   " --replay-out " + (dir_ / "whole.replay.json").string());
  ASSERT_EQ(whole.code, 0) << whole.err;
  EXPECT_EQ(nlohmann::json::parse(whole.out)["stop_reason"], "space exhausted") << whole.out;
  // Its budget is the recorded configs, not the template's whole space (120,144 configs).
  EXPECT_EQ(nlohmann::json::parse(whole.out)["budget"], 12) << whole.out;

  // Re-recorded from the replay device, the file keeps the GPU and the template version that measured the
  // times: replaying it names the device once ("replay:replay:..." before).
  const std::string again = (dir_ / "again.replay.json").string();
  ASSERT_EQ(run("tune --op gemm --shape M=1000,N=1000,K=1000 --device replay:" + file + " --trials 12 --strategy grid "
                "--remeasure 0 --db " + (dir_ / "again.db").string() + " --replay-out " + again).code, 0);
  const auto orig = nlohmann::json::parse(slurp(file)), copy = nlohmann::json::parse(slurp(again));
  EXPECT_EQ(copy["device"]["name"], orig["device"]["name"]);
  EXPECT_EQ(copy["template_version"], orig["template_version"]);
  auto re = run("tune --op gemm --shape M=1000,N=1000,K=1000 --device replay:" + again + " --trials 2 --db " +
                (dir_ / "re.db").string() + " --json");
  ASSERT_EQ(re.code, 0) << re.err;
  EXPECT_EQ(nlohmann::json::parse(re.out)["device"], "replay:sim:h100-sxm");

  // Another workload than the recording's, and a missing file, are bad input.
  auto wrong = run("tune --op gemm --shape M=64,N=64,K=64 --device replay:" + file + " --db " + db2);
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.err.find("records gemm M=1000,N=1000,K=1000 f32"), std::string::npos) << wrong.err;
  // Another op too: the recording's workload is named, not its template.
  auto other_op = run("tune --op softmax --shape rows=8,cols=8 --device replay:" + file + " --db " + db2);
  EXPECT_EQ(other_op.code, 2);
  EXPECT_NE(other_op.err.find("records gemm M=1000,N=1000,K=1000 f32, not softmax"), std::string::npos) << other_op.err;
  auto missing = run("tune --op gemm --shape M=64,N=64,K=64 --device replay:" + (dir_ / "none.json").string() + " --db " + db2);
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("cannot be read"), std::string::npos) << missing.err;
  auto bad_trials = run("tune --op gemm --shape M=64,N=64,K=64 --trials lots --db " + db2);
  EXPECT_EQ(bad_trials.code, 2);
  EXPECT_NE(bad_trials.err.find("'all'"), std::string::npos) << bad_trials.err;
}

TEST_F(Cli, HelpNeedsNoRequiredOption) {
  for (const char* command : {"tune --help", "plan --help", "query --help", "tune -h"}) {
    auto r = run(command);
    EXPECT_EQ(r.code, 0) << command << ": " << r.err;
    EXPECT_NE(r.out.find("--"), std::string::npos) << command;
  }
}

TEST_F(Cli, DevicesListsTheSimDevices) {
  auto r = run("devices --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& d : j["devices"]) names.push_back(d["device"]);
  EXPECT_NE(std::find(names.begin(), names.end(), "sim:h100-sxm"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "sim:a100-sxm4-80gb"), names.end());
}

TEST_F(Cli, BadInputExitsTwoWithOneLineAndLeavesTheDatabaseAlone) {
  ASSERT_EQ(run("tune --op gemm --shape M=64,N=64,K=64 --device sim:h100-sxm --trials 2 --db " + db()).code, 0);
  const std::string before = slurp(db());
  ASSERT_FALSE(before.empty());
  const std::string base = "tune --device sim:h100-sxm --trials 4 --db " + db() + " ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {base + "--op gemmm --shape M=1,N=1,K=1", "gemmm"},
      {base + "--op gemm --shape M=1,N=1", "K"},
      {base + "--op gemm --shape M=0,N=1,K=1", "M=0"},
      {base + "--op gemm --shape M=1,N=abc,K=1", "abc"},
      {base + "--op gemm --shape M=1,N=1,K=1 --dtype f64", "f64"},
      {base + "--op gemm --shape M=1,N=1,K=1 --strategy magic", "magic"},
      {"tune --op gemm --shape M=1,N=1,K=1 --device sim:h100-sxm --trials -3 --db " + db(), "-3"},
      {"tune --op gemm --shape M=1,N=1,K=1 --device sim:v100 --db " + db(), "sim:v100"},
      {"tune --op gemm --shape M=1,N=1,K=1 --device tpu:0 --db " + db(), "tpu:0"},
      {"tune --op gemm --shape M=1,N=1,K=1 --device sim:h100-sxm --db /nonexistent/dir/x.db", "/nonexistent/dir/x.db"},
      {"query --db " + (dir_ / "missing.db").string(), "missing.db"},
      {"query --db " + db() + " --op conv3d", "conv3d"},
      {"tune --op gemm --shape M=1,N=1,K=1 --device sim:h100-sxm --db " + db() + " --bogus-flag", "bogus-flag"},
      {"frobnicate", "frobnicate"},
      {base + "--op gemm --shape M=8,N=8,K=8 --timeout nan", "--timeout"},
      {base + "--op gemm --shape M=8,N=8,K=8 --timeout 0", "--timeout"},
      {base + "--op gemm --shape M=8,N=8,K=8 --min-time-ms -1", "--min-time-ms"},
      {base + "--op gemm --shape M=8,N=8,K=8 --compile-threads 9999", "--compile-threads"},
      {base + "--op gemm --shape M=8,N=8,K=8 --seed -1", "--seed '-1'"},
      {base + "--op gemm --shape M=100000,N=100000,K=8", "C (M*N)"},
  };
  for (const auto& [args, needle] : cases) {
    auto r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  }
  EXPECT_EQ(slurp(db()), before) << "a failed command changed the database";
  EXPECT_FALSE(std::filesystem::exists(dir_ / "missing.db"));
}

TEST_F(Cli, CudaDeviceWithoutADriverIsBadInput) {
  if (std::filesystem::exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1")) GTEST_SKIP() << "this machine has a CUDA driver";
  auto r = run("tune --op gemm --shape M=1,N=1,K=1 --device cuda:0 --db " + db());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cuda:0"), std::string::npos) << r.err;
}

}  // namespace

namespace {

TEST_F(Cli, KilledMidTuneLeavesAConsistentDatabaseThatResumes) {
  pid_t pid = spawn("tune --op gemm --shape M=300,N=200,K=100 --device sim:a100-sxm4-80gb --trials 400 --batch 2 --seed 5 --quiet --db " + db(),
                    (dir_ / "killed.out").string());
  ASSERT_GT(pid, 0);
  wait_for_trials(4);  // a few batches committed, then a kill without warning
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  auto h = run("query --db " + db() + " --history --json");
  ASSERT_EQ(h.code, 0) << h.err;
  const size_t before = nlohmann::json::parse(h.out).size();
  EXPECT_EQ(before % 2, 0u) << "a batch was committed in part";
  ASSERT_LT(before, 400u) << "the run finished before it was killed";
  // Before any tune marks it, a (read-only) query already shows the session as killed, not running.
  auto early = nlohmann::json::parse(run("query --db " + db() + " --sessions --json").out);
  ASSERT_EQ(early.size(), 1u);
  EXPECT_EQ(early[0]["status"], "killed");
  EXPECT_NE(early[0]["reason"].get<std::string>().find("ended without closing the session"), std::string::npos);

  const size_t budget = before + 4;
  auto resumed = run("tune --op gemm --shape M=300,N=200,K=100 --device sim:a100-sxm4-80gb --trials " +
                     std::to_string(budget) + " --batch 2 --seed 5 --json --db " + db());
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  auto j = nlohmann::json::parse(resumed.out);
  EXPECT_EQ(j["previously_measured"].get<size_t>(), before);
  EXPECT_EQ(j["measured"].get<size_t>(), 4u);
  auto all = nlohmann::json::parse(run("query --db " + db() + " --history --json").out);
  std::set<std::string> configs;
  for (const auto& r : all) configs.insert(r["config"].dump());
  EXPECT_EQ(configs.size(), budget) << "a config was measured twice";

  // The killed session does not stay "running": the next run saw its process gone.
  auto sessions = nlohmann::json::parse(run("query --db " + db() + " --sessions --json").out);
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[1]["status"], "killed");
  EXPECT_NE(sessions[1]["reason"].get<std::string>().find("pid " + std::to_string(pid)), std::string::npos)
      << sessions[1]["reason"];
  EXPECT_EQ(sessions[0]["status"], "finished");
}

}  // namespace

namespace {

TEST_F(Cli, InterruptEndsTheSessionWithWhatWasMeasuredCommitted) {
  // SIGINT and SIGTERM: the session ends "interrupted" with what was measured, and the exit code is what
  // shells expect of a signalled program (128 + the signal).
  for (const int sig : {SIGINT, SIGTERM}) {
    const std::string db_path = (dir_ / ("int" + std::to_string(sig) + ".db")).string();
    const std::string out = (dir_ / "int.out").string();
    pid_t pid = spawn("tune --op gemm --shape M=500,N=300,K=70 --device sim:h100-sxm --trials 400 --batch 2 --seed 8 "
                      "--quiet --json --db " + db_path, out);
    ASSERT_GT(pid, 0);
    for (int i = 0; i < 400; ++i) {  // until a few trials are committed
      usleep(10 * 1000);
      auto h = run("query --db " + db_path + " --history --json");
      if (h.code == 0 && nlohmann::json::parse(h.out).size() >= 2) break;
    }
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << slurp(out + ".err");
    auto summary = nlohmann::json::parse(slurp(out));
    EXPECT_TRUE(summary["interrupted"].get<bool>());
    EXPECT_EQ(summary["stop_signal"], sig);
    auto history = nlohmann::json::parse(run("query --db " + db_path + " --history --json").out);
    EXPECT_EQ(history.size(), summary["measured"].get<size_t>());
    EXPECT_LT(history.size(), 400u);
    auto sessions = nlohmann::json::parse(run("query --db " + db_path + " --sessions --json").out);
    EXPECT_EQ(sessions[0]["status"], "interrupted");
    EXPECT_NE(sessions[0]["reason"].get<std::string>().find(sig == SIGINT ? "SIGINT" : "SIGTERM"), std::string::npos);
  }
}


// Ctrl-C while another process holds the database: it waited for the lock (25 s seen), then exited 1. A second
// Ctrl-C while a config hangs waited for its --timeout (up to an hour).
TEST_F(Cli, ACtrlCEndsALockWaitAndASecondOneAHang) {
  const std::string tune = "tune --op softmax --shape rows=256,cols=1024 --dtype f16 --device sim:h100-sxm --quiet ";
  ASSERT_EQ(run(tune + "--trials 2 --db " + db()).code, 0);
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db().c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE; DELETE FROM claims;", nullptr, nullptr, nullptr), SQLITE_OK);
  const std::string out = (dir_ / "lock.out").string();
  pid_t pid = spawn(tune + "--trials 6 --db-timeout 60 --db " + db(), out);
  ASSERT_GT(pid, 0);
  usleep(1000 * 1000);
  auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sqlite3_exec(holder, "ROLLBACK;", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130) << slurp(out + ".err");
  EXPECT_LT(waited, 5.0) << "the lock wait went on after the Ctrl-C";
  EXPECT_NE(slurp(out + ".err").find("the wait was interrupted"), std::string::npos) << slurp(out + ".err");

  pid = spawn("tune --op softmax --shape rows=4096,cols=4096 --dtype f16 --device sim:h100-sxm --trials 4 "
              "--strategy grid --inject-fault hang:1 --timeout 60 --quiet --db " + (dir_ / "hang.db").string(), out);
  ASSERT_GT(pid, 0);
  usleep(1500 * 1000);
  t0 = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  usleep(300 * 1000);
  kill(pid, SIGINT);
  waitpid(pid, &status, 0);
  waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_LT(waited, 10.0) << "the second Ctrl-C waited for the hung config's timeout";
  EXPECT_NE(slurp(out + ".err").find("stopped at once (a second signal)"), std::string::npos) << slurp(out + ".err");
  // The next command finds the session killed, its claims released.
  const auto sessions = nlohmann::json::parse(run("query --sessions --json --db " + (dir_ / "hang.db").string()).out);
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0]["status"], "killed");
}

// But a Ctrl-C while a batch of measured trials waits to be committed keeps them: only waits with nothing measured
// pending (opening, claims, starting a session) end at a Ctrl-C (the review found the trials dropped).
TEST_F(Cli, ACtrlCDuringACommitsLockWaitStillStoresTheBatch) {
  const std::string out = (dir_ / "commit.out").string();
  pid_t pid = spawn("tune --op softmax --shape rows=4096,cols=4096 --dtype f16 --device sim:h100-sxm --trials 60 "
                    "--batch 4 --sim-delay-ms 200 --quiet --json --db " + db(), out);
  ASSERT_GT(pid, 0);
  for (int i = 0; i < 500; ++i) {  // until a batch is committed
    usleep(10 * 1000);
    auto h = run("query --db " + db() + " --history --json");
    if (h.code == 0 && !nlohmann::json::parse(h.out).empty()) break;
  }
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db().c_str(), &holder), SQLITE_OK);
  sqlite3_busy_timeout(holder, 5000);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE;", nullptr, nullptr, nullptr), SQLITE_OK);
  usleep(1000 * 1000);  // the next batch is measured (0.8 s) and waits to commit
  kill(pid, SIGINT);
  usleep(1000 * 1000);
  sqlite3_exec(holder, "ROLLBACK;", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130) << slurp(out + ".err");
  const auto summary = nlohmann::json::parse(slurp(out));
  const auto history = nlohmann::json::parse(run("query --db " + db() + " --history --json").out);
  EXPECT_EQ(history.size(), summary["measured"].get<size_t>()) << slurp(out + ".err");
  EXPECT_EQ(slurp(out + ".err").find("not stored"), std::string::npos) << slurp(out + ".err");
  const auto sessions = nlohmann::json::parse(run("query --sessions --json --db " + db()).out);
  EXPECT_EQ(sessions[0]["status"], "interrupted");
}

// Results that never reached standard output (a full disk) exited 0.
TEST_F(Cli, ResultsThatCannotBeWrittenAreAFailure) {
  const std::string err = (dir_ / "full.err").string();
  std::string command = TUNER_BIN;
  command += " tune --op softmax --shape rows=64,cols=64 --device sim:h100-sxm --trials 2 --json --db " + db();
  command += " >/dev/full 2>" + err;
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(slurp(err).find("writing to standard output failed"), std::string::npos) << slurp(err);
  // A report to stdout does not say it wrote it first (it said "wrote stdout (N charts)", then failed).
  const int report = std::system((std::string(TUNER_BIN) + " report --out - --db " + db() + " >/dev/full 2>" + err).c_str());
  ASSERT_TRUE(WIFEXITED(report));
  EXPECT_EQ(WEXITSTATUS(report), 1);
  EXPECT_NE(slurp(err).find("writing to standard output failed"), std::string::npos) << slurp(err);
  EXPECT_EQ(slurp(err).find("wrote stdout"), std::string::npos) << slurp(err);
}

TEST_F(Cli, InterruptDoesNotWaitForTheCompiledPriorsBatchOfCompiles) {
  // The compiled prior (the default on GPUs) compiles its first batch before anything is measured; SIGINT there
  // was honoured only after every compile of the batch (15 s on a cold cache). One compile thread: six in a row.
  const std::string cache = (dir_ / "cache").string();
  setenv("TUNER_CACHE_DIR", cache.c_str(), 1);
  const std::string out = (dir_ / "prior.out").string();
  pid_t pid = spawn("tune --op gemm --shape M=3000,N=1000,K=1000 --device sim:h100-sxm --trials 30 --prior compiled "
                    "--compile-threads 1 --quiet --json --db " + db(), out);
  unsetenv("TUNER_CACHE_DIR");
  ASSERT_GT(pid, 0);
  usleep(1500 * 1000);  // past the setup, into the first compiles
  const auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130) << slurp(out + ".err");
  // The compile in flight finishes (NVRTC cannot be cancelled; a few seconds) and the queued ones are dropped.
  // Before, all 64 of the prior's compiles ran first: 39 s with two compile threads on a cold cache, twice that
  // with one. The bound leaves room for a loaded machine (12.9 s seen under ctest -j2).
  EXPECT_LT(waited, 30.0) << "the stop waited for the prior's compiles";
  const auto summary = nlohmann::json::parse(slurp(out));
  EXPECT_TRUE(summary["interrupted"].get<bool>());
  EXPECT_LT(summary["prior_compiles"].get<int>(), 64) << "the queued compiles were not dropped";
}

// A template asked for with an op it does not implement matched nothing, silently (a user test, stop 44).
TEST_F(Cli, AQueryForATemplateOfAnotherOpSaysWhy) {
  ASSERT_EQ(run("tune --op softmax --shape rows=64,cols=64 --dtype f16 --device sim:h100-sxm --trials 2 --db " + db()).code,
            0);
  auto q = run("query --template gemm_tc_mma --op softmax --db " + db());
  EXPECT_EQ(q.code, 0) << q.err;
  EXPECT_NE(q.err.find("template 'gemm_tc_mma' implements gemm, not softmax; the templates of softmax: softmax_rows"),
            std::string::npos) << q.err;
  EXPECT_TRUE(run("query --template softmax_rows --op softmax --db " + db()).err.empty());
  // With a dtype: that dtype's templates (the note crashed, reading two temporaries' ends), in export too.
  auto typed = run("query --template softmax_rows --op gemm --dtype f16 --db " + db());
  EXPECT_EQ(typed.code, 0) << typed.err;
  EXPECT_NE(typed.err.find("the templates of gemm f16: gemm_tc_mma, gemm_tc_wgmma"), std::string::npos) << typed.err;
  auto untyped = run("export --format csv --template softmax_rows --op gemm --db " + db());
  EXPECT_EQ(untyped.code, 0) << untyped.err;
  EXPECT_NE(untyped.err.find("gemm_f32_simt"), std::string::npos) << untyped.err;
  EXPECT_NE(untyped.err.find("gemm_tc_wgmma"), std::string::npos) << "every dtype's: " << untyped.err;
}

TEST_F(Cli, SessionsNameTheirTemplateAndCountSearchTrialsApartFromReMeasurements) {
  auto r = run("tune --op softmax --shape rows=64,cols=64 --device sim:h100-sxm --trials 6 --remeasure 2 --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  auto q = run("query --sessions --json --db " + db());
  ASSERT_EQ(q.code, 0) << q.err;
  const auto j = nlohmann::json::parse(q.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["template"], "softmax_rows");
  EXPECT_FALSE(j[0]["template_version"].get<std::string>().empty());
  EXPECT_EQ(j[0]["search_trials"], 6);  // what the budget counts
  EXPECT_GT(j[0]["trials"].get<int>(), 6);  // and the finalists' re-measurements
  EXPECT_EQ(j[0]["remeasured"].get<int>(), j[0]["trials"].get<int>() - 6);  // the table's column, by name
  EXPECT_EQ(j[0]["stop_reason"], j[0]["reason"]);  // tune --json's name for it
  auto t = run("query --sessions --db " + db());
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("softmax_rows"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("re-measured"), std::string::npos) << t.out;
}

}  // namespace

namespace {

// Every trial of a batch stored the batch's commit time as its start and its end: a 1 s run_timeout showed zero
// duration. Each trial now has its measurement's own times.
TEST_F(Cli, EachTrialStoresWhenItsMeasurementStartedAndEnded) {
  ASSERT_EQ(run("tune --op softmax --shape rows=64,cols=256 --dtype f16 --device sim:h100-sxm --trials 4 --batch 4 "
                "--sim-delay-ms 40 --remeasure 0 --quiet --db " + db()).code,
            0);
  auto e = run("export --format jsonl --db " + db());
  ASSERT_EQ(e.code, 0) << e.err;
  std::istringstream lines(e.out);
  std::set<std::string> starts;
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    const std::string a = j["started_at"], b = j["finished_at"];
    EXPECT_LT(a, b) << "a 40 ms measurement ends after it starts";
    starts.insert(a);
    ++n;
  }
  EXPECT_EQ(n, 4);
  EXPECT_EQ(starts.size(), 4u) << "one lane measures them one after another";
}

}  // namespace

namespace {

// `query --best` ranks a config by the mean of its measurements but showed its latest one, with no count: the
// table now shows the mean it ranks by and how many runs make it.
TEST_F(Cli, BestRowsShowTheMeanTheyAreRankedByAndTheirRuns) {
  ASSERT_EQ(run("tune --op softmax --shape rows=64,cols=256 --dtype f16 --device sim:h100-sxm --trials 8 --remeasure 3 "
                "--quiet --db " + db()).code,
            0);
  auto j = run("query --best --json --op softmax --db " + db());
  ASSERT_EQ(j.code, 0) << j.err;
  const auto best = nlohmann::json::parse(j.out).at(0);
  ASSERT_EQ(best["measurements"], 2) << best.dump();
  auto t = run("query --best --op softmax --db " + db());
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("mean ms"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("runs"), std::string::npos) << t.out;
  char mean[32];
  std::snprintf(mean, sizeof mean, "%.4f*", best["mean_time_ms"].get<double>());
  EXPECT_NE(t.out.find(mean), std::string::npos) << mean << "\n" << t.out;
  // --history keeps each trial's own time.
  EXPECT_NE(run("query --history --op softmax --db " + db()).out.find("time ms"), std::string::npos);
}

// --min-time-ms above the default --max-time-ms (100) was refused, blaming --max-time-ms, which the user never gave.
TEST_F(Cli, AMinimumTimeAboveTheDefaultCapRaisesTheCap) {
  auto r = run("tune --op softmax --shape rows=64,cols=256 --dtype f16 --device sim:h100-sxm --trials 2 --min-time-ms 200 "
               "--quiet --db " + db());
  EXPECT_EQ(r.code, 0) << r.err;
  auto given = run("tune --op softmax --shape rows=64,cols=256 --dtype f16 --device sim:h100-sxm --trials 2 "
                   "--min-time-ms 200 --max-time-ms 150 --quiet --db " + db());
  EXPECT_EQ(given.code, 2);
  EXPECT_NE(given.err.find("--max-time-ms 150 is out of range"), std::string::npos) << given.err;
}

}  // namespace
