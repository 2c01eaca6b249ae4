// The one translation unit of the project that includes sqlite3.h.
#include "db/sqlite_handle.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <thread>

namespace tuner::db::sql {

namespace {

DbError::Kind error_kind(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return DbError::Kind::kBusy;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return DbError::Kind::kCorrupt;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN: return DbError::Kind::kReadOnly;
    case SQLITE_FULL:
    case SQLITE_IOERR: return DbError::Kind::kFull;
    default: return DbError::Kind::kOther;
  }
}

}  // namespace

void Connection::Closer::operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }

Connection::Connection(const std::string& path, OpenMode mode) : path_(path) {
  int flags = SQLITE_OPEN_FULLMUTEX;
  switch (mode) {
    case OpenMode::kReadWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
    case OpenMode::kReadWrite: flags |= SQLITE_OPEN_READWRITE; break;
    case OpenMode::kReadOnly: flags |= SQLITE_OPEN_READONLY; break;
    case OpenMode::kQueryOnly: flags |= SQLITE_OPEN_READWRITE; break;
    case OpenMode::kImmutable: flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI; break;
  }
  read_only_ = mode == OpenMode::kReadOnly || mode == OpenMode::kImmutable || mode == OpenMode::kQueryOnly;
  std::string name = path;
  if (mode == OpenMode::kImmutable) {  // file: URI with the path percent-encoded where URIs need it
    name = "file:";
    static const char* hex = "0123456789ABCDEF";
    for (unsigned char ch : path) {
      if (ch == '%' || ch == '?' || ch == '#' || ch < 0x21 || ch >= 0x7f) {
        name += '%';
        name += hex[ch >> 4];
        name += hex[ch & 15];
      } else {
        name += static_cast<char>(ch);
      }
    }
    name += "?immutable=1";
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(name.c_str(), &raw, flags, nullptr);
  db_.reset(raw);  // Owned even on failure: sqlite3_open_v2 may allocate a handle that carries the error.
  if (rc != SQLITE_OK) {
    const std::string reason = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    throw DbError("cannot open database '" + path + "': " + reason, error_kind(rc));
  }
  sqlite3_extended_result_codes(raw, 1);
  // Query-only, the last connection to close still checkpoints a -wal a writer left (killed, or still reading when
  // it ended) into the file: the contents stay the same, and the file alone then holds every commit. Leaving the
  // -wal alone (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE) was tried: commits then stayed in the -wal until the next writer,
  // and a copy of the file alone lost them.
  if (mode == OpenMode::kQueryOnly) check(sqlite3_exec(raw, "PRAGMA query_only = 1", nullptr, nullptr, nullptr), "query_only");
  // SQLite opens a write-protected file read-only without saying so; a writer must know now.
  if (!read_only_ && sqlite3_db_readonly(raw, "main") == 1)
    throw DbError("database '" + path + "' is read-only (the file is write-protected); allowed: a writable file",
                  DbError::Kind::kReadOnly);
}

void Connection::check(int rc, const char* call) const {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  const std::string reason = db_ ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(rc);
  const DbError::Kind kind = error_kind(rc);
  if (kind == DbError::Kind::kCorrupt)
    throw DbError("database '" + path_ + "' is damaged (" + call + ": " + reason +
                      "); allowed: an intact tuner database (restore it from a copy)",
                  kind);
  throw DbError("database '" + path_ + "': " + call + ": " + reason, kind);
}

void Connection::probe() {
  const int rc = sqlite3_exec(db_.get(), "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  if (rc == SQLITE_NOTADB)
    throw DbError("database '" + path_ + "' is not an SQLite database (file has another format)",
                  DbError::Kind::kCorrupt);
  check(rc, "reading the schema");
}

void Connection::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &err);
  // Own the message before anything else can run on the connection.
  std::unique_ptr<char, decltype(&sqlite3_free)> owned(err, &sqlite3_free);
  if (rc != SQLITE_OK) {
    const std::string reason = err ? err : sqlite3_errstr(rc);
    throw DbError("database '" + path_ + "': sqlite3_exec: " + reason, error_kind(rc));
  }
}

Connection Connection::snapshot_in_memory() const {
  Connection copy(":memory:", OpenMode::kReadWriteCreate);
  sqlite3_backup* backup = sqlite3_backup_init(copy.raw(), "main", raw(), "main");
  if (!backup) copy.check(sqlite3_errcode(copy.raw()), "sqlite3_backup_init");
  const int rc = sqlite3_backup_step(backup, -1);
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) check(rc, "sqlite3_backup_step");
  copy.path_ = path_;
  copy.read_only_ = true;
  copy.snapshot_ = true;
  return copy;
}

namespace {
std::atomic<bool (*)()> g_interrupted{nullptr};
}  // namespace

void set_wait_interrupt(bool (*interrupted)()) { g_interrupted.store(interrupted); }

bool wait_interrupted() {
  bool (*f)() = g_interrupted.load();
  return f && f();
}

struct Connection::BusyWait {
  int timeout_ms = 0;
  std::chrono::steady_clock::time_point start;
  std::atomic<bool> interruptible{false};
  /// steady_clock nanoseconds past which no wait goes on (a caller's whole patience); max: none.
  std::atomic<int64_t> deadline_ns{std::numeric_limits<int64_t>::max()};
};

bool Connection::set_wait_interruptible(bool on) const {
  return busy_ ? busy_->interruptible.exchange(on) : false;
}

int64_t Connection::set_wait_deadline(int64_t steady_ns) const {
  return busy_ ? busy_->deadline_ns.exchange(steady_ns) : std::numeric_limits<int64_t>::max();
}

void Connection::set_busy_timeout(int ms) {
  if (!busy_) busy_ = std::make_shared<BusyWait>();
  busy_->timeout_ms = ms;
  // SQLite's own handler (sqlite3_busy_timeout) sleeps through a Ctrl-C: this one polls the stop flag every 20 ms.
  auto handler = [](void* arg, int count) -> int {
    auto* w = static_cast<BusyWait*>(arg);
    const auto now = std::chrono::steady_clock::now();
    if (count == 0) w->start = now;
    const auto waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - w->start).count();
    const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    const int64_t deadline_ns = w->deadline_ns.load();
    if (waited_ms >= w->timeout_ms || now_ns >= deadline_ns || (w->interruptible.load() && wait_interrupted()))
      return 0;
    const int64_t to_deadline_ms = (deadline_ns - now_ns) / 1000000 + 1;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::min<int64_t>({20, w->timeout_ms - waited_ms, to_deadline_ms})));
    return 1;
  };
  check(sqlite3_busy_handler(db_.get(), ms > 0 ? +handler : nullptr, busy_.get()), "sqlite3_busy_handler");
}

int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_.get()); }

int64_t Connection::changes() const { return sqlite3_changes64(db_.get()); }

void Statement::Finalizer::operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }

Statement::Statement(Connection& conn, const std::string& sql) : conn_(&conn) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v2(conn.raw(), sql.c_str(), static_cast<int>(sql.size()), &raw, nullptr);
  stmt_.reset(raw);
  conn.check(rc, "sqlite3_prepare_v2");
}

Statement& Statement::bind(int index, int64_t value) {
  conn_->check(sqlite3_bind_int64(stmt_.get(), index, value), "sqlite3_bind_int64");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  conn_->check(sqlite3_bind_double(stmt_.get(), index, value), "sqlite3_bind_double");
  return *this;
}

Statement& Statement::bind(int index, const std::string& value) {
  conn_->check(sqlite3_bind_text64(stmt_.get(), index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
               "sqlite3_bind_text64");
  return *this;
}

Statement& Statement::bind_blob(int index, const std::string& bytes) {
  conn_->check(sqlite3_bind_blob64(stmt_.get(), index, bytes.data(), bytes.size(), SQLITE_TRANSIENT),
               "sqlite3_bind_blob64");
  return *this;
}

Statement& Statement::bind_null(int index) {
  conn_->check(sqlite3_bind_null(stmt_.get(), index), "sqlite3_bind_null");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  conn_->check(rc, "sqlite3_step");
  return false;
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_.get());  // Returns the last step's error, already reported by step().
  sqlite3_clear_bindings(stmt_.get());
}

int64_t Statement::column_int64(int col) const { return sqlite3_column_int64(stmt_.get(), col); }

double Statement::column_double(int col) const { return sqlite3_column_double(stmt_.get(), col); }

std::string Statement::column_text(int col) const {
  const auto* text = sqlite3_column_text(stmt_.get(), col);
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), col)));
}

std::string Statement::column_blob(int col) const {
  const void* data = sqlite3_column_blob(stmt_.get(), col);
  if (!data) return {};
  return std::string(static_cast<const char*>(data), static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), col)));
}

int Statement::column_count() const { return sqlite3_column_count(stmt_.get()); }

bool Statement::column_is_null(int col) const { return sqlite3_column_type(stmt_.get(), col) == SQLITE_NULL; }

Transaction::Transaction(Connection& conn) : conn_(conn) { conn_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (done_) return;
  // A failed statement may already have rolled the transaction back; then there is nothing to undo.
  if (sqlite3_get_autocommit(conn_.raw())) return;
  sqlite3_exec(conn_.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  conn_.exec("COMMIT");
  done_ = true;
}

}  // namespace tuner::db::sql
