// What the store's own translation units share and nothing else sees: TuningDb's implementation state
// and the retry of writes while another process holds the database locked.
#pragma once

#include <algorithm>
#include <chrono>
#include <limits>
#include <iomanip>
#include <sstream>
#include <thread>

#include "db/process_identity.h"
#include "db/sqlite_handle.h"
#include "db/tuning_db.h"

namespace tuner::db {

struct TuningDb::Impl {
  explicit Impl(sql::Connection c) : conn(std::move(c)), me(current_process()) {}
  sql::Connection conn;
  ProcessIdentity me;           ///< The process sessions begun here belong to.
  double write_patience_s = 60; ///< How long writes retry a locked database.
};

namespace internal {

/// Runs a write (a whole transaction) and runs it again while another process holds the database locked:
/// each attempt waits SQLite's busy timeout, then a pause that doubles from 20 ms up to 1 s, until
/// patience_s have passed. Every attempt starts its own transaction, so a retry never sees half of one.
template <class F>
auto retry_locked(const sql::Connection& conn, double patience_s, F&& write, bool interruptible = false)
    -> decltype(write()) {
  // A Ctrl-C ends the wait only where nothing measured waits to be stored (see Connection::set_wait_interruptible).
  // And SQLite's own wait inside an attempt ends with the patience: `--db-timeout 8` waited 10 s, two 5 s waits.
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline_ns = [&] {
    const double ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count()) +
                      patience_s * 1e9;
    return ns >= 9e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(ns);
  }();
  struct Scope {
    const sql::Connection& c;
    bool old;
    int64_t old_deadline;
    ~Scope() {
      c.set_wait_interruptible(old);
      c.set_wait_deadline(old_deadline);
    }
  } scope{conn, conn.set_wait_interruptible(interruptible), conn.set_wait_deadline(deadline_ns)};
  int pause_ms = 20;
  for (int attempt = 1;; ++attempt) {
    try {
      return write();
    } catch (const DbError& e) {
      if (e.kind() != DbError::Kind::kBusy) throw;
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const bool interrupted = interruptible && sql::wait_interrupted();
      if (waited >= patience_s || interrupted) {
        std::ostringstream msg;
        msg << "database '" << conn.path() << "' stayed locked by another process for " << std::fixed
            << std::setprecision(1) << waited << " s (" << attempt << (attempt == 1 ? " attempt; " : " attempts; ")
            << e.what() << ")" << (interrupted ? "; the wait was interrupted" : "");
        throw DbError(msg.str(), DbError::Kind::kBusy);
      }
      const int left_ms = static_cast<int>((patience_s - waited) * 1000) + 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(pause_ms, left_ms)));
      pause_ms = std::min(pause_ms * 2, 1000);
    }
  }
}

}  // namespace internal
}  // namespace tuner::db
