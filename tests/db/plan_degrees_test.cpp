// Schema 5: the plans table carries cp and ep beside tp, pp and dp. A version-4 file migrates with its plans
// intact, each taking cp (and ep) from its plan JSON where it has them, else 1; new plans store theirs; a merge
// brings them along.
#include <gtest/gtest.h>

#include "db/migrations.h"
#include "db/tuning_db.h"
#include "tests/db/db_fixture.h"

namespace tuner::db {
namespace {

using test::TempDir;

PlanRecord plan(const std::string& model, int tp, int cp, int ep, const std::string& json) {
  PlanRecord p;
  p.model = model;
  p.cluster = "dgx-h100:16";
  p.options_json = "{\"global_batch\":512}";
  p.plan_json = json;
  p.tp = tp;
  p.pp = 2;
  p.dp = 128 / (tp * cp * 2);
  p.cp = cp;
  p.ep = ep;
  p.iteration_time_s = 3.5;
  p.tflops_per_gpu = 410;
  p.mfu = 0.41;
  p.peak_memory_bytes = 60'000'000'000;
  p.planning_s = 0.5;
  return p;
}

TEST(PlanDegrees, AVersionFourFileMigratesTakingCpFromThePlanJson) {
  TempDir dir;
  const std::string path = dir.file("v4.db");
  create_schema_at_version(path, 4);
  exec_sql(path, R"sql(
    INSERT INTO plans (id, model, cluster, options_json, plan_json, tp, pp, dp, iteration_time_s, tflops_per_gpu, mfu,
                       peak_memory_bytes, planning_s, created_at) VALUES
      (1, 'llama3-8b:seq=131072', 'dgx-h100:16', '{}', '{"tp":8,"cp":4,"pp":1,"dp":4}', 8, 1, 4, 9.5, 300, 0.3,
       70000000000, 1.5, '2026-01-01T00:00:00.000Z'),
      (2, 'gpt3-1.3b', 'dgx-h100:1', '{}', '{"tp":1,"pp":1,"dp":8}', 1, 1, 8, 0.5, 200, 0.2, 20000000000, 0.1,
       '2026-01-02T00:00:00.000Z'),
      (3, 'odd', 'dgx-h100:1', '{}', 'not json', 2, 1, 4, 1.0, 100, 0.1, 1000, 0.1, '2026-01-03T00:00:00.000Z'),
      (4, 'moe', 'dgx-h100:4', '{}', '{"tp":2,"cp":1,"ep":4,"pp":1,"dp":16}', 2, 1, 16, 2.0, 250, 0.25, 50000000000,
       0.3, '2026-01-04T00:00:00.000Z');
  )sql");
  EXPECT_EQ(TuningDb::open_existing(path).plans().size(), 4u);  // read through a migrated in-memory copy

  TuningDb db(path);
  EXPECT_EQ(db.schema_version(), TuningDb::kSchemaVersion);
  const auto rows = db.plans();
  ASSERT_EQ(rows.size(), 4u);  // newest first
  EXPECT_EQ(rows[3].model, "llama3-8b:seq=131072");
  EXPECT_EQ(rows[3].cp, 4);
  EXPECT_EQ(rows[3].ep, 1);
  EXPECT_EQ(rows[3].tp, 8);
  EXPECT_EQ(rows[3].dp, 4);
  EXPECT_DOUBLE_EQ(rows[3].iteration_time_s, 9.5);
  EXPECT_EQ(rows[3].plan_json, R"({"tp":8,"cp":4,"pp":1,"dp":4})");
  EXPECT_EQ(rows[2].cp, 1);  // no cp in its JSON
  EXPECT_EQ(rows[1].cp, 1);  // not JSON at all
  EXPECT_EQ(rows[1].ep, 1);
  EXPECT_EQ(rows[0].ep, 4);
  EXPECT_EQ(db.integrity_check(), "ok");
}

TEST(PlanDegrees, NewPlansKeepTheirDegreesAndMergeBringsThem) {
  TempDir dir;
  const std::string a = dir.file("a.db"), b = dir.file("b.db");
  {
    TuningDb db(a);
    PlanRecord p = plan("moe", 2, 2, 8, "{\"ep\":8}");
    db.add_plan(p);
    // Another ep is another plan, even with the same predictions.
    PlanRecord q = plan("moe", 2, 2, 4, "{\"ep\":4}");
    db.add_plan(q);
    EXPECT_FALSE(q.already_logged);
    EXPECT_NE(p.id, q.id);
    const auto rows = db.plans();
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].ep, 4);
    EXPECT_EQ(rows[1].ep, 8);
    EXPECT_EQ(rows[1].cp, 2);
  }
  TuningDb into(b);
  const MergeReport r = into.merge_from(a);
  EXPECT_EQ(r.plans_added, 2);
  const auto rows = into.plans();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].ep + rows[1].ep, 12);
  EXPECT_EQ(rows[0].cp, 2);
  EXPECT_EQ(into.merge_from(a).plans_added, 0);
}

}  // namespace
}  // namespace tuner::db
