// The `tuner` program under the faults a demanding user causes: several tuners on one database, a
// database locked by another writer, kill -9 at random points, signals, and bad or foreign database
// files (newer, damaged, read-only). Replay devices answer from a real recording without compiling, and
// --sim-delay-ms gives each measurement a GPU-like duration, so the processes really overlap.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "db/migrations.h"
#include "db/sqlite_handle.h"
#include "db/tuning_db.h"
#include "tests/tools/cli_fixture.h"

namespace {

using tuner_cli_test::Cli;
using tuner_cli_test::CmdResult;
using tuner_cli_test::slurp;

const std::string kSoftmaxReplay = std::string(TUNER_SOURCE_DIR) + "/data/replay/softmax_f16_rows4096_cols32768_h100_2026-11-26.json";

/// `tune` of the recorded softmax workload against its recording (nothing compiled).
std::string replay_tune(const std::string& db, const std::string& extra) {
  return "tune --op softmax --shape rows=4096,cols=32768 --dtype f16 --device replay:" + kSoftmaxReplay + " --db " + db + " " +
         extra;
}

struct SearchTrials {
  size_t rows = 0;
  std::set<std::string> configs;
};

SearchTrials search_trials(const std::string& db_path) {
  auto db = tuner::db::TuningDb::open_existing(db_path);
  SearchTrials t;
  for (const auto& r : db.history({})) {
    if (r.trial.purpose != "search") continue;
    ++t.rows;
    t.configs.insert(r.trial.config_json);
  }
  return t;
}

/// Holds the database's write lock (BEGIN IMMEDIATE) from another connection for `hold`; returns once
/// the lock is taken.
std::thread hold_write_lock(const std::string& db_path, std::chrono::milliseconds hold) {
  std::promise<void> locked;
  auto taken = locked.get_future();
  std::thread t([db_path, hold, &locked] {
    tuner::db::sql::Connection c(db_path, tuner::db::sql::OpenMode::kReadWrite);
    c.exec("BEGIN IMMEDIATE");
    locked.set_value();
    std::this_thread::sleep_for(hold);
    c.exec("COMMIT");
  });
  taken.wait();
  return t;
}

TEST_F(Cli, ThreeTunersOnOneDatabaseShareTheBudgetAndNeverMeasureAConfigTwice) {
  // Two of them with the same seed: they propose the same configs in the same order.
  std::vector<pid_t> pids;
  const std::vector<int> seeds = {1, 1, 2};
  for (size_t i = 0; i < seeds.size(); ++i)
    pids.push_back(spawn(replay_tune(db(), "--trials 48 --batch 4 --strategy random --sim-delay-ms 20 --quiet --json "
                                           "--seed " + std::to_string(seeds[i])),
                         (dir_ / ("p" + std::to_string(i))).string()));
  int measured = 0, processes_that_measured = 0;
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    const std::string out = (dir_ / ("p" + std::to_string(i))).string();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(out + ".err");
    const auto j = nlohmann::json::parse(slurp(out));
    measured += j["measured"].get<int>();
    processes_that_measured += j["measured"].get<int>() > 0;
  }
  EXPECT_EQ(measured, 48);
  EXPECT_GE(processes_that_measured, 2) << "the processes did not overlap; the test proves nothing";
  const SearchTrials t = search_trials(db());
  EXPECT_EQ(t.rows, 48u) << "the budget is the database's, shared by every process";
  EXPECT_EQ(t.configs.size(), 48u) << "a config was measured twice";
  auto store = tuner::db::TuningDb::open_existing(db());
  const auto sessions = store.sessions({});
  ASSERT_EQ(sessions.size(), 3u);
  for (const auto& s : sessions) {
    EXPECT_EQ(s.status, "finished");
    EXPECT_EQ(store.budget_left(s.id, 48), 0) << "claims were left behind";
  }
}

// A second tuner that finds the whole budget claimed by one still measuring ended with "budget of N trials reached",
// 0 measured and no best: as if there were nothing to do. It names the process measuring them.
TEST_F(Cli, ATunerThatFindsTheBudgetClaimedNamesTheProcessMeasuringIt) {
  const std::string first_out = (dir_ / "first").string();
  const pid_t first = spawn(replay_tune(db(), "--trials 4 --batch 4 --strategy random --sim-delay-ms 3000 --quiet --json"),
                            first_out);
  ASSERT_GT(first, 0);
  bool claimed = false;
  for (int i = 0; i < 500 && !claimed; ++i) {
    usleep(10 * 1000);
    if (!std::filesystem::exists(db())) continue;
    try {
      auto store = tuner::db::TuningDb::open_existing(db());
      const auto sessions = store.sessions({});
      claimed = !sessions.empty() && store.budget_left(sessions.front().id, 4) == 0;
    } catch (const std::exception&) {  // still being created
    }
  }
  ASSERT_TRUE(claimed) << "the first tuner never claimed its budget";
  const auto second = run(replay_tune(db(), "--trials 4 --strategy random --json"));
  kill(first, SIGTERM);
  int status = 0;
  waitpid(first, &status, 0);
  ASSERT_EQ(second.code, 0) << second.err;
  const auto j = nlohmann::json::parse(second.out);
  EXPECT_EQ(j["measured"], 0);
  EXPECT_NE(j["stop_reason"].get<std::string>().find("budget of 4 trials reached: 4 trials of the budget are being "
                                                     "measured by process " + std::to_string(first) + " on "),
            std::string::npos)
      << j["stop_reason"];
}

TEST_F(Cli, AWriterHeldOffLongerThanTheBusyTimeoutWaitsAndStoresEverything) {
  ASSERT_EQ(run(replay_tune(db(), "--trials 4 --strategy random")).code, 0);
  // 6.5 s: longer than SQLite's 5 s busy timeout, shorter than the default --db-timeout of 60 s.
  std::thread lock = hold_write_lock(db(), std::chrono::milliseconds(6500));
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(replay_tune(db(), "--trials 12 --strategy random --json"));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  lock.join();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GT(waited, 5.0) << "the tune never met the lock";
  EXPECT_EQ(nlohmann::json::parse(r.out)["measured"], 8);
  EXPECT_EQ(search_trials(db()).rows, 12u);
}

TEST_F(Cli, AWriterThatGivesUpSaysSoAndKeepsWhatWasStored) {
  ASSERT_EQ(run(replay_tune(db(), "--trials 4 --strategy random")).code, 0);
  std::thread lock = hold_write_lock(db(), std::chrono::milliseconds(2500));
  auto r = run(replay_tune(db(), "--trials 12 --strategy random --db-timeout 0.5"));
  lock.join();
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("stayed locked by another process"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(search_trials(db()).rows, 4u);
  // Once the lock is gone the same command continues to the budget.
  auto again = run(replay_tune(db(), "--trials 12 --strategy random --json"));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(search_trials(db()).rows, 12u);
}

TEST_F(Cli, KilledAtRandomPointsTheDatabaseStaysIntactAndResumesToItsBudget) {
  std::mt19937 rng(20261123);  // the kill points replay under this seed
  std::uniform_int_distribution<int> delay_ms(10, 500);
  for (int i = 0; i < 6; ++i) {
    pid_t pid = spawn(replay_tune(db(), "--trials 60 --batch 3 --strategy random --sim-delay-ms 15 --quiet --seed " +
                                            std::to_string(i + 1)),
                      (dir_ / "killed").string());
    ASSERT_GT(pid, 0);
    usleep(static_cast<useconds_t>(delay_ms(rng)) * 1000);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
  }
  auto final_run = run(replay_tune(db(), "--trials 60 --batch 3 --strategy random --seed 99 --json"));
  ASSERT_EQ(final_run.code, 0) << final_run.err;
  const auto j = nlohmann::json::parse(final_run.out);
  EXPECT_EQ(j["previously_measured"].get<int>() + j["measured"].get<int>(), 60);

  auto store = tuner::db::TuningDb::open_existing(db());
  EXPECT_EQ(store.integrity_check(), "ok");
  const SearchTrials t = search_trials(db());
  EXPECT_EQ(t.rows, 60u);
  EXPECT_EQ(t.configs.size(), 60u);
  int killed = 0;
  for (const auto& s : store.sessions({})) {
    EXPECT_NE(s.status, "running") << "session " << s.id << " was left running";
    killed += s.status == "killed";
    if (s.status == "killed") {
      EXPECT_NE(s.reason.find("ended without closing"), std::string::npos) << s.reason;
    }
  }
  EXPECT_GT(killed, 0) << "no kill landed inside a session; the test proves nothing";
}

TEST_F(Cli, ReliabilityBadValuesAreRefusedByNameAndChangeNothing) {
  ASSERT_EQ(run(replay_tune(db(), "--trials 4 --strategy random")).code, 0);
  const std::string before = slurp(db());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {replay_tune("''", "--trials 4"), "database path '' is empty"},
      {replay_tune(db(), "--trials 8 --batch -5"), "--batch -5"},
      {replay_tune(db(), "--trials 8 --batch 0"), "--batch 0"},
      {replay_tune(db(), "--trials 8 --db-timeout -1"), "--db-timeout"},
      {replay_tune(db(), "--trials 8 --sim-delay-ms -3"), "--sim-delay-ms"},
      {replay_tune(dir_.string(), "--trials 8"), "is a directory"},
      {"query --db " + db() + " --history --session -1", "--session -1"},
      {"query --db " + db() + " --history --session 0", "--session 0 is no session id; allowed: a session id (1 or more)"},
      {"query --db " + dir_.string(), "is a directory"},
  };
  for (const auto& [args, needle] : cases) {
    auto r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  }
  EXPECT_EQ(slurp(db()), before);
}

TEST_F(Cli, ADatabaseOfANewerTunerIsRefusedAndLeftAlone) {
  ASSERT_EQ(run(replay_tune(db(), "--trials 4 --strategy random")).code, 0);
  tuner::db::exec_sql(db(), "PRAGMA user_version = 99");
  const std::string before = slurp(db());
  for (const std::string& args : {replay_tune(db(), "--trials 8"), "query --db " + db()}) {
    auto r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("schema version 99, newer than this tuner"), std::string::npos) << r.err;
  }
  EXPECT_EQ(slurp(db()), before);
}

TEST_F(Cli, ADamagedDatabaseIsRefusedWithExitTwoAndNotWrittenTo) {
  ASSERT_EQ(run(replay_tune(db(), "--trials 4 --strategy random")).code, 0);
  std::string bytes = slurp(db());
  ASSERT_GT(bytes.size(), 8192u);
  for (size_t i = 4096; i < bytes.size(); ++i) bytes[i] = static_cast<char>(0xA5);  // every page but the first
  { std::ofstream(db(), std::ios::binary | std::ios::trunc) << bytes; }
  for (const std::string& args : {replay_tune(db(), "--trials 8"), "query --db " + db() + " --history"}) {
    auto r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(db()), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(slurp(db()), bytes);
}

// Damage in a page only a write reads (an index of the trials): tune found it mid-run, after its session row had
// gone into the damaged file (exit 2 promised the file untouched). A quick check before any write finds it.
TEST_F(Cli, DamageInAnIndexIsFoundBeforeAnythingIsWritten) {
  ASSERT_EQ(run(replay_tune(db(), "--trials 30 --strategy random")).code, 0);
  int64_t page = 0, page_size = 0;
  {
    tuner::db::sql::Connection c(db(), tuner::db::sql::OpenMode::kReadOnly);
    tuner::db::sql::Statement q(c, "SELECT rootpage FROM sqlite_schema WHERE name = 'trials_by_session'");
    ASSERT_TRUE(q.step());
    page = q.column_int64(0);
    tuner::db::sql::Statement ps(c, "PRAGMA page_size");
    ASSERT_TRUE(ps.step());
    page_size = ps.column_int64(0);
  }
  ASSERT_GT(page, 1);
  std::string bytes = slurp(db());
  ASSERT_GE(static_cast<int64_t>(bytes.size()), page * page_size);
  std::fill(bytes.begin() + (page - 1) * page_size, bytes.begin() + page * page_size, '\0');
  { std::ofstream(db(), std::ios::binary | std::ios::trunc) << bytes; }
  const auto r = run(replay_tune(db(), "--trials 40 --strategy random"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("is damaged (quick_check: "), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(slurp(db()), bytes) << "nothing written to the damaged file";
  // Not a regular file: SQLite's "disk I/O error" (exit 1), and /dev/null-journal created.
  const auto dev = run("tune --op softmax --shape rows=64,cols=64 --device sim:h100-sxm --trials 2 --db /dev/null");
  EXPECT_EQ(dev.code, 2);
  EXPECT_NE(dev.err.find("'/dev/null' is not a regular file"), std::string::npos) << dev.err;
}

// A table dropped by hand (or by another tool): every command names the damage and exits 2 (tune said "no such
// table" and exited 1; query and export answered as if the sessions were never there).
TEST_F(Cli, ADatabaseMissingATableIsDamagedForEveryCommand) {
  ASSERT_EQ(run(replay_tune(db(), "--trials 4 --strategy random")).code, 0);
  tuner::db::exec_sql(db(), "PRAGMA foreign_keys = OFF; DROP TABLE sessions;");
  const std::string bytes = slurp(db());
  for (const std::string& args : {replay_tune(db(), "--trials 8"), "query --db " + db() + " --history",
                                  "export --format jsonl --db " + db(), "query --plans --db " + db()}) {
    auto r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("is damaged (its table 'sessions' is missing)"), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(slurp(db()), bytes);
}

/// Runs `tuner <args>` as a user who cannot write the test's directory or database: as nobody when this
/// process is root (root writes anything), else with the directory and file made read-only.
CmdResult run_without_write_access(const std::filesystem::path& dir, const std::string& db_path,
                                   const std::string& args) {
  const bool root = geteuid() == 0;
  if (!root) {
    chmod(db_path.c_str(), 0444);
    chmod(dir.c_str(), 0555);
  }
  const std::string out = "/tmp/tuner_ro_" + std::to_string(getpid()) + ".out";
  const std::string err = out + ".err";
  pid_t pid = fork();
  if (pid == 0) {
    // The output files are opened before privileges are dropped.
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, STDOUT_FILENO);
    dup2(e, STDERR_FILENO);
    if (root && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) _exit(126);
    const std::string cmd = "exec " + std::string(TUNER_BIN) + " " + args;
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!root) {
    chmod(dir.c_str(), 0755);
    chmod(db_path.c_str(), 0644);
  }
  CmdResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

TEST_F(Cli, AReadOnlyDatabaseIsRefusedByTuneAndStillReadByQuery) {
  ASSERT_EQ(run(replay_tune(db(), "--trials 4 --strategy random")).code, 0);
  ASSERT_FALSE(std::filesystem::exists(db() + "-wal")) << "the WAL should be checkpointed away at close";
  chmod(dir_.c_str(), 0755);
  chmod(db().c_str(), 0644);
  const std::string before = slurp(db());

  auto tune = run_without_write_access(dir_, db(), replay_tune(db(), "--trials 8"));
  ASSERT_NE(tune.code, 126) << "could not drop privileges";
  EXPECT_EQ(tune.code, 2) << tune.err;
  EXPECT_NE(tune.err.find("read-only"), std::string::npos) << tune.err;
  EXPECT_EQ(std::count(tune.err.begin(), tune.err.end(), '\n'), 1) << tune.err;

  // A WAL database in a directory the reader cannot write: SQLite cannot create its -shm there.
  auto query = run_without_write_access(dir_, db(), "query --history --json --db " + db());
  EXPECT_EQ(query.code, 0) << query.err;
  EXPECT_EQ(nlohmann::json::parse(query.out).size(), 4u);
  // So is every export format (jsonl and best read the device identities through a connection of their own, which
  // could not open the database there: "attempt to write a readonly database").
  for (const char* format : {"jsonl", "best", "csv"}) {
    auto e = run_without_write_access(dir_, db(), std::string("export --format ") + format + " --db " + db());
    EXPECT_EQ(e.code, 0) << format << ": " << e.err;
    EXPECT_NE(e.out.find("softmax"), std::string::npos) << format;
  }
  EXPECT_EQ(slurp(db()), before);
}

}  // namespace

namespace {

TEST_F(Cli, DbMergeOfTwoTunedDatabasesGivesTheUnionOnce) {
  const std::string other = (dir_ / "other.db").string();
  ASSERT_EQ(run(replay_tune(db(), "--trials 10 --strategy random --seed 1")).code, 0);
  ASSERT_EQ(run(replay_tune(other, "--trials 10 --strategy random --seed 2")).code, 0);
  std::set<std::string> union_configs = search_trials(db()).configs;
  for (const auto& c : search_trials(other).configs) union_configs.insert(c);
  ASSERT_LT(union_configs.size(), 20u) << "the two seeds should share some configs for this test to mean much";

  auto merged = run("db merge " + other + " --db " + db() + " --json");
  ASSERT_EQ(merged.code, 0) << merged.err;
  const auto j = nlohmann::json::parse(merged.out);
  EXPECT_EQ(j["added"].get<size_t>(), union_configs.size() - 10);
  EXPECT_EQ(j["skipped"].get<size_t>(), 20 - union_configs.size());
  const SearchTrials t = search_trials(db());
  EXPECT_EQ(t.rows, union_configs.size());
  EXPECT_EQ(t.configs, union_configs);

  auto twice = run("db merge " + other + " --db " + db() + " --json");
  ASSERT_EQ(twice.code, 0) << twice.err;
  EXPECT_EQ(nlohmann::json::parse(twice.out)["added"], 0);
  EXPECT_EQ(search_trials(db()).rows, union_configs.size());

  auto missing = run("db merge " + (dir_ / "none.db").string() + " --db " + db());
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("none.db"), std::string::npos) << missing.err;
  // A merge that fails on its source creates no database at --db (it made an empty one), and the source, only
  // read, gets no -wal or -shm beside it (ATTACH opened it for writing).
  const std::string fresh = (dir_ / "fresh.db").string();
  EXPECT_EQ(run("db merge " + (dir_ / "none.db").string() + " --db " + fresh).code, 2);
  EXPECT_FALSE(std::filesystem::exists(fresh));
  ASSERT_EQ(run("db merge " + other + " --db " + fresh).code, 0);
  EXPECT_FALSE(std::filesystem::exists(other + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(other + "-shm"));
  // Damage found only while reading the source's tables (its schema intact, its data pages not) left an empty
  // database at --db too.
  const std::string damaged = (dir_ / "damaged.db").string(), fresh2 = (dir_ / "fresh2.db").string();
  std::filesystem::copy_file(other, damaged);
  {  // the third 4 KiB page: a table's, not the schema's
    ASSERT_GT(std::filesystem::file_size(damaged), 3u * 4096);
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2 * 4096);
    const std::string junk(4096, '\x55');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  const auto broken = run("db merge " + damaged + " --db " + fresh2);
  EXPECT_EQ(broken.code, 2) << broken.err;
  EXPECT_NE(broken.err.find("damaged"), std::string::npos) << broken.err;
  EXPECT_FALSE(std::filesystem::exists(fresh2));
  auto bad_sub = run("db split");
  EXPECT_EQ(bad_sub.code, 2);
  EXPECT_NE(bad_sub.err.find("'split'"), std::string::npos) << bad_sub.err;
}

}  // namespace
