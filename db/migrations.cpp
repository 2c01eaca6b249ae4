#include "db/migrations.h"

#include <iterator>

#include "db/sqlite_handle.h"
#include "db/tuning_db.h"

namespace tuner::db {
namespace {

// Version 1: the first released schema. Trials have no timing spread, repeat count or estimate flag.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE schema_version (
  version INTEGER NOT NULL
);
INSERT INTO schema_version (version) VALUES (0);

CREATE TABLE devices (
  id             INTEGER PRIMARY KEY,
  name           TEXT    NOT NULL,
  simulated      INTEGER NOT NULL CHECK (simulated IN (0, 1)),
  cc_major       INTEGER NOT NULL,
  cc_minor       INTEGER NOT NULL,
  sm_count       INTEGER NOT NULL,
  memory_bytes   INTEGER NOT NULL,
  driver_version TEXT    NOT NULL,
  nvrtc_version  TEXT    NOT NULL,
  UNIQUE (name, simulated, cc_major, cc_minor, sm_count, memory_bytes, driver_version, nvrtc_version)
);

CREATE TABLE workloads (
  id    INTEGER PRIMARY KEY,
  op    TEXT NOT NULL,
  shape TEXT NOT NULL,
  dtype TEXT NOT NULL,
  UNIQUE (op, shape, dtype)
);

CREATE TABLE templates (
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  hash TEXT NOT NULL,
  UNIQUE (name, hash)
);

CREATE TABLE sessions (
  id           INTEGER PRIMARY KEY,
  device_id    INTEGER NOT NULL REFERENCES devices (id),
  workload_id  INTEGER NOT NULL REFERENCES workloads (id),
  template_id  INTEGER NOT NULL REFERENCES templates (id),
  strategy     TEXT    NOT NULL,
  seed         INTEGER NOT NULL,
  budget       INTEGER NOT NULL,
  command_line TEXT    NOT NULL DEFAULT '',
  status       TEXT    NOT NULL DEFAULT 'running'
               CHECK (status IN ('running', 'finished', 'interrupted')),
  started_at   TEXT    NOT NULL,
  finished_at  TEXT    NOT NULL DEFAULT ''
);

CREATE TABLE trials (
  id            INTEGER PRIMARY KEY,
  session_id    INTEGER NOT NULL REFERENCES sessions (id),
  device_id     INTEGER NOT NULL REFERENCES devices (id),
  workload_id   INTEGER NOT NULL REFERENCES workloads (id),
  template_id   INTEGER NOT NULL REFERENCES templates (id),
  config_json   TEXT    NOT NULL,
  status        TEXT    NOT NULL
                CHECK (status IN ('ok', 'invalid_config', 'compile_error', 'compile_timeout', 'launch_error',
                                  'runtime_fault', 'run_timeout', 'wrong_answer', 'unknown')),
  error_message TEXT    NOT NULL DEFAULT '',
  compile_ms    REAL    NOT NULL DEFAULT 0,
  registers     INTEGER NOT NULL DEFAULT 0,
  shared_bytes  INTEGER NOT NULL DEFAULT 0,
  spill_bytes   INTEGER NOT NULL DEFAULT 0,
  time_ms       REAL    NOT NULL DEFAULT 0,
  gflops        REAL    NOT NULL DEFAULT 0,
  started_at    TEXT    NOT NULL DEFAULT '',
  finished_at   TEXT    NOT NULL DEFAULT ''
);

CREATE INDEX trials_by_target ON trials (device_id, workload_id, template_id);
)sql";

// Version 2: timing spread, repeat count and the estimate flag per trial; indices for session queries.
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE trials ADD COLUMN time_spread_ms REAL    NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN repeats        INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN estimate       INTEGER NOT NULL DEFAULT 0;
CREATE INDEX trials_by_session ON trials (session_id);
CREATE INDEX sessions_by_target ON sessions (device_id, workload_id, template_id);
)sql";

// Version 3: the purpose of a trial (search or a re-measurement of a finalist), saved cost models,
// and parallel plans.
constexpr const char* kSchemaV3 = R"sql(
ALTER TABLE trials ADD COLUMN purpose TEXT NOT NULL DEFAULT 'search' CHECK (purpose IN ('search', 'remeasure'));

CREATE TABLE cost_models (
  id            INTEGER PRIMARY KEY,
  kind          TEXT    NOT NULL,
  op            TEXT    NOT NULL,
  template_name TEXT    NOT NULL,
  feature_names TEXT    NOT NULL,
  rows          INTEGER NOT NULL,
  session_id    INTEGER REFERENCES sessions (id),
  model         BLOB    NOT NULL,
  created_at    TEXT    NOT NULL
);
CREATE INDEX cost_models_by_template ON cost_models (op, template_name, kind);

CREATE TABLE plans (
  id                INTEGER PRIMARY KEY,
  model             TEXT    NOT NULL,
  cluster           TEXT    NOT NULL,
  options_json      TEXT    NOT NULL,
  plan_json         TEXT    NOT NULL,
  tp                INTEGER NOT NULL,
  pp                INTEGER NOT NULL,
  dp                INTEGER NOT NULL,
  iteration_time_s  REAL    NOT NULL,
  tflops_per_gpu    REAL    NOT NULL,
  mfu               REAL    NOT NULL,
  peak_memory_bytes INTEGER NOT NULL,
  planning_s        REAL    NOT NULL,
  created_at        TEXT    NOT NULL
);
)sql";

struct Migration {
  int to_version;   ///< Version of the schema after this step.
  const char* sql;  ///< Statements of the step; the version row is updated after them.
};

// Ordered; the last entry is the current schema.
constexpr Migration kMigrations[] = {
    {1, kSchemaV1},
    {2, kSchemaV2},
    {3, kSchemaV3},
};
static_assert(std::size(kMigrations) > 0 &&
                  kMigrations[std::size(kMigrations) - 1].to_version == TuningDb::kSchemaVersion,
              "the last migration must produce TuningDb::kSchemaVersion");

std::string newer_message(const std::string& path, int version, int supported) {
  return "database '" + path + "' has schema version " + std::to_string(version) + ", newer than this tuner (" +
         std::to_string(supported) + ")";
}

}  // namespace

int read_schema_version(sql::Connection& conn) {
  conn.probe();
  sql::Statement tables(conn,
                        "SELECT count(*), coalesce(sum(name = 'schema_version'), 0) FROM sqlite_master "
                        "WHERE name NOT LIKE 'sqlite_%'");
  tables.step();
  const int64_t objects = tables.column_int64(0);
  const bool has_version_table = tables.column_int64(1) > 0;
  if (objects == 0) return 0;
  if (!has_version_table) {
    throw DbError("database '" + conn.path() + "' is not a tuner database (it has no schema_version table)");
  }
  sql::Statement version(conn, "SELECT version FROM schema_version");
  if (!version.step() || version.column_is_null(0)) {
    throw DbError("database '" + conn.path() + "' is not a tuner database (its schema_version table is empty)");
  }
  const int64_t v = version.column_int64(0);
  if (version.step()) {
    throw DbError("database '" + conn.path() + "' is damaged (its schema_version table has several rows)");
  }
  return static_cast<int>(v);
}

void migrate(sql::Connection& conn, int target) {
  for (const Migration& m : kMigrations) {
    if (m.to_version > target) break;
    // Re-read the version under the write lock: another process may have migrated meanwhile.
    sql::Transaction tx(conn);
    const int current = read_schema_version(conn);
    if (current > target) throw DbError(newer_message(conn.path(), current, target));
    if (current >= m.to_version) continue;  // tx rolls back an empty transaction
    conn.exec(m.sql);
    sql::Statement set_version(conn, "UPDATE schema_version SET version = ?");
    set_version.bind(1, m.to_version).run();
    tx.commit();
  }
}

void create_schema_at_version(const std::string& path, int version) {
  if (version < 1 || version > TuningDb::kSchemaVersion) {
    throw DbError("create_schema_at_version: no schema version " + std::to_string(version));
  }
  sql::Connection conn(path, sql::OpenMode::kReadWriteCreate);
  conn.set_busy_timeout(5000);
  const int current = read_schema_version(conn);
  if (current > version) throw DbError(newer_message(path, current, version));
  migrate(conn, version);
}

void exec_sql(const std::string& path, const std::string& sql) {
  sql::Connection conn(path, sql::OpenMode::kReadWrite);
  conn.set_busy_timeout(5000);
  conn.exec(sql);
}

}  // namespace tuner::db
