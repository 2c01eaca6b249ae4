// TuningDb: opening (pragmas, version checks, migration), upserts, trial batches
// and the filtered queries. All SQL of the store's API lives here; the schema
// itself lives in migrations.cpp and the SQLite handles in sqlite_handle.cpp.
#include "db/tuning_db.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <thread>
#include <utility>
#include <variant>

#include "db/migrations.h"
#include "db/process_identity.h"
#include "db/tuning_db_impl.h"
#include "db/sqlite_handle.h"

namespace tuner::db {

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

namespace {

constexpr int kBusyTimeoutMs = 5000;

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
  const char* trial_id;    ///< "t.id", or nullptr where after_trial_id does not apply.
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
  if (cols.status && f.estimate) where.add("t.estimate = ?", int64_t{*f.estimate ? 1 : 0});
  if (!f.template_hashes.empty()) {
    std::string in = "tp.hash IN (";
    for (size_t i = 0; i < f.template_hashes.size(); ++i) in += i == 0 ? "?" : ", ?";
    where.add(in + ")");
    for (const auto& h : f.template_hashes) where.params.emplace_back(h);
  }
  if (!f.template_name.empty()) where.add("tp.name = ?", f.template_name);
  if (f.session_id) where.add(std::string(cols.session_id) + " = ?", *f.session_id);
  if (f.exclude_session_id != 0) where.add(std::string(cols.session_id) + " <> ?", f.exclude_session_id);
  if (cols.trial_id && f.after_trial_id > 0) where.add(std::string(cols.trial_id) + " > ?", f.after_trial_id);
  if (cols.status && (f.ok_only || force_ok)) where.add(std::string(cols.status) + " = 'ok'");
  return where;
}

std::string limit_clause(int limit) { return limit > 0 ? " LIMIT " + std::to_string(limit) : ""; }

const FilterColumns kTrialColumns{"t.session_id", "t.status", "t.id"};

// Columns read by read_result_row, in order; trials t joined with w, d, tp.
constexpr const char* kResultColumns =
    "t.id, t.session_id, t.config_json, t.status, t.error_message, t.compile_ms, t.registers, t.shared_bytes, "
    "t.spill_bytes, t.time_ms, t.time_spread_ms, t.repeats, t.gflops, t.estimate, t.started_at, t.finished_at, "
    "w.op, w.shape, w.dtype, d.name, d.simulated, tp.name, tp.hash, d.cc_major, d.cc_minor, d.sm_count, t.purpose, "
    "d.driver_version, d.nvrtc_version, t.bytes";

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
  r.driver_version = s.column_text(27);
  r.nvrtc_version = s.column_text(28);
  t.bytes = s.column_double(29);
  r.measurements = 1;
  r.mean_time_ms = t.time_ms;
  if (s.column_count() > 31) {  // best queries append the config's measurement count and mean time
    r.measurements = static_cast<int>(s.column_int64(30));
    r.mean_time_ms = s.column_double(31);
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

DbError newer_error(const std::string& path, int version) {
  return DbError("database '" + path + "' has schema version " + std::to_string(version) + ", newer than this tuner (" +
                     std::to_string(TuningDb::kSchemaVersion) + "); allowed: version " +
                     std::to_string(TuningDb::kSchemaVersion) + " or older (use a newer tuner for this file)",
                 DbError::Kind::kNewer);
}

/// The files SQLite keeps for a database: beside the file a link leads to (SQLite follows it), not the link.
struct DbFiles {
  explicit DbFiles(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path real = fs::canonical(path, ec);  // an existing file (through any link)
    if (ec) {  // a new one, maybe through a link to where it will be
      fs::path p = fs::absolute(path, ec);
      for (int hops = 0; hops < 40 && fs::is_symlink(p, ec); ++hops) {
        const fs::path target = fs::read_symlink(p, ec);
        if (ec) break;
        p = target.is_absolute() ? target : p.parent_path() / target;
      }
      real = fs::weakly_canonical(p, ec);
    }
    file = real.string();
    folder = real.parent_path().string();
    wal = file + "-wal", shm = file + "-shm";
  }
  static bool exists(const std::string& f) {
    std::error_code e;
    return std::filesystem::exists(f, e);
  }
  static bool writable(const std::string& f) { return ::access(f.c_str(), W_OK) == 0; }
  /// Bytes waiting in the -wal: commits not yet in the file (0 when there is none).
  uintmax_t wal_bytes() const {
    std::error_code e;
    const auto n = std::filesystem::file_size(wal, e);
    return e ? 0 : n;
  }
  std::string file, folder, wal, shm;
};

/// A writer needs to create and write the -wal and -shm files beside the database. SQLite's own word when it cannot
/// is "attempt to write a readonly database", naming neither the folder nor the file: name them.
void refuse_unwritable_companions(const std::string& path) {
  const DbFiles f(path);
  // A write-protected file is said so when it opens (Connection): the file first.
  if (DbFiles::exists(f.file) && !DbFiles::writable(f.file)) return;
  // A read of the database while it was write-protected (by an older tuner, or sqlite3) leaves a -shm with the file's
  // mode, and a writer of another user leaves both: the file writable again, they still are not.
  if (DbFiles::exists(f.shm) && !DbFiles::writable(f.shm))
    throw DbError("database '" + path + "': its '" + f.shm + "' file is write-protected (left by another user's or a "
                      "write-protected read of it); allowed: make it writable, or delete it when no tuner has the "
                      "database open (it holds no records)",
                  DbError::Kind::kReadOnly);
  if (DbFiles::exists(f.wal) && !DbFiles::writable(f.wal))
    throw DbError("database '" + path + "': its '" + f.wal + "' file is write-protected" +
                      (f.wal_bytes() > 0 ? " and holds commits not yet in the database file; allowed: make it "
                                           "writable, or have its owner open the database once (which moves them in)"
                                         : "; allowed: make it writable, or delete it when no tuner has the database "
                                           "open (it is empty)"),
                  DbError::Kind::kReadOnly);
  if (!DbFiles::writable(f.folder)) {
    if (!DbFiles::exists(f.file))
      throw DbError("database '" + path + "' cannot be created: its folder '" + f.folder + "' is not writable; "
                        "allowed: a database in a folder you can write",
                    DbError::Kind::kReadOnly);
    if (!(DbFiles::exists(f.wal) && DbFiles::exists(f.shm)))
      throw DbError("database '" + path + "': its folder '" + f.folder + "' is not writable, and a writer keeps "
                        "its -wal and -shm files beside the database; allowed: a database in a folder you can write",
                    DbError::Kind::kReadOnly);
  }
}

/// Opens read-write, refusing foreign and newer files before anything is written to them.
sql::Connection open_read_write(const std::string& path) {
  // SQLite takes "" as a private temporary database that vanishes at close: never what a user meant.
  if (path.empty())
    throw DbError("database path '' is empty; allowed: a file path (or :memory: for a throwaway database)",
                  DbError::Kind::kBadPath);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw DbError("database '" + path + "' is a directory; allowed: a tuner database file", DbError::Kind::kBadPath);
  // /dev/null or a FIFO: SQLite failed with "disk I/O error" (exit 1) and created /dev/null-journal.
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw DbError("database '" + path + "' is not a regular file (a device, a FIFO or a socket); allowed: a tuner "
                  "database file", DbError::Kind::kBadPath);
  // A folder that does not exist gave SQLite's "unable to open database file", with no word of why.
  if (path != ":memory:" && path.rfind("file:", 0) != 0) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
      throw DbError("database '" + path + "': folder '" + parent.string() +
                        "' does not exist; allowed: a file in an existing folder",
                    DbError::Kind::kBadPath);
    refuse_unwritable_companions(path);
  }
  sql::Connection conn(path, sql::OpenMode::kReadWriteCreate);
  conn.set_busy_timeout(kBusyTimeoutMs);
  constexpr double kOpenPatienceS = 60;
  const int version = internal::retry_locked(conn, kOpenPatienceS, [&] { return read_schema_version(conn); }, true);
  if (version > TuningDb::kSchemaVersion) throw newer_error(path, version);
  // Damage in a page only a later write reads (an index) was found mid-run, after a session row had gone into the
  // damaged file. A quick check first (80 ms for 14 MB) keeps exit 2's promise that nothing was written; past
  // 256 MB (with the -wal) it would take seconds on every tune, import and plan, and the write path's own checks
  // remain.
  const auto size_of = [](const std::string& f) {
    std::error_code e;
    const auto n = std::filesystem::file_size(f, e);
    return e ? uintmax_t{0} : n;
  };
  if (!conn.in_memory() && version > 0 && size_of(path) + size_of(path + "-wal") <= (uintmax_t{256} << 20)) {
    const std::string verdict = internal::retry_locked(conn, kOpenPatienceS, [&] {
      sql::Statement q(conn, "PRAGMA quick_check(1)");
      std::string v = q.step() ? q.column_text(0) : std::string("no answer");
      std::replace(v.begin(), v.end(), '\n', ' ');  // "*** in database main ***\nPage 12: ..." on one line
      return v;
    }, true);
    if (verdict != "ok")
      throw DbError("database '" + path + "' is damaged (quick_check: " + verdict.substr(0, 200) +
                        "); allowed: an intact tuner database (restore it from a copy)",
                    DbError::Kind::kCorrupt);
  }
  if (!conn.in_memory())
    internal::retry_locked(conn, kOpenPatienceS, [&] { conn.exec("PRAGMA journal_mode = WAL"); }, true);
  conn.exec("PRAGMA synchronous = NORMAL");
  conn.exec("PRAGMA foreign_keys = ON");
  internal::retry_locked(conn, kOpenPatienceS, [&] { migrate(conn, TuningDb::kSchemaVersion); }, true);
  return conn;
}

/// Opens read-only. A WAL database in a directory this process cannot write cannot get its WAL index
/// (-shm) created; when no WAL content waits there (no -wal file, or an empty one) the file alone is
/// the whole database and is opened immutable instead.
/// A connection in `mode` that has read the schema once (so an unreadable file fails here).
sql::Connection probed(const std::string& path, sql::OpenMode mode) {
  sql::Connection conn(path, mode);
  conn.set_busy_timeout(kBusyTimeoutMs);
  conn.probe();
  return conn;
}

sql::Connection open_read_only_connection(const std::string& path) {
  // Query-only first, where the file and its folder can be written: it reads the same, and on closing it removes
  // the -wal and -shm a read-only connection leaves behind (a write-protected file then kept a write-protected
  // -shm that made a later writer fail).
  const DbFiles f(path);
  const bool file_writable = DbFiles::writable(f.file);
  if (file_writable && DbFiles::writable(f.folder)) {
    try {
      return probed(path, sql::OpenMode::kQueryOnly);
    } catch (const DbError& e) {
      if (e.kind() != DbError::Kind::kReadOnly) throw;
    }
  }
  // A write-protected file that no connection has open (every connection to a WAL database holds its -wal from its
  // first read until it closes, and the last one removes it): the file alone is the database, read as it is. A
  // read-only connection would create a -shm and -wal with the file's mode, which it cannot remove, and which
  // would refuse a writer once the file is writable again. (With a -wal, a writer may be connected, or have left
  // commits there: immutable reads take no locks and skip the -wal, so the read goes through a connection.)
  if (!file_writable && !DbFiles::exists(f.wal)) return probed(path, sql::OpenMode::kImmutable);
  try {
    return probed(path, sql::OpenMode::kReadOnly);
  } catch (const DbError& e) {
    if (e.kind() != DbError::Kind::kReadOnly) throw;
    if (f.wal_bytes() > 0) throw;  // unread WAL content: immutable would miss it
    return probed(path, sql::OpenMode::kImmutable);
  }
}

sql::Connection open_read_only(const std::string& path) {
  std::error_code ec;
  if (path.empty() || path == ":memory:" || !std::filesystem::exists(path, ec)) {
    throw DbError("database '" + path + "' does not exist", DbError::Kind::kBadPath);
  }
  if (std::filesystem::is_directory(path, ec))
    throw DbError("database '" + path + "' is a directory; allowed: a tuner database file", DbError::Kind::kBadPath);
  if (!std::filesystem::is_regular_file(path, ec))
    throw DbError("database '" + path + "' is not a regular file (a device, a FIFO or a socket); allowed: a tuner "
                  "database file", DbError::Kind::kBadPath);
  sql::Connection conn = open_read_only_connection(path);
  const int version = read_schema_version(conn);
  if (version == 0)
    throw DbError("database '" + path + "' is not a tuner database (it has no tables: empty, or being created by "
                  "another tuner this moment, then retry); allowed: a database `tuner tune` or `tuner import` made",
                  DbError::Kind::kCorrupt);
  if (version > TuningDb::kSchemaVersion) throw newer_error(path, version);
  if (version < TuningDb::kSchemaVersion) {
    // An older file is read through an in-memory copy brought to this version: the file is not changed.
    sql::Connection copy = conn.snapshot_in_memory();
    migrate(copy, TuningDb::kSchemaVersion);
    copy.exec("PRAGMA foreign_keys = ON");
    return copy;
  }
  require_tables(conn);
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
  return internal::retry_locked(conn, impl_->write_patience_s, [&]() -> int64_t {
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
  }, /*interruptible=*/true);
}

int64_t TuningDb::upsert_workload(const WorkloadKey& w) {
  auto& conn = impl_->conn;
  return internal::retry_locked(conn, impl_->write_patience_s, [&]() -> int64_t {
    sql::Statement insert(conn, "INSERT INTO workloads (op, shape, dtype) VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
    insert.bind(1, w.op).bind(2, w.shape).bind(3, w.dtype).run();
    sql::Statement select(conn, "SELECT id FROM workloads WHERE op = ? AND shape = ? AND dtype = ?");
    select.bind(1, w.op).bind(2, w.shape).bind(3, w.dtype);
    if (!select.step()) throw DbError("database '" + conn.path() + "': workload '" + w.op + "' vanished after insert");
    return select.column_int64(0);
  }, /*interruptible=*/true);
}

int64_t TuningDb::upsert_template(const TemplateVersion& t) {
  auto& conn = impl_->conn;
  return internal::retry_locked(conn, impl_->write_patience_s, [&]() -> int64_t {
    sql::Statement insert(conn, "INSERT INTO templates (name, hash) VALUES (?, ?) ON CONFLICT DO NOTHING");
    insert.bind(1, t.name).bind(2, t.hash).run();
    sql::Statement select(conn, "SELECT id FROM templates WHERE name = ? AND hash = ?");
    select.bind(1, t.name).bind(2, t.hash);
    if (!select.step()) throw DbError("database '" + conn.path() + "': template '" + t.name + "' vanished after insert");
    return select.column_int64(0);
  }, /*interruptible=*/true);
}

int64_t TuningDb::begin_session(int64_t device_id, int64_t workload_id, int64_t template_id,
                                const std::string& strategy, uint64_t seed, int64_t budget,
                                const std::string& command_line) {
  reap_dead_sessions();
  auto& conn = impl_->conn;
  const ProcessIdentity& me = impl_->me;
  return internal::retry_locked(conn, impl_->write_patience_s, [&] {
    sql::Statement insert(conn,
                          "INSERT INTO sessions (device_id, workload_id, template_id, strategy, seed, budget, "
                          "command_line, status, started_at, pid, host, process_start) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)");
    insert.bind(1, device_id)
        .bind(2, workload_id)
        .bind(3, template_id)
        .bind(4, strategy)
        .bind(5, static_cast<int64_t>(seed))  // Two's complement bit pattern; read back as uint64_t.
        .bind(6, budget)
        .bind(7, command_line)
        .bind(8, now_iso8601())
        .bind(9, me.pid)
        .bind(10, me.host)
        .bind(11, me.start_ticks)
        .run();
    return conn.last_insert_rowid();
  }, /*interruptible=*/true);
}

void TuningDb::end_session(int64_t session_id, const std::string& status, const std::string& reason) {
  auto& conn = impl_->conn;
  if (status != "finished" && status != "interrupted" && status != "failed") {
    throw DbError("database '" + conn.path() + "': a session ends 'finished', 'interrupted' or 'failed', not '" +
                  status + "'");
  }
  internal::retry_locked(conn, impl_->write_patience_s, [&] {
    sql::Transaction tx(conn);
    sql::Statement update(conn, "UPDATE sessions SET status = ?, reason = ?, finished_at = ? WHERE id = ?");
    update.bind(1, status).bind(2, reason.substr(0, 2000)).bind(3, now_iso8601()).bind(4, session_id).run();
    if (conn.changes() == 0) {
      throw DbError("database '" + conn.path() + "': no session " + std::to_string(session_id));
    }
    sql::Statement release(conn, "DELETE FROM claims WHERE session_id = ?");
    release.bind(1, session_id).run();
    tx.commit();
  });
}

namespace {
std::string dead_session_reason(const ProcessIdentity& p) {
  return "its process (pid " + std::to_string(p.pid) + " on " + p.host + ") ended without closing the session";
}
}  // namespace

int TuningDb::reap_dead_sessions() {
  auto& conn = impl_->conn;
  if (conn.read_only()) return 0;
  struct Owner {
    int64_t id;
    ProcessIdentity process;
  };
  std::vector<Owner> dead;
  {
    sql::Statement running(conn, "SELECT id, pid, host, process_start FROM sessions WHERE status = 'running'");
    while (running.step()) {
      Owner o{running.column_int64(0), {running.column_int64(1), running.column_text(2), running.column_int64(3)}};
      if (liveness(o.process) == Liveness::kDead) dead.push_back(std::move(o));
    }
  }
  if (dead.empty()) return 0;
  return internal::retry_locked(conn, impl_->write_patience_s, [&] {
    sql::Transaction tx(conn);
    sql::Statement mark(conn,
                        "UPDATE sessions SET status = 'killed', reason = ?, finished_at = ? "
                        "WHERE id = ? AND status = 'running'");
    sql::Statement release(conn, "DELETE FROM claims WHERE session_id = ?");
    const std::string now = now_iso8601();
    int marked = 0;
    for (const Owner& o : dead) {
      mark.bind(1, dead_session_reason(o.process))
          .bind(2, now)
          .bind(3, o.id)
          .run();
      marked += static_cast<int>(conn.changes());
      mark.reset();
      release.bind(1, o.id).run();
      release.reset();
    }
    tx.commit();
    return marked;
  }, /*interruptible=*/true);
}

namespace {

/// The device, workload and template a session tunes; DbError when there is no such session.
struct SessionTarget {
  int64_t device_id, workload_id, template_id;
};
SessionTarget session_target(sql::Connection& conn, int64_t session_id) {
  sql::Statement session(conn, "SELECT device_id, workload_id, template_id FROM sessions WHERE id = ?");
  session.bind(1, session_id);
  if (!session.step()) throw DbError("database '" + conn.path() + "': no session " + std::to_string(session_id));
  return {session.column_int64(0), session.column_int64(1), session.column_int64(2)};
}

/// A re-measure claim's config_json: this prefix and the config (no config's JSON starts with it).
constexpr const char* kRemeasureClaim = "remeasure ";

/// Stored search trials plus live search claims of one device, workload and template.
int64_t trials_and_claims(sql::Connection& conn, int64_t device_id, int64_t workload_id, int64_t template_id) {
  sql::Statement used(conn,
                      "SELECT (SELECT count(*) FROM trials WHERE device_id = ?1 AND workload_id = ?2 AND "
                      "template_id = ?3 AND purpose = 'search') + (SELECT count(*) FROM claims WHERE "
                      "device_id = ?1 AND workload_id = ?2 AND template_id = ?3 AND config_json NOT LIKE ?4)");
  used.bind(1, device_id).bind(2, workload_id).bind(3, template_id).bind(4, std::string(kRemeasureClaim) + "%");
  used.step();
  return used.column_int64(0);
}

}  // namespace

int64_t TuningDb::budget_left(int64_t session_id, int64_t budget) const {
  auto& conn = impl_->conn;
  const SessionTarget st = session_target(conn, session_id);
  return budget - trials_and_claims(conn, st.device_id, st.workload_id, st.template_id);
}

int64_t TuningDb::claims_of_others(int64_t session_id, std::vector<std::pair<std::string, int64_t>>* processes) const {
  auto& conn = impl_->conn;
  const SessionTarget st = session_target(conn, session_id);
  sql::Statement s(conn,
                   "SELECT s.host, s.pid, count(*) FROM claims c JOIN sessions s ON s.id = c.session_id WHERE "
                   "c.device_id = ?1 AND c.workload_id = ?2 AND c.template_id = ?3 AND c.session_id != ?4 AND "
                   "c.config_json NOT LIKE ?5 GROUP BY s.host, s.pid ORDER BY s.host, s.pid");
  s.bind(1, st.device_id).bind(2, st.workload_id).bind(3, st.template_id).bind(4, session_id)
      .bind(5, std::string(kRemeasureClaim) + "%");
  int64_t n = 0;
  while (s.step()) {
    if (processes) processes->emplace_back(s.column_text(0), s.column_int64(1));
    n += s.column_int64(2);
  }
  return n;
}

ClaimResult TuningDb::claim_configs(int64_t session_id, const std::vector<std::string>& configs, int64_t budget) {
  reap_dead_sessions();
  auto& conn = impl_->conn;
  return internal::retry_locked(conn, impl_->write_patience_s, [&] {
    sql::Transaction tx(conn);
    const auto [d, w, t] = session_target(conn, session_id);
    ClaimResult r;
    r.budget_left = budget - trials_and_claims(conn, d, w, t);
    sql::Statement taken(conn,
                         "SELECT EXISTS (SELECT 1 FROM trials WHERE device_id = ?1 AND workload_id = ?2 AND "
                         "template_id = ?3 AND config_json = ?4) OR EXISTS (SELECT 1 FROM claims WHERE "
                         "device_id = ?1 AND workload_id = ?2 AND template_id = ?3 AND config_json = ?4)");
    sql::Statement insert(conn,
                          "INSERT INTO claims (device_id, workload_id, template_id, config_json, session_id, "
                          "claimed_at) VALUES (?, ?, ?, ?, ?, ?)");
    const std::string now = now_iso8601();
    r.claimed.assign(configs.size(), false);
    for (size_t i = 0; i < configs.size() && r.budget_left > 0; ++i) {
      taken.bind(1, d).bind(2, w).bind(3, t).bind(4, configs[i]);
      taken.step();
      const bool is_taken = taken.column_int64(0) != 0;
      taken.reset();
      if (is_taken) continue;
      insert.bind(1, d).bind(2, w).bind(3, t).bind(4, configs[i]).bind(5, session_id).bind(6, now).run();
      insert.reset();
      r.claimed[i] = true;
      --r.budget_left;
    }
    tx.commit();
    return r;
  });
}

bool TuningDb::claim_remeasure(int64_t session_id, const std::string& config_json) {
  reap_dead_sessions();
  auto& conn = impl_->conn;
  return internal::retry_locked(conn, impl_->write_patience_s, [&] {
    sql::Transaction tx(conn);
    const auto [d, w, t] = session_target(conn, session_id);
    const std::string key = kRemeasureClaim + config_json;
    sql::Statement taken(conn,
                         "SELECT (SELECT count(*) FROM trials WHERE device_id = ?1 AND workload_id = ?2 AND "
                         "template_id = ?3 AND config_json = ?4 AND status = 'ok') >= 2 OR EXISTS (SELECT 1 FROM "
                         "claims WHERE device_id = ?1 AND workload_id = ?2 AND template_id = ?3 AND config_json = ?5)");
    taken.bind(1, d).bind(2, w).bind(3, t).bind(4, config_json).bind(5, key);
    taken.step();
    if (taken.column_int64(0) != 0) return false;
    sql::Statement insert(conn,
                          "INSERT INTO claims (device_id, workload_id, template_id, config_json, session_id, "
                          "claimed_at) VALUES (?, ?, ?, ?, ?, ?)");
    insert.bind(1, d).bind(2, w).bind(3, t).bind(4, key).bind(5, session_id).bind(6, now_iso8601()).run();
    tx.commit();
    return true;
  });
}

void TuningDb::add_trials(int64_t session_id, std::vector<TrialRecord>& trials) {
  if (trials.empty()) return;
  auto& conn = impl_->conn;
  struct Assigned {
    int64_t id;
    std::string started_at, finished_at;
  };
  std::vector<Assigned> assigned;
  internal::retry_locked(conn, impl_->write_patience_s, [&] {
  assigned.clear();
  sql::Transaction tx(conn);

  const auto [device_id, workload_id, template_id] = session_target(conn, session_id);

  sql::Statement insert(conn,
                        "INSERT INTO trials (session_id, device_id, workload_id, template_id, config_json, status, "
                        "error_message, compile_ms, registers, shared_bytes, spill_bytes, time_ms, time_spread_ms, "
                        "repeats, gflops, estimate, started_at, finished_at, purpose, bytes) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  // The records are filled only after the commit, so a failed batch leaves them as they were.
  sql::Statement release(conn,
                         "DELETE FROM claims WHERE session_id = ? AND device_id = ? AND workload_id = ? AND "
                         "template_id = ? AND config_json = ?");
  const std::string now = now_iso8601();
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
        .bind(19, t.purpose)
        .bind(20, t.bytes);
    insert.run();
    a.id = conn.last_insert_rowid();
    assigned.push_back(std::move(a));
    insert.reset();
    release.bind(1, session_id).bind(2, device_id).bind(3, workload_id).bind(4, template_id).bind(5, t.config_json).run();
    release.reset();
  }
  tx.commit();
  });

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

/// Ok trials matching `where`, grouped per config: its measurement count, mean time and latest trial. A
/// device is its name and kind: records of one GPU under another driver or NVRTC version (a database merged
/// from two machines, a driver upgraded) are measurements of the same device, pooled, not a second device.
std::string config_means(const Where& where) {
  return std::string(
             "SELECT t.workload_id AS wid, d.name AS dname, d.simulated AS dsim, t.template_id AS tid, COUNT(*) AS n, "
             "AVG(t.time_ms) AS mean_ms, MAX(t.id) AS last_id FROM trials t") +
         kResultJoins + where.sql + " GROUP BY t.workload_id, d.name, d.simulated, t.template_id, t.config_json";
}

/// How configs rank: by mean time to 1e-9 ms (a sim device's estimates tie exactly, and a mean of three equal
/// times can differ from the time in its last bit); at equal means the one measured more often (a re-measured
/// finalist over a config seen once), then the one whose latest measurement was stored first. Stored, not measured:
/// several workers finish in the order the wall clock gives, and a seeded search must report the same best every
/// time (records imported or merged in another order than they were measured rank in the order they came in). The
/// runtime ranks the same way (runtime/tuned_records.cpp).
constexpr const char* kBestOrder = "ROUND(c.mean_ms, 9), c.n DESC, c.last_id";

}  // namespace

std::optional<ResultRow> TuningDb::best(const QueryFilter& f) const {
  const Where where = build_where(f, kTrialColumns, /*force_ok=*/true);
  const std::string query = "WITH cfg AS (" + config_means(where) + ") SELECT " + kResultColumns +
                            ", c.n, c.mean_ms FROM cfg c JOIN trials t ON t.id = c.last_id" + kResultJoins +
                            " ORDER BY " + kBestOrder + " LIMIT 1";
  auto rows = run_result_query(impl_->conn, query, where);
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

std::map<int64_t, DeviceIdentity> TuningDb::trial_devices() const {
  sql::Statement s(impl_->conn,
                   "SELECT t.id, d.name, d.simulated, d.cc_major, d.cc_minor, d.sm_count, d.memory_bytes, "
                   "d.driver_version, d.nvrtc_version FROM trials t JOIN devices d ON d.id = t.device_id");
  std::map<int64_t, DeviceIdentity> out;
  while (s.step()) {
    DeviceIdentity d;
    d.name = s.column_text(1);
    d.simulated = s.column_int64(2) != 0;
    d.cc_major = static_cast<int>(s.column_int64(3));
    d.cc_minor = static_cast<int>(s.column_int64(4));
    d.sm_count = static_cast<int>(s.column_int64(5));
    d.memory_bytes = s.column_int64(6);
    d.driver_version = s.column_text(7);
    d.nvrtc_version = s.column_text(8);
    out.emplace(s.column_int64(0), std::move(d));
  }
  return out;
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
      "), ranked AS (SELECT c.*, ROW_NUMBER() OVER (PARTITION BY c.wid, c.dname, c.dsim, c.tid ORDER BY " + kBestOrder + ") "
      "AS rank FROM cfg c) SELECT " +
      kResultColumns + ", r.n, r.mean_ms FROM ranked r JOIN trials t ON t.id = r.last_id" + kResultJoins +
      " WHERE r.rank = 1 ORDER BY w.op, w.shape, w.dtype, d.name, d.simulated, tp.name, tp.hash" + limit_clause(f.limit);
  return run_result_query(impl_->conn, query, where);
}

std::vector<TemplateVersion> TuningDb::latest_template_versions() const {
  // The version of the latest session (by start, then id) that tuned a kernel's text, of each name: a user kernel
  // tuned again at an earlier text is current again (the newest templates row was the one first recorded last).
  // Sessions on replay: devices do not count: they store a recording under the version it measured, an old text.
  // A version no such session used counts by its row.
  sql::Statement stmt(impl_->conn,
                      "SELECT name, hash FROM templates t WHERE id = ("
                      "  SELECT u.id FROM templates u LEFT JOIN (SELECT s.id, s.template_id, s.started_at FROM sessions s "
                      "    JOIN devices d ON d.id = s.device_id WHERE d.name NOT LIKE 'replay:%') s "
                      "  ON s.template_id = u.id WHERE u.name = t.name "
                      "  GROUP BY u.id ORDER BY max(s.started_at) DESC NULLS LAST, max(s.id) DESC, u.id DESC LIMIT 1) "
                      "ORDER BY name");
  std::vector<TemplateVersion> out;
  while (stmt.step()) out.push_back({stmt.column_text(0), stmt.column_text(1)});
  return out;
}

std::vector<std::string> TuningDb::recorded_ops() const {
  sql::Statement stmt(impl_->conn, "SELECT DISTINCT op FROM workloads ORDER BY op");
  std::vector<std::string> out;
  while (stmt.step()) out.push_back(stmt.column_text(0));
  return out;
}

std::vector<std::string> TuningDb::shapes_of_op(const std::string& op) const {
  sql::Statement stmt(impl_->conn, "SELECT shape FROM workloads WHERE op = ? ORDER BY id DESC");
  stmt.bind(1, op);
  std::vector<std::string> out;
  while (stmt.step()) out.push_back(stmt.column_text(0));
  return out;
}

std::vector<SessionRow> TuningDb::sessions(const QueryFilter& f) const {
  const Where where = build_where(f, FilterColumns{"s.id", nullptr, nullptr}, /*force_ok=*/false);
  const std::string query =
      "SELECT s.id, s.strategy, s.seed, s.budget, s.status, s.started_at, s.finished_at, "
      "(SELECT count(*) FROM trials x WHERE x.session_id = s.id), w.op, w.shape, w.dtype, d.name, s.reason, s.pid, "
      "s.host, tp.name, tp.hash, "
      "(SELECT count(*) FROM trials x WHERE x.session_id = s.id AND x.purpose = 'search'), s.process_start "
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
    r.reason = stmt.column_text(12);
    r.pid = stmt.column_int64(13);
    r.host = stmt.column_text(14);
    r.template_name = stmt.column_text(15);
    r.template_hash = stmt.column_text(16);
    r.search_trials = stmt.column_int64(17);
    // A session still marked running whose process on this host is gone is shown as what the next tune will
    // mark it (a read-only query cannot): killed, with that reason.
    if (r.status == "running") {
      const ProcessIdentity owner{r.pid, r.host, stmt.column_int64(18)};
      if (liveness(owner) == Liveness::kDead) {
        r.status = "killed";
        r.reason = dead_session_reason(owner);
      }
    }
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
  insert.bind_blob(7, m.model).bind(8, now);
  m.id = internal::retry_locked(conn, impl_->write_patience_s, [&] {
    insert.run();
    return conn.last_insert_rowid();
  });
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
  {
    sql::Statement same(conn,
                        "SELECT id, created_at FROM plans WHERE model = ? AND cluster = ? AND options_json = ? AND "
                        "tp = ? AND pp = ? AND dp = ? AND iteration_time_s = ? AND tflops_per_gpu = ? AND mfu = ? "
                        "AND peak_memory_bytes = ? AND cp = ? AND ep = ? ORDER BY id LIMIT 1");
    same.bind(1, p.model)
        .bind(2, p.cluster)
        .bind(3, p.options_json)
        .bind(4, p.tp)
        .bind(5, p.pp)
        .bind(6, p.dp)
        .bind(7, p.iteration_time_s)
        .bind(8, p.tflops_per_gpu)
        .bind(9, p.mfu)
        .bind(10, p.peak_memory_bytes)
        .bind(11, p.cp)
        .bind(12, p.ep);
    if (same.step()) {
      p.id = same.column_int64(0);
      p.created_at = same.column_text(1);
      p.already_logged = true;
      return p.id;
    }
  }
  p.already_logged = false;
  const std::string now = now_iso8601();
  sql::Statement insert(conn,
                        "INSERT INTO plans (model, cluster, options_json, plan_json, tp, pp, dp, iteration_time_s, "
                        "tflops_per_gpu, mfu, peak_memory_bytes, planning_s, created_at, cp, ep) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
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
      .bind(14, p.cp)
      .bind(15, p.ep);
  p.id = internal::retry_locked(conn, impl_->write_patience_s, [&] {
    insert.run();
    return conn.last_insert_rowid();
  });
  p.created_at = now;
  return p.id;
}

std::vector<PlanRecord> TuningDb::plans(int limit) const {
  sql::Statement stmt(impl_->conn,
                      "SELECT id, model, cluster, options_json, plan_json, tp, pp, dp, iteration_time_s, "
                      "tflops_per_gpu, mfu, peak_memory_bytes, planning_s, created_at, cp, ep FROM plans ORDER BY id DESC" +
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
    p.cp = static_cast<int>(stmt.column_int64(14));
    p.ep = static_cast<int>(stmt.column_int64(15));
    rows.push_back(std::move(p));
  }
  return rows;
}

void TuningDb::set_write_patience(double seconds) {
  impl_->write_patience_s = std::max(0.0, seconds);
  impl_->conn.set_busy_timeout(static_cast<int>(std::min<double>(kBusyTimeoutMs, impl_->write_patience_s * 1000)));
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
