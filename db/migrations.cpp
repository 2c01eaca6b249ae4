#include "db/migrations.h"

#include <algorithm>
#include <iterator>
#include <optional>

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

// Version 4: sessions record the process that runs them (pid, host, start time) and how they ended
// ('failed' with a reason, 'killed' when their process died), and claims let processes that share a
// database share a budget: a config is claimed before it is measured, and its claim goes when its trial
// is stored or its session ends. SQLite cannot change a CHECK constraint, so sessions is rebuilt (with
// foreign keys off, as SQLite's ALTER TABLE documentation prescribes). Sessions an older tuner left
// 'running' cannot be judged (no pid): they become 'killed' with that reason.
constexpr const char* kSchemaV4 = R"sql(
CREATE TABLE sessions_v4 (
  id            INTEGER PRIMARY KEY,
  device_id     INTEGER NOT NULL REFERENCES devices (id),
  workload_id   INTEGER NOT NULL REFERENCES workloads (id),
  template_id   INTEGER NOT NULL REFERENCES templates (id),
  strategy      TEXT    NOT NULL,
  seed          INTEGER NOT NULL,
  budget        INTEGER NOT NULL,
  command_line  TEXT    NOT NULL DEFAULT '',
  status        TEXT    NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'finished', 'interrupted', 'failed', 'killed')),
  started_at    TEXT    NOT NULL,
  finished_at   TEXT    NOT NULL DEFAULT '',
  reason        TEXT    NOT NULL DEFAULT '',
  pid           INTEGER NOT NULL DEFAULT 0,
  host          TEXT    NOT NULL DEFAULT '',
  process_start INTEGER NOT NULL DEFAULT 0
);
INSERT INTO sessions_v4 (id, device_id, workload_id, template_id, strategy, seed, budget, command_line, status,
                         started_at, finished_at, reason)
  SELECT id, device_id, workload_id, template_id, strategy, seed, budget, command_line,
         CASE status WHEN 'running' THEN 'killed' ELSE status END, started_at, finished_at,
         CASE status WHEN 'running' THEN 'left running by an older tuner (no process recorded)' ELSE '' END
  FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_v4 RENAME TO sessions;
CREATE INDEX sessions_by_target ON sessions (device_id, workload_id, template_id);
CREATE INDEX sessions_by_status ON sessions (status);

CREATE TABLE claims (
  device_id   INTEGER NOT NULL REFERENCES devices (id),
  workload_id INTEGER NOT NULL REFERENCES workloads (id),
  template_id INTEGER NOT NULL REFERENCES templates (id),
  config_json TEXT    NOT NULL,
  session_id  INTEGER NOT NULL REFERENCES sessions (id),
  claimed_at  TEXT    NOT NULL,
  PRIMARY KEY (device_id, workload_id, template_id, config_json)
);
CREATE INDEX claims_by_session ON claims (session_id);
CREATE INDEX trials_by_config ON trials (device_id, workload_id, template_id, config_json);
)sql";

// Version 5: the plans table gains the context-parallel (cp) and expert-parallel (ep) degrees beside tp, pp and dp.
// Plans logged before carry cp in their plan JSON (ep did not exist: 1); a plan JSON without them, or one that is
// not JSON, gets 1.
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE plans ADD COLUMN cp INTEGER NOT NULL DEFAULT 1;
ALTER TABLE plans ADD COLUMN ep INTEGER NOT NULL DEFAULT 1;
UPDATE plans SET cp = json_extract(plan_json, '$.cp')
  WHERE json_valid(plan_json) AND json_type(plan_json, '$.cp') = 'integer' AND json_extract(plan_json, '$.cp') >= 1;
UPDATE plans SET ep = json_extract(plan_json, '$.ep')
  WHERE json_valid(plan_json) AND json_type(plan_json, '$.ep') = 'integer' AND json_extract(plan_json, '$.ep') >= 1;
)sql";

// Version 6: the compulsory DRAM bytes of each trial's kernel instance as its template counts them (a user kernel's
// spec "bytes"), so GB/s and the roofline need no per-op formula; 0 for trials stored before (computed from the
// shape where the op allows it).
constexpr const char* kSchemaV6 = R"sql(
ALTER TABLE trials ADD COLUMN bytes REAL NOT NULL DEFAULT 0;
)sql";

struct Migration {
  int to_version;        ///< Version of the schema after this step.
  const char* sql;       ///< Statements of the step; the version row is updated after them.
  bool rebuilds = false; ///< Rebuilds a table that others reference: run with foreign keys off.
};

// Ordered; the last entry is the current schema.
constexpr Migration kMigrations[] = {
    {1, kSchemaV1},
    {2, kSchemaV2},
    {3, kSchemaV3},
    {4, kSchemaV4, true},
    {5, kSchemaV5},
    {6, kSchemaV6},
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
  // PRAGMA user_version mirrors the schema version since version 4; a file whose user_version is ahead of
  // its schema_version table was written by something newer (or other) than this tuner: report the larger.
  sql::Statement user_version(conn, "PRAGMA user_version");
  const int64_t uv = user_version.step() ? user_version.column_int64(0) : 0;
  if (objects == 0) return uv > TuningDb::kSchemaVersion ? static_cast<int>(std::min<int64_t>(uv, 1 << 30)) : 0;
  if (!has_version_table) {
    throw DbError("database '" + conn.path() + "' is not a tuner database (it has no schema_version table)",
                  DbError::Kind::kCorrupt);
  }
  sql::Statement version(conn, "SELECT version FROM schema_version");
  if (!version.step() || version.column_is_null(0)) {
    throw DbError("database '" + conn.path() + "' is not a tuner database (its schema_version table is empty)",
                  DbError::Kind::kCorrupt);
  }
  const int64_t v = version.column_int64(0);
  if (version.step()) {
    throw DbError("database '" + conn.path() + "' is damaged (its schema_version table has several rows)",
                  DbError::Kind::kCorrupt);
  }
  return static_cast<int>(std::clamp<int64_t>(std::max(v, uv), 0, 1 << 30));
}

namespace {

/// Foreign keys off for the life of the guard (a pragma that has no effect inside a transaction), then
/// back to what they were.
class ForeignKeysOff {
 public:
  explicit ForeignKeysOff(sql::Connection& conn) : conn_(conn) {
    sql::Statement s(conn, "PRAGMA foreign_keys");
    was_on_ = s.step() && s.column_int64(0) != 0;
    conn_.exec("PRAGMA foreign_keys = OFF");
  }
  ~ForeignKeysOff() {
    try {
      if (was_on_) conn_.exec("PRAGMA foreign_keys = ON");
    } catch (const DbError&) {
      // The connection is failing anyway; the next statement reports it.
    }
  }
  ForeignKeysOff(const ForeignKeysOff&) = delete;
  ForeignKeysOff& operator=(const ForeignKeysOff&) = delete;

 private:
  sql::Connection& conn_;
  bool was_on_ = false;
};

}  // namespace

void require_tables(sql::Connection& conn) {
  static const char* const kTables[] = {"devices", "workloads", "templates", "trials", "sessions",
                                        "cost_models", "plans", "claims"};
  for (const char* t : kTables) {
    sql::Statement s(conn, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
    s.bind(1, std::string(t));
    if (s.step() && s.column_int64(0) == 0)
      throw DbError("database '" + conn.path() + "' is damaged (its table '" + t +
                        "' is missing); allowed: an intact tuner database (restore it from a copy)",
                    DbError::Kind::kCorrupt);
  }
}

void migrate(sql::Connection& conn, int target) {
  // Up to date (the common case): no write lock is taken, so opening never waits for another writer.
  const int at_open = read_schema_version(conn);
  if (at_open > target) throw DbError(newer_message(conn.path(), at_open, target), DbError::Kind::kNewer);
  if (at_open == target) {
    if (target == TuningDb::kSchemaVersion) require_tables(conn);
    return;
  }
  for (const Migration& m : kMigrations) {
    if (m.to_version > target) break;
    std::optional<ForeignKeysOff> fk_off;
    if (m.rebuilds) fk_off.emplace(conn);
    // Re-read the version under the write lock: another process may have migrated meanwhile.
    sql::Transaction tx(conn);
    const int current = read_schema_version(conn);
    if (current > target) throw DbError(newer_message(conn.path(), current, target), DbError::Kind::kNewer);
    if (current >= m.to_version) continue;  // tx rolls back an empty transaction
    conn.exec(m.sql);
    if (m.rebuilds) {
      sql::Statement fk_check(conn, "PRAGMA foreign_key_check");
      if (fk_check.step())
        throw DbError("database '" + conn.path() + "': migration to schema version " + std::to_string(m.to_version) +
                          " found rows whose references are broken (table " + fk_check.column_text(0) + ")",
                      DbError::Kind::kCorrupt);
    }
    sql::Statement set_version(conn, "UPDATE schema_version SET version = ?");
    set_version.bind(1, m.to_version).run();
    // PRAGMA user_version mirrors the version, so other SQLite tools (and older tuners that check it) see it.
    conn.exec("PRAGMA user_version = " + std::to_string(m.to_version));
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
  if (current > version) throw DbError(newer_message(path, current, version), DbError::Kind::kNewer);
  migrate(conn, version);
}

void exec_sql(const std::string& path, const std::string& sql) {
  sql::Connection conn(path, sql::OpenMode::kReadWrite);
  conn.set_busy_timeout(5000);
  conn.exec(sql);
}

}  // namespace tuner::db
