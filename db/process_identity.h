// Which process owns a tuning session, and whether that process still runs.
//
// A session stores the pid, the host name and the process's start time (clock
// ticks since boot, from /proc/<pid>/stat), so that a later run can tell a
// session whose process was killed (kill -9, a power cut) from one still
// measuring, even after the pid has been reused. Only processes of this host
// can be judged; sessions of other hosts are left alone.
#pragma once

#include <cstdint>
#include <string>

namespace tuner::db {

struct ProcessIdentity {
  int64_t pid = 0;
  std::string host;
  int64_t start_ticks = 0;  ///< Start time of the process in clock ticks since boot (0: unknown).
};

/// The calling process.
ProcessIdentity current_process();

enum class Liveness { kAlive, kDead, kUnknown };

/// kDead when p ran on this host and no process with its pid and start time runs now; kUnknown for
/// another host or a record without a pid.
Liveness liveness(const ProcessIdentity& p);

}  // namespace tuner::db
