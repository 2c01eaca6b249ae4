// Thin RAII owners for SQLite's C handles: a Connection (sqlite3*), a prepared
// Statement (sqlite3_stmt*) and a Transaction that rolls back unless committed.
//
// This is the only place that talks to the SQLite C API; sqlite3.h is included
// by sqlite_handle.cpp alone, so this header only forward-declares the handle
// types. Every failing call becomes a DbError naming the database file, the
// call and SQLite's own message. It knows nothing of the tuner's schema.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "db/tuning_db.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tuner::db::sql {

/// How a Connection opens its file.
enum class OpenMode {
  kReadWriteCreate,  ///< Read-write, creating the file if absent.
  kReadWrite,        ///< Read-write; the file must exist.
  kReadOnly,         ///< Read-only; the file must exist.
  /// Opened for writing but PRAGMA query_only (nothing can be changed): read-only for every caller, and, unlike
  /// kReadOnly, the last such connection to close removes the -wal and -shm files of a WAL database (a
  /// read-only connection cannot, so every query left them beside the database). The file must exist.
  kQueryOnly,
  kImmutable,        ///< Read-only, and no other process may change it (no locks, no -shm): for files in
                     ///< read-only directories, where SQLite cannot create the WAL index.
};

/// Whether the program was asked to stop (a Ctrl-C): lock waits, SQLite's and retry_locked's, end when it is. The
/// program sets the check (the tuning loop's stop flag); none is set by default.
void set_wait_interrupt(bool (*interrupted)());
bool wait_interrupted();

/// An open database connection (owns the sqlite3*).
class Connection {
 public:
  /// Opens path; throws DbError "cannot open database '<path>': <reason>" on failure.
  Connection(const std::string& path, OpenMode mode);

  /// Reads the schema table once; throws DbError "database '<path>' is not an SQLite database"
  /// when the file has some other format. Writes nothing.
  void probe();
  /// Runs one or more SQL statements that return no rows.
  void exec(const std::string& sql);
  /// Sets how long a statement waits for another connection's lock, in ms (less when wait_interrupted() turns true
  /// in an interruptible wait: a Ctrl-C stops it at once).
  void set_busy_timeout(int ms);
  /// Whether a Ctrl-C (wait_interrupted()) ends this connection's lock waits: only where nothing measured waits to
  /// be stored (opening, claims, starting a session); a commit of trials waits its time. Returns the old setting.
  bool set_wait_interruptible(bool on) const;
  /// The steady_clock time (nanoseconds since its epoch) past which a lock wait ends whatever the busy timeout
  /// left: a caller's whole patience over several attempts (retry_locked). INT64_MAX: none. Returns the old one.
  int64_t set_wait_deadline(int64_t steady_ns) const;
  /// Rowid of the last successful INSERT on this connection.
  int64_t last_insert_rowid() const;
  /// Rows changed by the last INSERT/UPDATE/DELETE.
  int64_t changes() const;

  /// Throws DbError carrying SQLite's message when rc is not OK/ROW/DONE.
  void check(int rc, const char* call) const;

  /// An in-memory copy of this connection's database (SQLite's online backup, WAL content included), named by
  /// this one's path and read-only to the rest of the program: what is changed in it (a migration) stays there.
  Connection snapshot_in_memory() const;

  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }
  /// Whether this is a snapshot_in_memory() copy of a file.
  bool snapshot() const { return snapshot_; }
  bool in_memory() const { return path_ == ":memory:" || path_.empty(); }
  sqlite3* raw() const { return db_.get(); }

 private:
  struct Closer {
    void operator()(sqlite3* db) const noexcept;
  };
  std::unique_ptr<sqlite3, Closer> db_;
  /// The busy handler's state, on the heap: its address is SQLite's argument and must survive a move.
  struct BusyWait;
  std::shared_ptr<BusyWait> busy_;
  std::string path_;
  bool read_only_ = false;
  bool snapshot_ = false;
};

/// A prepared statement (owns the sqlite3_stmt*). Parameters are 1-based, columns 0-based.
class Statement {
 public:
  Statement(Connection& conn, const std::string& sql);

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, const std::string& value);
  Statement& bind_null(int index);
  /// Binds bytes as a BLOB (no text encoding assumed).
  Statement& bind_blob(int index, const std::string& bytes);

  /// Advances; true when a row is available, false when done. Throws DbError on failure.
  bool step();
  /// Runs a statement that returns no rows (step until done).
  void run();
  /// Resets for re-execution and clears the bindings.
  void reset();

  int64_t column_int64(int col) const;
  double column_double(int col) const;
  std::string column_text(int col) const;
  /// The column's bytes as they are (BLOB or text).
  std::string column_blob(int col) const;
  bool column_is_null(int col) const;
  /// Columns in the result.
  int column_count() const;

 private:
  struct Finalizer {
    void operator()(sqlite3_stmt* stmt) const noexcept;
  };
  Connection* conn_;
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt_;
};

/// BEGINs (IMMEDIATE: takes the write lock up front) in its constructor and
/// ROLLBACKs in its destructor unless commit() was called.
class Transaction {
 public:
  explicit Transaction(Connection& conn);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void commit();

 private:
  Connection& conn_;
  bool done_ = false;
};

}  // namespace tuner::db::sql
