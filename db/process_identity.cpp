#include "db/process_identity.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <sstream>

namespace tuner::db {

namespace {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

/// Field 22 of /proc/<pid>/stat (starttime), or -1 when the process does not exist or is a zombie (it has
/// ended; only its parent has not collected it yet). The command name in
/// field 2 may hold spaces and parentheses, so the fields are counted from the last ')'.
int64_t start_ticks_of(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return -1;
  std::string line((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  // After ')': field 3 (state) is the first; starttime is field 22, the 20th from here.
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return 0;
    if (i == 3 && (field == "Z" || field == "X")) return -1;
  }
  try {
    return std::stoll(field);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

ProcessIdentity current_process() {
  const int64_t pid = static_cast<int64_t>(getpid());
  return {pid, host_name(), std::max<int64_t>(0, start_ticks_of(pid))};
}

Liveness liveness(const ProcessIdentity& p) {
  if (p.pid <= 0 || p.host != host_name()) return Liveness::kUnknown;
  const int64_t ticks = start_ticks_of(p.pid);
  if (ticks < 0) {
    if (std::ifstream("/proc/self/stat")) return Liveness::kDead;  // /proc works: the process is gone
    // No /proc: ask the kernel (a zombie then still counts as alive).
    return kill(static_cast<pid_t>(p.pid), 0) == 0 || errno == EPERM ? Liveness::kAlive : Liveness::kDead;
  }
  if (p.start_ticks > 0 && ticks > 0 && ticks != p.start_ticks) return Liveness::kDead;  // the pid was reused
  return Liveness::kAlive;
}

}  // namespace tuner::db
