// Tests of the tuning database: round trips, upserts, queries, atomic batches,
// migration from schema v1, refusal of foreign/newer files, and crash safety.
#include "db/tuning_db.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "db/migrations.h"
#include "tests/db/db_fixture.h"

namespace tuner::db {
namespace {

using namespace tuner::db::test;  // NOLINT: the fixture is this file's vocabulary
namespace fs = std::filesystem;

TEST(TuningDb, RoundTripsEveryTrialField) {
  Fixture fx;
  TrialRecord t;
  t.config_json = R"({"BM":64,"BN":128})";
  t.status = "ok";
  t.error_message = "warning: something";
  t.compile_ms = 123.25;
  t.registers = 96;
  t.shared_bytes = 49152;
  t.spill_bytes = 16;
  t.time_ms = 0.8125;
  t.time_spread_ms = 0.015625;
  t.repeats = 25;
  t.gflops = 2461.5;
  t.estimate = true;
  t.started_at = "2026-11-22T14:37:25.123Z";
  t.finished_at = "2026-11-22T14:37:26.456Z";
  std::vector<TrialRecord> batch{t};
  fx.db.add_trials(fx.session, batch);
  ASSERT_GT(batch[0].id, 0);
  EXPECT_EQ(batch[0].session_id, fx.session);

  const auto rows = fx.db.history({});
  ASSERT_EQ(rows.size(), 1u);
  const ResultRow& r = rows[0];
  EXPECT_EQ(r.trial.id, batch[0].id);
  EXPECT_EQ(r.trial.session_id, fx.session);
  EXPECT_EQ(r.trial.config_json, t.config_json);
  EXPECT_EQ(r.trial.status, t.status);
  EXPECT_EQ(r.trial.error_message, t.error_message);
  EXPECT_EQ(r.trial.compile_ms, t.compile_ms);
  EXPECT_EQ(r.trial.registers, t.registers);
  EXPECT_EQ(r.trial.shared_bytes, t.shared_bytes);
  EXPECT_EQ(r.trial.spill_bytes, t.spill_bytes);
  EXPECT_EQ(r.trial.time_ms, t.time_ms);
  EXPECT_EQ(r.trial.time_spread_ms, t.time_spread_ms);
  EXPECT_EQ(r.trial.repeats, t.repeats);
  EXPECT_EQ(r.trial.gflops, t.gflops);
  EXPECT_EQ(r.trial.estimate, t.estimate);
  EXPECT_EQ(r.trial.started_at, t.started_at);
  EXPECT_EQ(r.trial.finished_at, t.finished_at);
  EXPECT_EQ(r.workload.op, "gemm");
  EXPECT_EQ(r.workload.shape, "M=1000,N=1000,K=1000");
  EXPECT_EQ(r.workload.dtype, "f32");
  EXPECT_EQ(r.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_FALSE(r.device_simulated);
  EXPECT_EQ(r.template_name, "gemm_f32_simt");
  EXPECT_EQ(r.template_hash, "h1");
}

// A read-only connection cannot remove a WAL database's -wal and -shm when it closes: every query left them beside
// the database (and a write-protected file's -shm, write-protected too, later failed a writer). Reads now go through
// a query-only connection where the file can be written: nothing changes, and nothing is left behind.
TEST(TuningDb, ReadingLeavesNoWalOrShmBehindAndChangesNothing) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  {
    Fixture fx(path);
    std::vector<TrialRecord> trials = {ok_trial(R"({"BM":64})", 1.0)};
    fx.db.add_trials(fx.session, trials);
  }
  ASSERT_FALSE(fs::exists(path + "-wal"));
  const std::string before = read_bytes(path);
  {
    TuningDb db = TuningDb::open_existing(path);
    EXPECT_EQ(db.history({}).size(), 1u);
    EXPECT_THROW(db.upsert_workload({"gemm", "M=1,N=1,K=1", "f32"}), DbError) << "a reader must not write";
  }
  EXPECT_FALSE(fs::exists(path + "-wal"));
  EXPECT_FALSE(fs::exists(path + "-shm"));
  EXPECT_EQ(read_bytes(path), before);
}

TEST(TuningDb, FillsTimestampsWhenEmpty) {
  Fixture fx;
  std::vector<TrialRecord> batch{ok_trial("{}", 1.0)};
  fx.db.add_trials(fx.session, batch);
  EXPECT_TRUE(is_iso8601_ms(batch[0].started_at)) << batch[0].started_at;
  EXPECT_TRUE(is_iso8601_ms(batch[0].finished_at)) << batch[0].finished_at;
  EXPECT_EQ(fx.db.history({})[0].trial.started_at, batch[0].started_at);
}

TEST(TuningDb, UpsertsReturnTheSameIdTwice) {
  TuningDb db(":memory:");
  const int64_t d1 = db.upsert_device(h100());
  EXPECT_EQ(db.upsert_device(h100()), d1);
  DeviceIdentity other = h100();
  other.driver_version = "12.8";
  EXPECT_NE(db.upsert_device(other), d1);
  EXPECT_NE(db.upsert_device(sim_h100()), d1);

  const int64_t w1 = db.upsert_workload(gemm());
  EXPECT_EQ(db.upsert_workload(gemm()), w1);
  EXPECT_NE(db.upsert_workload({"gemm", "M=512,N=512,K=512", "f32"}), w1);

  const int64_t t1 = db.upsert_template({"gemm_f32_simt", "h1"});
  EXPECT_EQ(db.upsert_template({"gemm_f32_simt", "h1"}), t1);
  EXPECT_NE(db.upsert_template({"gemm_f32_simt", "h2"}), t1);
}

TEST(TuningDb, CountsAndConfigsAreKeptPerTemplateVersion) {
  Fixture fx;
  const int64_t tmpl2 = fx.db.upsert_template({"gemm_f32_simt", "h2"});
  const int64_t session2 = fx.db.begin_session(fx.device, fx.workload, tmpl2, "random", 7, 10, "");

  std::vector<TrialRecord> a{ok_trial(R"({"BM":32})", 2.0), failed_trial(R"({"BM":256})", "compile_error")};
  std::vector<TrialRecord> b{ok_trial(R"({"BM":64})", 1.0)};
  fx.db.add_trials(fx.session, a);
  fx.db.add_trials(session2, b);

  EXPECT_EQ(fx.db.count_trials(fx.device, fx.workload, fx.tmpl), 2);
  EXPECT_EQ(fx.db.count_trials(fx.device, fx.workload, tmpl2), 1);
  EXPECT_EQ(fx.db.measured_configs(fx.device, fx.workload, fx.tmpl),
            (std::vector<std::string>{R"({"BM":32})", R"({"BM":256})"}));
  EXPECT_EQ(fx.db.measured_configs(fx.device, fx.workload, tmpl2), (std::vector<std::string>{R"({"BM":64})"}));

  const int64_t other_device = fx.db.upsert_device(sim_h100());
  EXPECT_EQ(fx.db.count_trials(other_device, fx.workload, fx.tmpl), 0);
  EXPECT_TRUE(fx.db.measured_configs(other_device, fx.workload, fx.tmpl).empty());
}

// Ties at the same time (a sim device's estimates): the config measured more often wins, then the earliest; three
// measurements of 0.2 average to 0.20000000000000004, which must still tie with one 0.2.
TEST(TuningDb, TiesGoToTheConfigMeasuredMoreOftenThenTheEarliest) {
  Fixture fx;
  std::vector<TrialRecord> batch{ok_trial("{\"c\":1}", 0.2), ok_trial("{\"c\":2}", 0.2), ok_trial("{\"c\":3}", 0.2),
                                 ok_trial("{\"c\":3}", 0.2), ok_trial("{\"c\":3}", 0.2), ok_trial("{\"c\":4}", 0.3)};
  fx.db.add_trials(fx.session, batch);
  const auto best = fx.db.best({});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->trial.config_json, "{\"c\":3}");
  EXPECT_EQ(best->measurements, 3);
  const auto per = fx.db.best_per_workload({});
  ASSERT_EQ(per.size(), 1u);
  EXPECT_EQ(per[0].trial.config_json, "{\"c\":3}");
  // Among configs measured once, the earliest.
  Fixture once;
  std::vector<TrialRecord> two{ok_trial("{\"c\":5}", 0.2), ok_trial("{\"c\":6}", 0.2)};
  once.db.add_trials(once.session, two);
  EXPECT_EQ(once.db.best({})->trial.config_json, "{\"c\":5}");
}

TEST(TuningDb, BestPicksLowestOkTimeAndIgnoresFailures) {
  Fixture fx;
  TrialRecord fast_but_wrong = failed_trial("{\"c\":0}", "wrong_answer");
  fast_but_wrong.time_ms = 0.1;  // Failed trials never win, whatever their time.
  std::vector<TrialRecord> batch{ok_trial("{\"c\":1}", 3.0), fast_but_wrong, ok_trial("{\"c\":2}", 1.5),
                                 ok_trial("{\"c\":3}", 2.0), failed_trial("{\"c\":4}", "run_timeout")};
  fx.db.add_trials(fx.session, batch);

  const auto best = fx.db.best({});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->trial.config_json, "{\"c\":2}");
  EXPECT_EQ(best->trial.time_ms, 1.5);

  QueryFilter other_op;
  other_op.op = "conv2d";
  EXPECT_FALSE(fx.db.best(other_op).has_value());

  QueryFilter ok_only;
  ok_only.ok_only = true;
  EXPECT_EQ(fx.db.history(ok_only).size(), 3u);
  EXPECT_EQ(fx.db.history({}).size(), 5u);
}

TEST(TuningDb, TemplateHashFilterExcludesOldVersions) {
  Fixture fx(":memory:", "old");
  const int64_t new_tmpl = fx.db.upsert_template({"gemm_f32_simt", "new"});
  const int64_t new_session = fx.db.begin_session(fx.device, fx.workload, new_tmpl, "random", 1, 10, "");
  std::vector<TrialRecord> old_batch{ok_trial("{\"v\":\"old\"}", 0.5)};
  std::vector<TrialRecord> new_batch{ok_trial("{\"v\":\"new\"}", 0.9)};
  fx.db.add_trials(fx.session, old_batch);
  fx.db.add_trials(new_session, new_batch);

  EXPECT_EQ(fx.db.best({})->template_hash, "old");
  QueryFilter current;
  current.template_hashes = {"new", "unrelated"};
  const auto best = fx.db.best(current);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->template_hash, "new");
  EXPECT_EQ(best->trial.config_json, "{\"v\":\"new\"}");
  EXPECT_EQ(fx.db.history(current).size(), 1u);
  EXPECT_EQ(fx.db.best_per_workload(current).size(), 1u);
  EXPECT_EQ(fx.db.sessions(current).size(), 1u);
}

TEST(TuningDb, DeviceFiltersMatchNameAndComputeCapability) {
  Fixture fx;
  const int64_t sim = fx.db.upsert_device(sim_h100());
  const int64_t sim_session = fx.db.begin_session(sim, fx.workload, fx.tmpl, "random", 1, 10, "");
  std::vector<TrialRecord> real{ok_trial("{}", 1.0)};
  std::vector<TrialRecord> simulated{ok_trial("{}", 2.0)};
  simulated[0].estimate = true;
  fx.db.add_trials(fx.session, real);
  fx.db.add_trials(sim_session, simulated);

  QueryFilter by_name;
  by_name.device_name = "sim:h100-sxm";
  ASSERT_EQ(fx.db.history(by_name).size(), 1u);
  EXPECT_TRUE(fx.db.history(by_name)[0].device_simulated);
  EXPECT_TRUE(fx.db.history(by_name)[0].trial.estimate);

  QueryFilter by_cc;
  by_cc.cc_major = 9;
  by_cc.cc_minor = 0;
  by_cc.sm_count = 132;
  EXPECT_EQ(fx.db.history(by_cc).size(), 2u);
  by_cc.sm_count = 114;
  EXPECT_TRUE(fx.db.history(by_cc).empty());

  QueryFilter by_session;
  by_session.session_id = sim_session;
  ASSERT_EQ(fx.db.history(by_session).size(), 1u);
  EXPECT_EQ(fx.db.history(by_session)[0].trial.session_id, sim_session);
}

TEST(TuningDb, BestPerWorkloadGivesOneRowPerTargetInOrder) {
  Fixture fx;
  const int64_t small = fx.db.upsert_workload({"gemm", "M=512,N=512,K=512", "f32"});
  const int64_t axpy = fx.db.upsert_workload({"axpy", "N=1000000", "f32"});
  const int64_t s_small = fx.db.begin_session(fx.device, small, fx.tmpl, "random", 1, 10, "");
  const int64_t s_axpy = fx.db.begin_session(fx.device, axpy, fx.tmpl, "random", 1, 10, "");
  std::vector<TrialRecord> big_batch{ok_trial("{\"b\":1}", 4.0), ok_trial("{\"b\":2}", 3.0)};
  std::vector<TrialRecord> small_batch{ok_trial("{\"s\":1}", 0.5), failed_trial("{\"s\":2}", "launch_error")};
  std::vector<TrialRecord> axpy_batch{ok_trial("{\"a\":1}", 0.2), ok_trial("{\"a\":2}", 0.1)};
  fx.db.add_trials(fx.session, big_batch);
  fx.db.add_trials(s_small, small_batch);
  fx.db.add_trials(s_axpy, axpy_batch);

  const auto rows = fx.db.best_per_workload({});
  ASSERT_EQ(rows.size(), 3u);
  // Ordered by op, then shape: axpy, gemm M=1000..., gemm M=512...
  EXPECT_EQ(rows[0].workload.op, "axpy");
  EXPECT_EQ(rows[0].trial.config_json, "{\"a\":2}");
  EXPECT_EQ(rows[1].workload.shape, "M=1000,N=1000,K=1000");
  EXPECT_EQ(rows[1].trial.config_json, "{\"b\":2}");
  EXPECT_EQ(rows[2].workload.shape, "M=512,N=512,K=512");
  EXPECT_EQ(rows[2].trial.config_json, "{\"s\":1}");

  QueryFilter limited;
  limited.limit = 2;
  EXPECT_EQ(fx.db.best_per_workload(limited).size(), 2u);
  EXPECT_EQ(fx.db.history(limited).size(), 2u);
}

TEST(TuningDb, OneGpuUnderTwoToolchainsIsOneDeviceInBestQueries) {
  // A database merged from two machines: the same H100 under another driver and NVRTC. Its records are
  // one device's: one best row, the faster config, naming the toolchain it ran under.
  Fixture fx;
  DeviceIdentity newer = h100();
  newer.driver_version = "590.10";
  newer.nvrtc_version = "13.1";
  const int64_t other = fx.db.upsert_device(newer);
  ASSERT_NE(other, fx.device);
  const int64_t s_other = fx.db.begin_session(other, fx.workload, fx.tmpl, "random", 1, 10, "");
  std::vector<TrialRecord> old_batch{ok_trial("{\"b\":1}", 4.0), ok_trial("{\"b\":2}", 3.0)};
  std::vector<TrialRecord> new_batch{ok_trial("{\"b\":3}", 2.5)};
  fx.db.add_trials(fx.session, old_batch);
  fx.db.add_trials(s_other, new_batch);
  const auto rows = fx.db.best_per_workload({});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].trial.config_json, "{\"b\":3}");
  EXPECT_EQ(rows[0].nvrtc_version, "13.1");
  EXPECT_EQ(rows[0].driver_version, "590.10");
  // A config measured under both is ranked by the mean of all its measurements.
  std::vector<TrialRecord> again{ok_trial("{\"b\":3}", 3.3)};
  fx.db.add_trials(fx.session, again);
  const auto pooled = fx.db.best_per_workload({});
  ASSERT_EQ(pooled.size(), 1u);
  EXPECT_EQ(pooled[0].measurements, 2);
  EXPECT_DOUBLE_EQ(pooled[0].mean_time_ms, 2.9);
  EXPECT_DOUBLE_EQ(fx.db.best({})->mean_time_ms, 2.9);
}

TEST(TuningDb, SessionsNewestFirstWithTrialCounts) {
  Fixture fx;
  const uint64_t big_seed = 0xFEDCBA9876543210ull;  // Above INT64_MAX: must round-trip.
  const int64_t second = fx.db.begin_session(fx.device, fx.workload, fx.tmpl, "evolution", big_seed, 500, "cmd");
  std::vector<TrialRecord> batch{ok_trial("{}", 1.0), ok_trial("{\"x\":1}", 2.0)};
  fx.db.add_trials(second, batch);
  fx.db.end_session(fx.session, "interrupted");
  fx.db.end_session(second, "finished");
  EXPECT_THROW(fx.db.end_session(second, "bogus"), DbError);
  EXPECT_THROW(fx.db.end_session(9999, "finished"), DbError);

  const auto rows = fx.db.sessions({});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].id, second);
  EXPECT_EQ(rows[0].strategy, "evolution");
  EXPECT_EQ(rows[0].seed, big_seed);
  EXPECT_EQ(rows[0].budget, 500);
  EXPECT_EQ(rows[0].status, "finished");
  EXPECT_FALSE(rows[0].finished_at.empty());
  EXPECT_EQ(rows[0].trials, 2);
  EXPECT_EQ(rows[0].workload.op, "gemm");
  EXPECT_EQ(rows[0].device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(rows[1].id, fx.session);
  EXPECT_EQ(rows[1].seed, 42u);
  EXPECT_EQ(rows[1].status, "interrupted");
  EXPECT_EQ(rows[1].trials, 0);
}

TEST(TuningDb, FailedBatchKeepsNothing) {
  Fixture fx;
  std::vector<TrialRecord> good{ok_trial("{\"g\":1}", 1.0)};
  fx.db.add_trials(fx.session, good);
  ASSERT_EQ(fx.db.count_trials(fx.device, fx.workload, fx.tmpl), 1);

  std::vector<TrialRecord> batch{ok_trial("{\"b\":1}", 1.0), ok_trial("{\"b\":2}", 2.0),
                                 failed_trial("{\"b\":3}", "not_a_status"), ok_trial("{\"b\":4}", 3.0)};
  EXPECT_THROW(fx.db.add_trials(fx.session, batch), DbError);
  EXPECT_EQ(fx.db.count_trials(fx.device, fx.workload, fx.tmpl), 1);
  for (const auto& t : batch) EXPECT_EQ(t.id, 0) << "ids are assigned only on commit";

  // The connection is still usable after the rollback.
  std::vector<TrialRecord> after{ok_trial("{\"a\":1}", 1.0)};
  fx.db.add_trials(fx.session, after);
  EXPECT_EQ(fx.db.count_trials(fx.device, fx.workload, fx.tmpl), 2);

  std::vector<TrialRecord> orphan{ok_trial("{}", 1.0)};
  EXPECT_THROW(fx.db.add_trials(12345, orphan), DbError);
}

TEST(TuningDb, FileDatabaseReopensWithItsData) {
  TempDir dir;
  const std::string path = dir.file("tuning.db");
  {
    Fixture fx(path);
    std::vector<TrialRecord> batch{ok_trial("{}", 1.0)};
    fx.db.add_trials(fx.session, batch);
  }
  TuningDb db(path);
  EXPECT_EQ(db.schema_version(), TuningDb::kSchemaVersion);
  EXPECT_EQ(db.history({}).size(), 1u);
  EXPECT_EQ(db.integrity_check(), "ok");

  TuningDb ro = TuningDb::open_existing(path);
  EXPECT_EQ(ro.history({}).size(), 1u);
  EXPECT_THROW(ro.upsert_workload({"x", "y", "z"}), DbError);
}

TEST(TuningDb, MigratesVersionOneWithRowsIntact) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  create_schema_at_version(path, 1);
  exec_sql(path, test::kOneOldTrialSql);
  // A version-1 file is read read-only through a migrated in-memory copy; the file stays as it was.
  const std::string before = test::read_bytes(path);
  {
    TuningDb read = TuningDb::open_existing(path);
    EXPECT_EQ(read.schema_version(), TuningDb::kSchemaVersion);
    ASSERT_EQ(read.history({}).size(), 1u);
    EXPECT_EQ(read.history({})[0].trial.config_json, "{\"BM\":16}");
  }
  EXPECT_EQ(test::read_bytes(path), before) << "a read-only open changed an older file";

  TuningDb db(path);
  EXPECT_EQ(db.schema_version(), TuningDb::kSchemaVersion);
  const auto rows = db.history({});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].trial.config_json, R"({"BM":16})");
  EXPECT_EQ(rows[0].trial.compile_ms, 50.0);
  EXPECT_EQ(rows[0].trial.registers, 40);
  EXPECT_EQ(rows[0].trial.time_ms, 0.25);
  EXPECT_EQ(rows[0].trial.time_spread_ms, 0.0);
  EXPECT_EQ(rows[0].trial.repeats, 0);
  EXPECT_FALSE(rows[0].trial.estimate);
  EXPECT_EQ(rows[0].trial.purpose, "search");  // v3 default for old rows
  EXPECT_EQ(rows[0].device_name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(db.count_trials(1, 1, 1), 1);

  // Upserts find the migrated rows, and new trials carry the new columns.
  DeviceIdentity a100{"NVIDIA A100-SXM4-40GB", false, 8, 0, 108, 42000000000, "12.4", "12.4"};
  EXPECT_EQ(db.upsert_device(a100), 1);
  std::vector<TrialRecord> batch{ok_trial("{\"BM\":32}", 0.2)};
  batch[0].time_spread_ms = 0.01;
  db.add_trials(1, batch);
  EXPECT_EQ(db.best({})->trial.time_spread_ms, 0.01);
  EXPECT_EQ(db.integrity_check(), "ok");
}

TEST(TuningDb, RefusesNewerSchemaWithoutTouchingIt) {
  TempDir dir;
  const std::string path = dir.file("future.db");
  { TuningDb db(path); }
  exec_sql(path, "UPDATE schema_version SET version = " + std::to_string(TuningDb::kSchemaVersion + 1));
  const std::string before = read_bytes(path);
  try {
    TuningDb db(path);
    FAIL() << "a newer database was opened";
  } catch (const DbError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("database '" + path + "' has schema version " +
                                              std::to_string(TuningDb::kSchemaVersion + 1) + ", newer than this tuner (" +
                                              std::to_string(TuningDb::kSchemaVersion) + ")",
                                          0),
              0u)
        << e.what();
    EXPECT_EQ(e.kind(), DbError::Kind::kNewer);
    EXPECT_TRUE(e.bad_input());
  }
  EXPECT_THROW(TuningDb::open_existing(path), DbError);
  EXPECT_EQ(read_bytes(path), before);
}

TEST(TuningDb, RefusesNonDatabaseFileWithoutTouchingIt) {
  TempDir dir;
  const std::string path = dir.file("notes.txt");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "these are my notes, line " + std::to_string(i) + "\n";
  write_bytes(path, text);
  try {
    TuningDb db(path);
    FAIL() << "a text file was opened as a database";
  } catch (const DbError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not an SQLite database"), std::string::npos) << e.what();
  }
  EXPECT_THROW(TuningDb::open_existing(path), DbError);
  EXPECT_EQ(read_bytes(path), text);
  EXPECT_FALSE(fs::exists(path + "-wal"));
}

TEST(TuningDb, RefusesForeignSqliteDatabase) {
  TempDir dir;
  const std::string path = dir.file("other.db");
  create_schema_at_version(path, 1);
  exec_sql(path, "DROP TABLE schema_version; CREATE TABLE notes (x TEXT);");
  const std::string before = read_bytes(path);
  try {
    TuningDb db(path);
    FAIL() << "a foreign database was opened";
  } catch (const DbError& e) {
    EXPECT_NE(std::string(e.what()).find("not a tuner database"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_bytes(path), before);
}

TEST(TuningDb, OpenErrorsAreOneClearLine) {
  TempDir dir;
  const std::string missing = dir.file("missing.db");
  try {
    TuningDb::open_existing(missing);
    FAIL() << "a missing database was opened";
  } catch (const DbError& e) {
    EXPECT_EQ(std::string(e.what()), "database '" + missing + "' does not exist");
  }
  EXPECT_FALSE(fs::exists(missing));

  const std::string unreachable = dir.file("no/such/dir/tuning.db");
  try {
    TuningDb db(unreachable);
    FAIL() << "a database in a missing directory was opened";
  } catch (const DbError& e) {
    const std::string what = e.what();
    // It named SQLite's "unable to open database file" alone; now the folder that is missing, and what is allowed.
    EXPECT_EQ(what, "database '" + unreachable + "': folder '" + dir.file("no/such/dir") +
                        "' does not exist; allowed: a file in an existing folder");
    EXPECT_TRUE(e.bad_input());
  }
}

TEST(TuningDb, KilledWriterLeavesWholeBatches) {
  TempDir dir;
  const std::string path = dir.file("crash.db");
  constexpr int kBatch = 500;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Child: write batches forever; tell the parent once the first one is committed.
    close(ready[0]);
    try {
      Fixture fx(path);
      for (int round = 0;; ++round) {
        std::vector<TrialRecord> batch;
        batch.reserve(kBatch);
        for (int i = 0; i < kBatch; ++i) {
          TrialRecord t = ok_trial("{\"round\":" + std::to_string(round) + ",\"i\":" + std::to_string(i) + "}",
                                   1.0 + i);
          t.error_message = std::string(200, 'x');  // Make batches span many pages.
          batch.push_back(std::move(t));
        }
        fx.db.add_trials(fx.session, batch);
        if (round == 0 && write(ready[1], "r", 1) != 1) _exit(3);
      }
    } catch (...) {
      _exit(2);
    }
  }

  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1) << "child failed before its first commit";
  close(ready[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited on its own with " << WEXITSTATUS(status);

  TuningDb db(path);
  EXPECT_EQ(db.integrity_check(), "ok");
  const auto sessions = db.sessions({});
  ASSERT_EQ(sessions.size(), 1u);
  const int64_t count = sessions[0].trials;
  EXPECT_GE(count, kBatch);
  EXPECT_EQ(count % kBatch, 0) << count << " trials is not a whole number of batches";
  EXPECT_EQ(static_cast<int64_t>(db.history({}).size()), count);
}

}  // namespace
}  // namespace tuner::db

namespace tuner::db {
namespace {

TEST(TuningDbSimulatedFilter, RealAndSimDevicesWithTheSameIdentityStayApart) {
  TuningDb db(":memory:");
  DeviceIdentity real{"NVIDIA H100 80GB HBM3", false, 9, 0, 132, 85000000000, "13.0", "13.0"};
  DeviceIdentity sim{"sim:h100-sxm", true, 9, 0, 132, 80000000000, "none", "13.0"};
  const int64_t w = db.upsert_workload({"gemm", "M=8,N=8,K=8", "f32"});
  const int64_t t = db.upsert_template({"gemm_f32_simt", "abc"});
  for (auto [dev, ms] : {std::pair<DeviceIdentity, double>{real, 2.0}, {sim, 1.0}}) {
    const int64_t s = db.begin_session(db.upsert_device(dev), w, t, "random", 1, 1, "test");
    std::vector<TrialRecord> trials(1);
    trials[0].config_json = "{}";
    trials[0].time_ms = ms;
    db.add_trials(s, trials);
  }
  QueryFilter f;
  f.cc_major = 9;
  f.cc_minor = 0;
  f.sm_count = 132;
  EXPECT_EQ(db.best(f)->device_name, "sim:h100-sxm");  // without the filter the estimate wins
  f.simulated = false;
  ASSERT_TRUE(db.best(f).has_value());
  EXPECT_EQ(db.best(f)->device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(db.best(f)->trial.time_ms, 2.0);
}

}  // namespace
}  // namespace tuner::db

namespace tuner::db {
namespace {

TEST(TuningDbV3, ReMeasuredFinalistIsRankedByItsMeanTime) {
  Fixture fx;
  // c1 measured 1.0 once; c2 measured 0.9 then re-measured 1.3: mean 1.1 > 1.0, so c1 wins.
  std::vector<TrialRecord> batch{ok_trial("{\"c\":1}", 1.0), ok_trial("{\"c\":2}", 0.9)};
  fx.db.add_trials(fx.session, batch);
  EXPECT_EQ(fx.db.best({})->trial.config_json, "{\"c\":2}");
  TrialRecord again = ok_trial("{\"c\":2}", 1.3);
  again.purpose = "remeasure";
  std::vector<TrialRecord> remeasured{again};
  fx.db.add_trials(fx.session, remeasured);

  const auto best = fx.db.best({});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->trial.config_json, "{\"c\":1}");
  EXPECT_EQ(best->measurements, 1);
  const auto per = fx.db.best_per_workload({});
  ASSERT_EQ(per.size(), 1u);
  EXPECT_EQ(per[0].trial.config_json, "{\"c\":1}");

  const auto rows = fx.db.history({});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].trial.purpose, "remeasure");
  EXPECT_EQ(rows[0].trial.purpose, "search");

  // A third, fast measurement of c2 brings its mean (0.9+1.3+0.5)/3 = 0.9 below c1's 1.0.
  TrialRecord third = ok_trial("{\"c\":2}", 0.5);
  third.purpose = "remeasure";
  std::vector<TrialRecord> more{third};
  fx.db.add_trials(fx.session, more);
  const auto now_best = fx.db.best({});
  EXPECT_EQ(now_best->trial.config_json, "{\"c\":2}");
  EXPECT_EQ(now_best->measurements, 3);
  EXPECT_NEAR(now_best->mean_time_ms, 0.9, 1e-12);
}

TEST(TuningDbV3, RejectsUnknownPurposeAndKeepsTheBatchOut) {
  Fixture fx;
  TrialRecord bad = ok_trial("{\"c\":1}", 1.0);
  bad.purpose = "whatever";
  std::vector<TrialRecord> batch{ok_trial("{\"c\":0}", 1.0), bad};
  EXPECT_THROW(fx.db.add_trials(fx.session, batch), DbError);
  EXPECT_TRUE(fx.db.history({}).empty());
}

TEST(TuningDbV3, CostModelBytesRoundTripAndNewestWins) {
  Fixture fx;
  const std::string bytes("{\0\x01\xff binary", 12);
  CostModelRecord m{0, "xgb-rank", "gemm", "gemm_f32_simt", "[\"a\",\"b\"]", 40, fx.session, bytes, ""};
  const int64_t first = fx.db.add_cost_model(m);
  EXPECT_GT(first, 0);
  EXPECT_FALSE(m.created_at.empty());
  CostModelRecord newer = m;
  newer.model = "second";
  newer.session_id = 0;
  fx.db.add_cost_model(newer);

  const auto got = fx.db.latest_cost_model("xgb-rank", "gemm", "gemm_f32_simt");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->model, "second");
  EXPECT_EQ(got->session_id, 0);
  EXPECT_FALSE(fx.db.latest_cost_model("xgb-rank", "conv2d", "gemm_f32_simt").has_value());
  EXPECT_EQ(first + 1, got->id);
}

TEST(TuningDbV3, CostModelBlobKeepsNulBytes) {
  TempDir dir;
  const std::string path = dir.file("models.db");
  const std::string bytes("{\0\x01\xff binary", 12);
  {
    TuningDb db(path);
    CostModelRecord m{0, "xgb-rank", "gemm", "t", "[]", 1, 0, bytes, ""};
    db.add_cost_model(m);
  }
  const auto got = TuningDb::open_existing(path).latest_cost_model("xgb-rank", "gemm", "t");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->model, bytes);
}

TEST(TuningDbV3, PlansAreListedNewestFirst) {
  TuningDb db(":memory:");
  PlanRecord a;
  a.model = "gpt3-175b";
  a.cluster = "dgx-h100:128";
  a.options_json = "{\"global_batch\":1536}";
  a.plan_json = "{\"tp\":8}";
  a.tp = 8;
  a.pp = 16;
  a.dp = 8;
  a.iteration_time_s = 12.5;
  a.tflops_per_gpu = 400;
  a.mfu = 0.4;
  a.peak_memory_bytes = 70'000'000'000;
  a.planning_s = 1.25;
  db.add_plan(a);
  PlanRecord b = a;
  b.model = "llama3-70b";
  db.add_plan(b);
  EXPECT_FALSE(b.already_logged);
  PlanRecord again = a;  // the same plan, planned again (another wall time): not logged twice
  again.planning_s = 2.5;
  EXPECT_EQ(db.add_plan(again), a.id);
  EXPECT_TRUE(again.already_logged);
  const auto rows = db.plans();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].model, "llama3-70b");
  EXPECT_EQ(rows[1].peak_memory_bytes, 70'000'000'000);
  EXPECT_EQ(rows[1].dp, 8);
  EXPECT_DOUBLE_EQ(rows[1].mfu, 0.4);
  EXPECT_EQ(db.plans(1).size(), 1u);
}

}  // namespace
}  // namespace tuner::db

namespace tuner::db {
namespace {

using namespace tuner::db::test;  // NOLINT: the fixture is this file's vocabulary

// A writer killed before it checkpointed leaves its commits in the -wal: a reader finds them there, and once it
// closes, the file alone holds them (the last connection folds the -wal in; the contents do not change).
TEST(TuningDb, CommitsAKilledWriterLeftInTheWalAreReadAndFoldedIn) {
  TempDir dir;
  const std::string path = dir.file("live.db"), copy = dir.file("crashed.db");
  Fixture fx(path);
  std::vector<TrialRecord> batch{ok_trial("{\"c\":1}", 0.5), ok_trial("{\"c\":2}", 0.4)};
  fx.db.add_trials(fx.session, batch);
  // The files as a kill -9 leaves them: the writer is still open, its commits only in the -wal.
  std::filesystem::copy_file(path, copy);
  std::filesystem::copy_file(path + "-wal", copy + "-wal");
  ASSERT_GT(std::filesystem::file_size(copy + "-wal"), 0u);
  EXPECT_EQ(TuningDb::open_existing(copy).history({}).size(), 2u) << "the -wal's commits are read";
  const std::string alone = dir.file("alone.db");
  std::filesystem::copy_file(copy, alone);
  EXPECT_EQ(TuningDb::open_existing(alone).history({}).size(), 2u) << "the file alone holds them after the read";
}

}  // namespace
}  // namespace tuner::db
