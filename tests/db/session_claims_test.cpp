// Sessions that several processes share a database with: claims and the shared budget, how sessions
// end (finished, interrupted, failed with a reason, killed when their process died), writes that wait
// out another writer's lock, and the schema step (v4) that brought all this.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <set>
#include <thread>

#include "db/migrations.h"
#include "db/process_identity.h"
#include "db/sqlite_handle.h"
#include "db/tuning_db.h"
#include "tests/db/db_fixture.h"

namespace tuner::db {
namespace {

using test::Fixture;
using test::ok_trial;
using test::TempDir;

std::vector<std::string> configs(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back("{\"BM\":" + std::to_string(i) + "}");
  return out;
}

int count_true(const std::vector<bool>& v) { return static_cast<int>(std::count(v.begin(), v.end(), true)); }

TEST(SessionClaims, SessionsSharingATargetShareItsBudgetAndNeverClaimTheSameConfig) {
  Fixture fx;
  const int64_t other = fx.db.begin_session(fx.device, fx.workload, fx.tmpl, "random", 1, 8, "");
  // The first session claims 5 of a budget of 8.
  ClaimResult a = fx.db.claim_configs(fx.session, configs(0, 5), 8);
  EXPECT_EQ(count_true(a.claimed), 5);
  EXPECT_EQ(a.budget_left, 3);
  // The second offers 2 of those and 4 new ones: the taken ones are refused, and the budget stops it at 3.
  ClaimResult b = fx.db.claim_configs(other, configs(3, 9), 8);
  EXPECT_EQ(b.claimed, (std::vector<bool>{false, false, true, true, true, false}));
  EXPECT_EQ(b.budget_left, 0);
  EXPECT_EQ(fx.db.budget_left(fx.session, 8), 0);

  // Storing a claimed config turns its claim into a trial: the budget used stays the same.
  std::vector<TrialRecord> batch = {ok_trial("{\"BM\":0}", 1.0), ok_trial("{\"BM\":1}", 2.0)};
  fx.db.add_trials(fx.session, batch);
  EXPECT_EQ(fx.db.budget_left(fx.session, 8), 0);
  // A measured config cannot be claimed again, even after its claim is gone.
  ClaimResult again = fx.db.claim_configs(other, configs(0, 1), 100);
  EXPECT_FALSE(again.claimed[0]);

  // Ending a session releases its unmeasured claims (BM 2, 3, 4), and with them their share of the budget.
  fx.db.end_session(fx.session, "interrupted", "stopped by signal 2 (SIGINT)");
  EXPECT_EQ(fx.db.budget_left(other, 8), 3);
  ClaimResult c = fx.db.claim_configs(other, configs(2, 5), 8);
  EXPECT_EQ(count_true(c.claimed), 3);
}

TEST(SessionClaims, SessionsFinishingTogetherSplitTheFinalistsTheyReMeasure) {
  Fixture fx;
  const int64_t other = fx.db.begin_session(fx.device, fx.workload, fx.tmpl, "random", 1, 8, "");
  std::vector<TrialRecord> measured = {ok_trial("{\"BM\":0}", 1.0), ok_trial("{\"BM\":1}", 2.0)};
  ASSERT_EQ(count_true(fx.db.claim_configs(fx.session, configs(0, 2), 8).claimed), 2);
  fx.db.add_trials(fx.session, measured);
  // Both sessions rank BM 0 and BM 1 as their finalists: each config is re-measured by one of them.
  EXPECT_TRUE(fx.db.claim_remeasure(fx.session, "{\"BM\":0}"));
  EXPECT_FALSE(fx.db.claim_remeasure(other, "{\"BM\":0}")) << "the first session holds it";
  EXPECT_TRUE(fx.db.claim_remeasure(other, "{\"BM\":1}"));
  EXPECT_FALSE(fx.db.claim_remeasure(fx.session, "{\"BM\":1}"));
  // Re-measure claims are not search trials: the budget is unchanged (2 of 8 used).
  EXPECT_EQ(fx.db.budget_left(fx.session, 8), 6);
  // Once a config has two measurements nobody re-measures it, even after the claim is gone.
  std::vector<TrialRecord> second = {ok_trial("{\"BM\":0}", 1.1)};
  second[0].purpose = "remeasure";
  fx.db.add_trials(fx.session, second);
  fx.db.end_session(fx.session, "finished", "");
  const int64_t third = fx.db.begin_session(fx.device, fx.workload, fx.tmpl, "random", 1, 8, "");
  EXPECT_FALSE(fx.db.claim_remeasure(third, "{\"BM\":0}")) << "measured twice";
  EXPECT_FALSE(fx.db.claim_remeasure(third, "{\"BM\":1}")) << "the other session still holds it";
  fx.db.end_session(other, "finished", "");
  EXPECT_TRUE(fx.db.claim_remeasure(third, "{\"BM\":1}")) << "released with its session, measured once";
}

TEST(SessionClaims, ASessionEndsFinishedInterruptedOrFailedWithItsReasonAndProcess) {
  Fixture fx;
  fx.db.end_session(fx.session, "failed", "reference kernel failed to compile: error at line 3");
  EXPECT_THROW(fx.db.end_session(fx.session, "running"), DbError);
  EXPECT_THROW(fx.db.end_session(fx.session, "killed"), DbError) << "only the reaper marks sessions killed";
  const auto rows = fx.db.sessions({});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, "failed");
  EXPECT_EQ(rows[0].reason, "reference kernel failed to compile: error at line 3");
  EXPECT_EQ(rows[0].pid, static_cast<int64_t>(getpid()));
  EXPECT_EQ(rows[0].host, current_process().host);
  EXPECT_FALSE(rows[0].finished_at.empty());
}

TEST(SessionClaims, SessionsOfDeadProcessesAreMarkedKilledAndTheirClaimsReleased) {
  TempDir dir;
  const std::string path = dir.file("dead.db");
  { Fixture fx(path); }  // schema, device, workload, template; its own session stays with this (live) process
  // A child process begins a session, claims configs and dies without a word, as under kill -9.
  pid_t child = fork();
  if (child == 0) {
    try {
      TuningDb db(path);
      const int64_t s = db.begin_session(1, 1, 1, "random", 1, 10, "child");
      db.claim_configs(s, configs(0, 4), 10);
    } catch (...) {
      _exit(1);
    }
    _exit(0);  // no end_session
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  TuningDb db(path);
  auto before = db.sessions({});
  ASSERT_EQ(before.size(), 2u);
  // Still running in the file, shown as the reap will mark it (what a read-only query reports).
  EXPECT_EQ(before[0].status, "killed");
  EXPECT_NE(before[0].reason.find("ended without closing the session"), std::string::npos) << before[0].reason;
  EXPECT_EQ(before[1].status, "running") << "ours is alive";
  EXPECT_EQ(before[0].pid, static_cast<int64_t>(child));
  EXPECT_EQ(db.budget_left(before[0].id, 10), 6);

  EXPECT_EQ(db.reap_dead_sessions(), 1) << "the child's session, and only it (ours still runs)";
  auto after = db.sessions({});
  EXPECT_EQ(after[0].status, "killed");
  EXPECT_NE(after[0].reason.find("pid " + std::to_string(child)), std::string::npos) << after[0].reason;
  EXPECT_EQ(after[1].status, "running");
  EXPECT_EQ(db.budget_left(after[0].id, 10), 10) << "the dead session's claims were kept";
  EXPECT_EQ(db.reap_dead_sessions(), 0);
}

TEST(SessionClaims, AReusedPidDoesNotKeepADeadSessionAlive) {
  TempDir dir;
  const std::string path = dir.file("reused.db");
  int64_t session = 0;
  {
    Fixture fx(path);
    session = fx.session;
  }
  // Same pid and host as this live process, but another start time: the pid was reused.
  exec_sql(path, "UPDATE sessions SET process_start = process_start + 12345 WHERE id = " + std::to_string(session));
  TuningDb db(path);
  EXPECT_EQ(db.reap_dead_sessions(), 1);
  EXPECT_EQ(db.sessions({})[0].status, "killed");
  EXPECT_EQ(liveness(current_process()), Liveness::kAlive);
  EXPECT_EQ(liveness({current_process().pid, "some-other-host", 1}), Liveness::kUnknown);
}

TEST(SessionClaims, AWriteWaitsOutALockLongerThanTheBusyTimeout) {
  TempDir dir;
  const std::string path = dir.file("locked.db");
  Fixture fx(path);
  std::promise<void> locked;
  std::thread holder([&] {
    sql::Connection other(path, sql::OpenMode::kReadWrite);
    other.exec("BEGIN IMMEDIATE");
    locked.set_value();
    std::this_thread::sleep_for(std::chrono::milliseconds(6000));  // past SQLite's 5 s busy timeout
    other.exec("COMMIT");
  });
  locked.get_future().wait();
  std::vector<TrialRecord> batch = {ok_trial("{\"BM\":1}", 1.0)};
  EXPECT_NO_THROW(fx.db.add_trials(fx.session, batch));
  holder.join();
  EXPECT_GT(batch[0].id, 0);
}

TEST(SessionClaims, AWriteGivesUpAfterItsPatienceAsBusyAndChangesNothing) {
  TempDir dir;
  const std::string path = dir.file("patience.db");
  Fixture fx(path);
  fx.db.set_write_patience(0.3);
  sql::Connection other(path, sql::OpenMode::kReadWrite);
  other.exec("BEGIN IMMEDIATE");
  std::vector<TrialRecord> batch = {ok_trial("{\"BM\":1}", 1.0), ok_trial("{\"BM\":2}", 2.0)};
  const auto t0 = std::chrono::steady_clock::now();
  try {
    fx.db.add_trials(fx.session, batch);
    FAIL() << "the write went through a held lock";
  } catch (const DbError& e) {
    EXPECT_EQ(e.kind(), DbError::Kind::kBusy);
    EXPECT_NE(std::string(e.what()).find("stayed locked by another process"), std::string::npos) << e.what();
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(waited, 0.3);
  EXPECT_LT(waited, 3.0);
  other.exec("ROLLBACK");
  EXPECT_EQ(batch[0].id, 0) << "a failed batch must leave its records as they were";
  EXPECT_TRUE(fx.db.history({}).empty());
}

TEST(SessionClaims, APatienceLongerThanSqlitesBusyTimeoutEndsOnTime) {
  // 5.6 s: one of SQLite's 5 s waits and part of a second, which ran whole (10 s) before the deadline.
  TempDir dir;
  const std::string path = dir.file("patience_long.db");
  Fixture fx(path);
  fx.db.set_write_patience(5.6);
  sql::Connection other(path, sql::OpenMode::kReadWrite);
  other.exec("BEGIN IMMEDIATE");
  std::vector<TrialRecord> batch = {ok_trial("{\"BM\":1}", 1.0)};
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(fx.db.add_trials(fx.session, batch), DbError);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(waited, 5.6);
  EXPECT_LT(waited, 6.5) << "the wait outlived its patience";
  other.exec("ROLLBACK");
}

TEST(SessionClaims, MigratingAVersion3FileKeepsEverythingAndClosesSessionsNobodyCanJudge) {
  TempDir dir;
  const std::string path = dir.file("v3.db");
  create_schema_at_version(path, 3);
  exec_sql(path, R"sql(
    INSERT INTO devices (id, name, simulated, cc_major, cc_minor, sm_count, memory_bytes, driver_version, nvrtc_version)
      VALUES (1, 'sim:h100-sxm', 1, 9, 0, 132, 80000000000, 'none', '13.0');
    INSERT INTO workloads (id, op, shape, dtype) VALUES (1, 'gemm', 'M=8,N=8,K=8', 'f32');
    INSERT INTO templates (id, name, hash) VALUES (1, 'gemm_f32_simt', 'abc');
    INSERT INTO sessions (id, device_id, workload_id, template_id, strategy, seed, budget, status, started_at, finished_at)
      VALUES (1, 1, 1, 1, 'random', 1, 4, 'finished', '2026-01-01T00:00:00.000Z', '2026-01-01T00:01:00.000Z'),
             (2, 1, 1, 1, 'xgb', 2, 8, 'running', '2026-01-02T00:00:00.000Z', '');
    INSERT INTO trials (session_id, device_id, workload_id, template_id, config_json, status, time_ms)
      VALUES (1, 1, 1, 1, '{"BM":1}', 'ok', 1.5), (2, 1, 1, 1, '{"BM":2}', 'ok', 2.5);
    INSERT INTO cost_models (kind, op, template_name, feature_names, rows, session_id, model, created_at)
      VALUES ('xgb-rank', 'gemm', 'gemm_f32_simt', '[]', 2, 2, x'00', '2026-01-02T00:00:00.000Z');
  )sql");
  TuningDb db(path);
  EXPECT_EQ(db.schema_version(), TuningDb::kSchemaVersion);
  const auto sessions = db.sessions({});
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0].status, "killed") << "an older tuner's running session has no process to judge";
  EXPECT_NE(sessions[0].reason.find("older tuner"), std::string::npos);
  EXPECT_EQ(sessions[0].trials, 1);
  EXPECT_EQ(sessions[1].status, "finished");
  EXPECT_EQ(sessions[1].finished_at, "2026-01-01T00:01:00.000Z");
  EXPECT_EQ(db.history({}).size(), 2u);
  EXPECT_TRUE(db.latest_cost_model("xgb-rank", "gemm", "gemm_f32_simt").has_value());
  EXPECT_EQ(db.integrity_check(), "ok");
  // The old session's trials still belong to it: new trials and claims go on working against it.
  std::vector<TrialRecord> more = {ok_trial("{\"BM\":3}", 1.0)};
  db.add_trials(1, more);
  EXPECT_EQ(db.sessions({})[1].trials, 2);
}

TEST(SessionClaims, AUserVersionAheadOfThisTunerIsRefused) {
  TempDir dir;
  const std::string path = dir.file("ahead.db");
  { TuningDb db(path); }
  exec_sql(path, "PRAGMA user_version = 99");
  const std::string before = test::read_bytes(path);
  try {
    TuningDb db(path);
    FAIL() << "opened a file a newer program wrote";
  } catch (const DbError& e) {
    EXPECT_EQ(e.kind(), DbError::Kind::kNewer);
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
  }
  EXPECT_THROW(TuningDb::open_existing(path), DbError);
  EXPECT_EQ(test::read_bytes(path), before);
}

}  // namespace
}  // namespace tuner::db
