// TuningDb::merge_from: the union of two databases' records, never a duplicate, all or nothing.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <set>

#include "db/migrations.h"
#include "db/tuning_db.h"
#include "tests/db/db_fixture.h"

namespace tuner::db {
namespace {

using test::h100;
using test::ok_trial;
using test::TempDir;

/// A file with one session of `configs` (each measured once, time = its index + 1 ms) on an H100.
void tune_into(const std::string& path, const std::vector<std::string>& configs, const std::string& template_hash = "h1") {
  TuningDb db(path);
  const int64_t d = db.upsert_device(h100());
  const int64_t w = db.upsert_workload(test::gemm());
  const int64_t t = db.upsert_template({"gemm_f32_simt", template_hash});
  const int64_t s = db.begin_session(d, w, t, "random", 1, 100, "");
  std::vector<TrialRecord> batch;
  for (size_t i = 0; i < configs.size(); ++i) batch.push_back(ok_trial(configs[i], static_cast<double>(i + 1)));
  db.add_trials(s, batch);
  db.end_session(s, "finished");
}

std::multiset<std::string> configs_of(TuningDb& db) {
  std::multiset<std::string> out;
  for (const auto& r : db.history({})) out.insert(r.template_hash + " " + r.trial.config_json);
  return out;
}

TEST(Merge, GivesTheUnionAndMergingTwiceAddsNothing) {
  TempDir dir;
  const std::string a = dir.file("a.db"), b = dir.file("b.db");
  tune_into(a, {"{\"BM\":1}", "{\"BM\":2}", "{\"BM\":3}"});
  tune_into(b, {"{\"BM\":3}", "{\"BM\":4}"});       // BM 3 is in both
  tune_into(b, {"{\"BM\":1}"}, "h2");               // another template version: a different target
  {
    PlanRecord p;
    p.model = "gpt3-175b";
    p.cluster = "dgx-a100:8";
    p.options_json = "{}";
    p.plan_json = "{\"tp\":8}";
    TuningDb(b).add_plan(p);
  }
  const std::string b_before = test::read_bytes(b);

  TuningDb db(a);
  MergeReport r = db.merge_from(b);
  EXPECT_EQ(r.trials_added, 2);   // BM 4 (h1) and BM 1 (h2)
  EXPECT_EQ(r.duplicates, 1);     // BM 3 (h1)
  EXPECT_EQ(r.sessions_added, 2);
  EXPECT_EQ(r.plans_added, 1);
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(configs_of(db), (std::multiset<std::string>{"h1 {\"BM\":1}", "h1 {\"BM\":2}", "h1 {\"BM\":3}",
                                                         "h1 {\"BM\":4}", "h2 {\"BM\":1}"}));
  // The merged trial keeps its measurement and lands under a copy of its session.
  QueryFilter f;
  f.template_hashes = {"h1"};
  const auto best_h2 = [&] {
    QueryFilter g;
    g.template_hashes = {"h2"};
    return db.best(g);
  }();
  ASSERT_TRUE(best_h2.has_value());
  EXPECT_DOUBLE_EQ(best_h2->trial.time_ms, 1.0);
  EXPECT_EQ(db.sessions({}).size(), 3u);

  MergeReport again = db.merge_from(b);
  EXPECT_EQ(again.trials_added, 0);
  EXPECT_EQ(again.duplicates, 3);
  EXPECT_EQ(again.sessions_added, 0);
  EXPECT_EQ(again.plans_added, 0);
  EXPECT_EQ(db.history({}).size(), 5u);
  EXPECT_EQ(db.plans().size(), 1u);
  EXPECT_EQ(db.integrity_check(), "ok");
  EXPECT_EQ(test::read_bytes(b), b_before) << "merge wrote to the file it merged from";
}

// A session still marked running where it came from arrives as killed. Its reason said "while still running
// there" of a process long dead too; now it says which (the process's liveness, judged on this host).
TEST(Merge, ARunningSessionArrivesKilledSayingWhetherItsProcessStillRuns) {
  TempDir dir;
  const std::string live = dir.file("live.db"), dead = dir.file("dead.db");
  const auto open_session = [](const std::string& path, const char* config) {
    TuningDb db(path);
    const int64_t s = db.begin_session(db.upsert_device(h100()), db.upsert_workload(test::gemm()),
                                       db.upsert_template({"gemm_f32_simt", "h1"}), "random", 1, 100, "");
    std::vector<TrialRecord> batch{ok_trial(config, 1.0)};
    db.add_trials(s, batch);  // and never ended
  };
  open_session(live, "{\"BM\":1}");  // by this process, which runs
  const pid_t child = fork();
  if (child == 0) {
    open_session(dead, "{\"BM\":2}");
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  TuningDb db(dir.file("into.db"));
  db.merge_from(live);
  db.merge_from(dead);
  std::map<std::string, std::string> reason_of;
  for (const auto& s : db.sessions({})) {
    EXPECT_EQ(s.status, "killed");
    reason_of[s.reason.find("live.db") != std::string::npos ? "live" : "dead"] = s.reason;
  }
  EXPECT_NE(reason_of["live"].find("while still running there"), std::string::npos) << reason_of["live"];
  EXPECT_NE(reason_of["dead"].find("its process had ended without closing it"), std::string::npos)
      << reason_of["dead"];
}

TEST(Merge, RefusesWhatIsNotATunerDatabaseAndChangesNothing) {
  TempDir dir;
  const std::string a = dir.file("a.db");
  tune_into(a, {"{\"BM\":1}"});
  const std::string notes = dir.file("notes.txt");
  test::write_bytes(notes, std::string(5000, 'x'));
  TuningDb db(a);
  EXPECT_THROW(db.merge_from(notes), DbError);
  EXPECT_THROW(db.merge_from(dir.file("missing.db")), DbError);
  const std::string newer = dir.file("newer.db");
  create_schema_at_version(newer, 1);
  exec_sql(newer, "UPDATE schema_version SET version = " + std::to_string(TuningDb::kSchemaVersion + 1));
  try {
    db.merge_from(newer);
    FAIL() << "merged a file of a newer schema";
  } catch (const DbError& e) {
    EXPECT_TRUE(e.bad_input());
  }
  EXPECT_EQ(db.history({}).size(), 1u);
}

TEST(Merge, AnOlderFileIsMergedThroughAMigratedCopyAndLeftAsItWas) {
  // Refused before ("merge needs version N"): a database from a machine running an older tuner.
  TempDir dir;
  const std::string a = dir.file("a.db"), old = dir.file("old.db");
  tune_into(a, {"{\"BM\":1}"});
  create_schema_at_version(old, 5);
  exec_sql(old, test::kOneOldTrialSql);
  const std::string old_before = test::read_bytes(old);
  TuningDb db(a);
  const MergeReport r = db.merge_from(old);
  EXPECT_EQ(r.trials_added, 1);
  const auto rows = db.history({});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].trial.config_json, "{\"BM\":16}");
  EXPECT_EQ(rows[1].trial.bytes, 0) << "not recorded before version 6";
  EXPECT_EQ(test::read_bytes(old), old_before) << "merge wrote to the older file";
  EXPECT_EQ(db.merge_from(old).trials_added, 0);
}

}  // namespace
}  // namespace tuner::db
