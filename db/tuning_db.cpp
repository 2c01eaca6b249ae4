// TuningDb: opening (pragmas, version checks, migration), upserts, trial batches
// and the filtered queries. All SQL of the store's API lives here; the schema
// itself lives in migrations.cpp and the SQLite handles in sqlite_handle.cpp.
#include "db/tuning_db.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <utility>
#include <variant>

#include "db/migrations.h"
#include "db/sqlite_handle.h"

namespace tuner::db {

struct TuningDb::Impl {
  explicit Impl(sql::Connection c) : conn(std::move(c)) {}
  sql::Connection conn;
};

namespace {

constexpr int kBusyTimeoutMs = 5000;

/// Now as ISO-8601 UTC with milliseconds: 2026-11-22T14:37:25.123Z.
std::string now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::ostringstream out;
  out << std::put_time(&tm, "%Y-%m-%dT%H:%M:%S") << '.' << std::setw(3) << std::setfill('0') << (ms % 1000) << 'Z';
  return out.str();
}

/// A WHERE clause built from a QueryFilter, with its parameters in order.
struct Where {
  std::string sql;
  std::vector<std::variant<int64_t, std::string>> params;

  void add(const std::string& condition) { sql += (sql.empty() ? " WHERE " : " AND ") + condition; }
  void add(const std::string& condition, std::variant<int64_t, std::string> param) {
    add(condition);
    params.push_back(std::move(param));
  }
  void bind(sql::Statement& stmt) const {
    int index = 1;
    for (const auto& p : params) {
      if (const auto* i = std::get_if<int64_t>(&p)) {
        stmt.bind(index++, *i);
      } else {
        stmt.bind(index++, std::get<std::string>(p));
      }
    }
  }
};

/// Column names the filter refers to; sessions and trials queries name them differently.
struct FilterColumns {
  const char* session_id;  ///< "t.session_id" or "s.id".
  const char* status;      ///< "t.status", or nullptr where ok_only does not apply.
};

/// Expects the workload, device and template tables joined as w, d and tp.
Where build_where(const QueryFilter& f, const FilterColumns& cols, bool force_ok) {
  Where where;
  if (!f.op.empty()) where.add("w.op = ?", f.op);
  if (!f.shape.empty()) where.add("w.shape = ?", f.shape);
  if (!f.dtype.empty()) where.add("w.dtype = ?", f.dtype);
  if (!f.device_name.empty()) where.add("d.name = ?", f.device_name);
  if (f.cc_major) where.add("d.cc_major = ?", int64_t{*f.cc_major});
  if (f.cc_minor) where.add("d.cc_minor = ?", int64_t{*f.cc_minor});
  if (f.sm_count) where.add("d.sm_count = ?", int64_t{*f.sm_count});
  if (f.simulated) where.add("d.simulated = ?", int64_t{*f.simulated ? 1 : 0});
  if (!f.template_hashes.empty()) {
    std::string in = "tp.hash IN (";
    for (size_t i = 0; i < f.template_hashes.size(); ++i) in += i == 0 ? "?" : ", ?";
    where.add(in + ")");
    for (const auto& h : f.template_hashes) where.params.emplace_back(h);
  }
  if (!f.template_name.empty()) where.add("tp.name = ?", f.template_name);
  if (f.session_id) where.add(std::string(cols.session_id) + " = ?", *f.session_id);
  if (cols.status && (f.ok_only || force_ok)) where.add(std::string(cols.status) + " = 'ok'");
  return where;
}

std::string limit_clause(int limit) { return limit > 0 ? " LIMIT " + std::to_string(limit) : ""; }

const FilterColumns kTrialColumns{"t.session_id", "t.status"};

// Columns read by read_result_row, in order; trials t joined with w, d, tp.
constexpr const char* kResultColumns =
    "t.id, t.session_id, t.config_json, t.status, t.error_message, t.compile_ms, t.registers, t.shared_bytes, "
    "t.spill_bytes, t.time_ms, t.time_spread_ms, t.repeats, t.gflops, t.estimate, t.started_at, t.finished_at, "
    "w.op, w.shape, w.dtype, d.name, d.simulated, tp.name, tp.hash, d.cc_major, d.cc_minor, d.sm_count, t.purpose";

constexpr const char* kResultJoins =
    " JOIN workloads w ON w.id = t.workload_id"
    " JOIN devices d ON d.id = t.device_id"
    " JOIN templates tp ON tp.id = t.template_id";

ResultRow read_result_row(const sql::Statement& s) {
  ResultRow r;
  TrialRecord& t = r.trial;
  t.id = s.column_int64(0);
  t.session_id = s.column_int64(1);
  t.config_json = s.column_text(2);
  t.status = s.column_text(3);
  t.error_message = s.column_text(4);
  t.compile_ms = s.column_double(5);
  t.registers = static_cast<int>(s.column_int64(6));
  t.shared_bytes = static_cast<int>(s.column_int64(7));
  t.spill_bytes = static_cast<int>(s.column_int64(8));
  t.time_ms = s.column_double(9);
  t.time_spread_ms = s.column_double(10);
  t.repeats = static_cast<int>(s.column_int64(11));
  t.gflops = s.column_double(12);
  t.estimate = s.column_int64(13) != 0;
  t.started_at = s.column_text(14);
  t.finished_at = s.column_text(15);
  r.workload = {s.column_text(16), s.column_text(17), s.column_text(18)};
  r.device_name = s.column_text(19);
  r.device_simulated = s.column_int64(20) != 0;
  r.template_name = s.column_text(21);
  r.template_hash = s.column_text(22);
  r.device_cc_major = static_cast<int>(s.column_int64(23));
  r.device_cc_minor = static_cast<int>(s.column_int64(24));
  r.device_sm_count = static_cast<int>(s.column_int64(25));
  t.purpose = s.column_text(26);
  r.measurements = 1;
  r.mean_time_ms = t.time_ms;
  if (s.column_count() > 28) {  // best queries append the config's measurement count and mean time
    r.measurements = static_cast<int>(s.column_int64(27));
    r.mean_time_ms = s.column_double(28);
  }
  return r;
}

std::vector<ResultRow> run_result_query(sql::Connection& conn, const std::string& query, const Where& where) {
  sql::Statement stmt(conn, query);
  where.bind(stmt);
  std::vector<ResultRow> rows;
  while (stmt.step()) rows.push_back(read_result_row(stmt));
  return rows;
}

std::string newer_message(const std::string& path, int version) {
  return "database '" + path + "' has schema version " + std::to_string(version) + ", newer than this tuner (" +
         std::to_string(TuningDb::kSchemaVersion) + ")";
}

/// Opens read-write, refusing foreign and newer files before anything is written to them.
sql::Connection open_read_write(const std::string& path) {
  sql::Connection conn(path, sql::OpenMode::kReadWriteCreate);
  conn.set_busy_timeout(kBusyTimeoutMs);
  const int version = read_schema_version(conn);  // Writes nothing; throws on a foreign file.
  if (version > TuningDb::kSchemaVersion) throw DbError(newer_message(path, version));
  if (!conn.in_memory()) conn.exec("PRAGMA journal_mode = WAL");
  conn.exec("PRAGMA synchronous = NORMAL");
  conn.exec("PRAGMA foreign_keys = ON");
  migrate(conn, TuningDb::kSchemaVersion);
  return conn;
}

sql::Connection open_read_only(const std::string& path) {
  std::error_code ec;
  if (path.empty() || path == ":memory:" || !std::filesystem::exists(path, ec)) {
    throw DbError("database '" + path + "' does not exist");
  }
  sql::Connection conn(path, sql::OpenMode::kReadOnly);
  conn.set_busy_timeout(kBusyTimeoutMs);
  const int version = read_schema_version(conn);
  if (version == 0) throw DbError("database '" + path + "' is not a tuner database (it is empty)");
  if (version > TuningDb::kSchemaVersion) throw DbError(newer_message(path, version));
  if (version < TuningDb::kSchemaVersion) {
    throw DbError("database '" + path + "' has schema version " + std::to_string(version) +
                  ", older than this tuner (" + std::to_string(TuningDb::kSchemaVersion) +
                  "); open it for writing once to migrate it");
  }
  conn.exec("PRAGMA foreign_keys = ON");
  return conn;
}

}  // namespace

TuningDb::TuningDb(const std::string& path) : impl_(std::make_unique<Impl>(open_read_write(path))) {}

TuningDb::TuningDb(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TuningDb TuningDb::open_existing(const std::string& path) {
  return TuningDb(std::make_unique<Impl>(open_read_only(path)));
}

TuningDb::~TuningDb() = default;
TuningDb::TuningDb(TuningDb&&) noexcept = default;
TuningDb& TuningDb::operator=(TuningDb&&) noexcept = default;

int TuningDb::schema_version() const { return read_schema_version(impl_->conn); }

int64_t TuningDb::upsert_device(const DeviceIdentity& d) {
  auto& conn = impl_->conn;
  const auto bind_all = [&d](sql::Statement& s) {
    s.bind(1, d.name)
        .bind(2, int64_t{d.simulated ? 1 : 0})
        .bind(3, d.cc_major)
        .bind(4, d.cc_minor)
        .bind(5, d.sm_count)
        .bind(6, d.memory_bytes)
        .bind(7, d.driver_version)
        .bind(8, d.nvrtc_version);
  };
  sql::Statement insert(conn,
                        "INSERT INTO devices (name, simulated, cc_major, cc_minor, sm_count, memory_bytes, "
                        "driver_version, nvrtc_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
  bind_all(insert);
  insert.run();
  sql::Statement select(conn,
                        "SELECT id FROM devices WHERE name = ? AND simulated = ? AND cc_major = ? AND cc_minor = ? "
                        "AND sm_count = ? AND memory_bytes = ? AND driver_version = ? AND nvrtc_version = ?");
  bind_all(select);
  if (!select.step()) throw DbError("database '" + conn.path() + "': device '" + d.name + "' vanished after insert");
  return select.column_int64(0);
}

int64_t TuningDb::upsert_workload(const WorkloadKey& w) {
  auto& conn = impl_->conn;
  sql::Statement insert(conn, "INSERT INTO workloads (op, shape, dtype) VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
  insert.bind(1, w.op).bind(2, w.shape).bind(3, w.dtype).run();
  sql::Statement select(conn, "SELECT id FROM workloads WHERE op = ? AND shape = ? AND dtype = ?");
  select.bind(1, w.op).bind(2, w.shape).bind(3, w.dtype);
  if (!select.step()) throw DbError("database '" + conn.path() + "': workload '" + w.op + "' vanished after insert");
  return select.column_int64(0);
}

int64_t TuningDb::upsert_template(const TemplateVersion& t) {
  auto& conn = impl_->conn;
  sql::Statement insert(conn, "INSERT INTO templates (name, hash) VALUES (?, ?) ON CONFLICT DO NOTHING");
  insert.bind(1, t.name).bind(2, t.hash).run();
  sql::Statement select(conn, "SELECT id FROM templates WHERE name = ? AND hash = ?");
  select.bind(1, t.name).bind(2, t.hash);
  if (!select.step()) throw DbError("database '" + conn.path() + "': template '" + t.name + "' vanished after insert");
  return select.column_int64(0);
}

int64_t TuningDb::begin_session(int64_t device_id, int64_t workload_id, int64_t template_id,
                                const std::string& strategy, uint64_t seed, int64_t budget,
                                const std::string& command_line) {
  auto& conn = impl_->conn;
  sql::Statement insert(conn,
                        "INSERT INTO sessions (device_id, workload_id, template_id, strategy, seed, budget, "
                        "command_line, status, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)");
  insert.bind(1, device_id)
      .bind(2, workload_id)
      .bind(3, template_id)
      .bind(4, strategy)
      .bind(5, static_cast<int64_t>(seed))  // Two's complement bit pattern; read back as uint64_t.
      .bind(6, budget)
      .bind(7, command_line)
      .bind(8, now_iso8601())
      .run();
  return conn.last_insert_rowid();
}

void TuningDb::end_session(int64_t session_id, const std::string& status) {
  auto& conn = impl_->conn;
  if (status != "finished" && status != "interrupted") {
    throw DbError("database '" + conn.path() + "': a session ends 'finished' or 'interrupted', not '" + status + "'");
  }
  sql::Statement update(conn, "UPDATE sessions SET status = ?, finished_at = ? WHERE id = ?");
  update.bind(1, status).bind(2, now_iso8601()).bind(3, session_id).run();
  if (conn.changes() == 0) {
    throw DbError("database '" + conn.path() + "': no session " + std::to_string(session_id));
  }
}

void TuningDb::add_trials(int64_t session_id, std::vector<TrialRecord>& trials) {
  if (trials.empty()) return;
  auto& conn = impl_->conn;
  sql::Transaction tx(conn);

  sql::Statement session(conn, "SELECT device_id, workload_id, template_id FROM sessions WHERE id = ?");
  session.bind(1, session_id);
  if (!session.step()) throw DbError("database '" + conn.path() + "': no session " + std::to_string(session_id));
  const int64_t device_id = session.column_int64(0);
  const int64_t workload_id = session.column_int64(1);
  const int64_t template_id = session.column_int64(2);

  sql::Statement insert(conn,
                        "INSERT INTO trials (session_id, device_id, workload_id, template_id, config_json, status, "
                        "error_message, compile_ms, registers, shared_bytes, spill_bytes, time_ms, time_spread_ms, "
                        "repeats, gflops, estimate, started_at, finished_at, purpose) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  // The records are filled only after the commit, so a failed batch leaves them as they were.
  const std::string now = now_iso8601();
  struct Assigned {
    int64_t id;
    std::string started_at, finished_at;
  };
  std::vector<Assigned> assigned;
  assigned.reserve(trials.size());
  for (const TrialRecord& t : trials) {
    Assigned a{0, t.started_at.empty() ? now : t.started_at, t.finished_at.empty() ? now : t.finished_at};
    insert.bind(1, session_id)
        .bind(2, device_id)
        .bind(3, workload_id)
        .bind(4, template_id)
        .bind(5, t.config_json)
        .bind(6, t.status)
        .bind(7, t.error_message)
        .bind(8, t.compile_ms)
        .bind(9, t.registers)
        .bind(10, t.shared_bytes)
        .bind(11, t.spill_bytes)
        .bind(12, t.time_ms)
        .bind(13, t.time_spread_ms)
        .bind(14, t.repeats)
        .bind(15, t.gflops)
        .bind(16, int64_t{t.estimate ? 1 : 0})
        .bind(17, a.started_at)
        .bind(18, a.finished_at)
        .bind(19, t.purpose);
    insert.run();
    a.id = conn.last_insert_rowid();
    assigned.push_back(std::move(a));
    insert.reset();
  }
  tx.commit();

  for (size_t i = 0; i < trials.size(); ++i) {
    trials[i].id = assigned[i].id;
    trials[i].session_id = session_id;
    trials[i].started_at = std::move(assigned[i].started_at);
    trials[i].finished_at = std::move(assigned[i].finished_at);
  }
}

std::vector<std::string> TuningDb::measured_configs(int64_t device_id, int64_t workload_id,
                                                    int64_t template_id) const {
  sql::Statement stmt(impl_->conn,
                      "SELECT config_json FROM trials WHERE device_id = ? AND workload_id = ? AND template_id = ? "
                      "ORDER BY id");
  stmt.bind(1, device_id).bind(2, workload_id).bind(3, template_id);
  std::vector<std::string> configs;
  while (stmt.step()) configs.push_back(stmt.column_text(0));
  return configs;
}

int64_t TuningDb::count_trials(int64_t device_id, int64_t workload_id, int64_t template_id) const {
  sql::Statement stmt(impl_->conn,
                      "SELECT count(*) FROM trials WHERE device_id = ? AND workload_id = ? AND template_id = ?");
  stmt.bind(1, device_id).bind(2, workload_id).bind(3, template_id);
  stmt.step();
  return stmt.column_int64(0);
}

namespace {

/// Ok trials matching `where`, grouped per config: its measurement count, mean time and latest trial.
std::string config_means(const Where& where) {
  return std::string(
             "SELECT t.workload_id AS wid, t.device_id AS did, t.template_id AS tid, COUNT(*) AS n, "
             "AVG(t.time_ms) AS mean_ms, MAX(t.id) AS last_id FROM trials t") +
         kResultJoins + where.sql + " GROUP BY t.workload_id, t.device_id, t.template_id, t.config_json";
}

}  // namespace

std::optional<ResultRow> TuningDb::best(const QueryFilter& f) const {
  const Where where = build_where(f, kTrialColumns, /*force_ok=*/true);
  const std::string query = "WITH cfg AS (" + config_means(where) + ") SELECT " + kResultColumns +
                            ", c.n, c.mean_ms FROM cfg c JOIN trials t ON t.id = c.last_id" + kResultJoins +
                            " ORDER BY c.mean_ms, t.id LIMIT 1";
  auto rows = run_result_query(impl_->conn, query, where);
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

std::vector<ResultRow> TuningDb::history(const QueryFilter& f) const {
  const Where where = build_where(f, kTrialColumns, /*force_ok=*/false);
  const std::string query = std::string("SELECT ") + kResultColumns + " FROM trials t" + kResultJoins + where.sql +
                            " ORDER BY t.id" + limit_clause(f.limit);
  return run_result_query(impl_->conn, query, where);
}

std::vector<ResultRow> TuningDb::best_per_workload(const QueryFilter& f) const {
  const Where where = build_where(f, kTrialColumns, /*force_ok=*/true);
  const std::string query =
      "WITH cfg AS (" + config_means(where) +
      "), ranked AS (SELECT c.*, ROW_NUMBER() OVER (PARTITION BY c.wid, c.did, c.tid ORDER BY c.mean_ms, c.last_id) "
      "AS rank FROM cfg c) SELECT " +
      kResultColumns + ", r.n, r.mean_ms FROM ranked r JOIN trials t ON t.id = r.last_id" + kResultJoins +
      " WHERE r.rank = 1 ORDER BY w.op, w.shape, w.dtype, d.name, tp.name, tp.hash, d.id" + limit_clause(f.limit);
  return run_result_query(impl_->conn, query, where);
}

std::vector<SessionRow> TuningDb::sessions(const QueryFilter& f) const {
  const Where where = build_where(f, FilterColumns{"s.id", nullptr}, /*force_ok=*/false);
  const std::string query =
      "SELECT s.id, s.strategy, s.seed, s.budget, s.status, s.started_at, s.finished_at, "
      "(SELECT count(*) FROM trials x WHERE x.session_id = s.id), w.op, w.shape, w.dtype, d.name "
      "FROM sessions s JOIN workloads w ON w.id = s.workload_id JOIN devices d ON d.id = s.device_id "
      "JOIN templates tp ON tp.id = s.template_id" +
      where.sql + " ORDER BY s.id DESC" + limit_clause(f.limit);
  sql::Statement stmt(impl_->conn, query);
  where.bind(stmt);
  std::vector<SessionRow> rows;
  while (stmt.step()) {
    SessionRow r;
    r.id = stmt.column_int64(0);
    r.strategy = stmt.column_text(1);
    r.seed = static_cast<uint64_t>(stmt.column_int64(2));
    r.budget = stmt.column_int64(3);
    r.status = stmt.column_text(4);
    r.started_at = stmt.column_text(5);
    r.finished_at = stmt.column_text(6);
    r.trials = stmt.column_int64(7);
    r.workload = {stmt.column_text(8), stmt.column_text(9), stmt.column_text(10)};
    r.device_name = stmt.column_text(11);
    rows.push_back(std::move(r));
  }
  return rows;
}

int64_t TuningDb::add_cost_model(CostModelRecord& m) {
  auto& conn = impl_->conn;
  const std::string now = now_iso8601();
  sql::Statement insert(conn,
                        "INSERT INTO cost_models (kind, op, template_name, feature_names, rows, session_id, model, "
                        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  insert.bind(1, m.kind).bind(2, m.op).bind(3, m.template_name).bind(4, m.feature_names).bind(5, m.rows);
  if (m.session_id > 0) {
    insert.bind(6, m.session_id);
  } else {
    insert.bind_null(6);
  }
  insert.bind_blob(7, m.model).bind(8, now).run();
  m.id = conn.last_insert_rowid();
  m.created_at = now;
  return m.id;
}

std::optional<CostModelRecord> TuningDb::latest_cost_model(const std::string& kind, const std::string& op,
                                                           const std::string& template_name) const {
  sql::Statement stmt(impl_->conn,
                      "SELECT id, kind, op, template_name, feature_names, rows, coalesce(session_id, 0), model, "
                      "created_at FROM cost_models WHERE kind = ? AND op = ? AND template_name = ? "
                      "ORDER BY id DESC LIMIT 1");
  stmt.bind(1, kind).bind(2, op).bind(3, template_name);
  if (!stmt.step()) return std::nullopt;
  CostModelRecord m;
  m.id = stmt.column_int64(0);
  m.kind = stmt.column_text(1);
  m.op = stmt.column_text(2);
  m.template_name = stmt.column_text(3);
  m.feature_names = stmt.column_text(4);
  m.rows = stmt.column_int64(5);
  m.session_id = stmt.column_int64(6);
  m.model = stmt.column_blob(7);
  m.created_at = stmt.column_text(8);
  return m;
}

int64_t TuningDb::add_plan(PlanRecord& p) {
  auto& conn = impl_->conn;
  const std::string now = now_iso8601();
  sql::Statement insert(conn,
                        "INSERT INTO plans (model, cluster, options_json, plan_json, tp, pp, dp, iteration_time_s, "
                        "tflops_per_gpu, mfu, peak_memory_bytes, planning_s, created_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  insert.bind(1, p.model)
      .bind(2, p.cluster)
      .bind(3, p.options_json)
      .bind(4, p.plan_json)
      .bind(5, p.tp)
      .bind(6, p.pp)
      .bind(7, p.dp)
      .bind(8, p.iteration_time_s)
      .bind(9, p.tflops_per_gpu)
      .bind(10, p.mfu)
      .bind(11, p.peak_memory_bytes)
      .bind(12, p.planning_s)
      .bind(13, now)
      .run();
  p.id = conn.last_insert_rowid();
  p.created_at = now;
  return p.id;
}

std::vector<PlanRecord> TuningDb::plans(int limit) const {
  sql::Statement stmt(impl_->conn,
                      "SELECT id, model, cluster, options_json, plan_json, tp, pp, dp, iteration_time_s, "
                      "tflops_per_gpu, mfu, peak_memory_bytes, planning_s, created_at FROM plans ORDER BY id DESC" +
                          limit_clause(limit));
  std::vector<PlanRecord> rows;
  while (stmt.step()) {
    PlanRecord p;
    p.id = stmt.column_int64(0);
    p.model = stmt.column_text(1);
    p.cluster = stmt.column_text(2);
    p.options_json = stmt.column_text(3);
    p.plan_json = stmt.column_text(4);
    p.tp = static_cast<int>(stmt.column_int64(5));
    p.pp = static_cast<int>(stmt.column_int64(6));
    p.dp = static_cast<int>(stmt.column_int64(7));
    p.iteration_time_s = stmt.column_double(8);
    p.tflops_per_gpu = stmt.column_double(9);
    p.mfu = stmt.column_double(10);
    p.peak_memory_bytes = stmt.column_int64(11);
    p.planning_s = stmt.column_double(12);
    p.created_at = stmt.column_text(13);
    rows.push_back(std::move(p));
  }
  return rows;
}

std::string TuningDb::integrity_check() const {
  sql::Statement stmt(impl_->conn, "PRAGMA integrity_check");
  std::string result;
  while (stmt.step()) {
    if (!result.empty()) result += '\n';
    result += stmt.column_text(0);
  }
  return result;
}

}  // namespace tuner::db
