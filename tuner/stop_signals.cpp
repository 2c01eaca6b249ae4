#include "tuner/stop_signals.h"

#include <pthread.h>
#include <unistd.h>

namespace tuner {

namespace {
std::atomic<bool> g_stop{false};
std::atomic<int> g_stop_signal{0};
std::atomic<int> g_depth{0};  // StopSignals alive (a run of several sessions holds one around theirs)

/// SIGINT and SIGTERM, the signals that ask a session to stop.
sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

bool stop_requested() { return g_stop.load(); }
int stop_signal() { return g_stop_signal.load(); }

StopSignalsBlocked::StopSignalsBlocked() {
  const sigset_t set = stop_signal_set();
  pthread_sigmask(SIG_BLOCK, &set, &old_mask_);
}

StopSignalsBlocked::~StopSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr); }

StopSignals::StopSignals() {
  if (g_depth.fetch_add(1) == 0) {  // the outermost one starts afresh; an inner one keeps a stop asked for
    g_stop.store(false);
    g_stop_signal.store(0);
  }
  set_ = stop_signal_set();
  pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
  waiter_ = std::thread([this] {
    int sig = 0;
    while (sigwait(&set_, &sig) == 0) {
      if (closing_.load()) return;
      if (g_stop.load()) {
        // A second signal: the current config may hang for its whole --timeout. Stop now; what was committed
        // stays (SQLite rolls back a write in flight), the worker dies with its parent, and the session is
        // marked killed by the next run that opens the database.
        static const char now[] = "\ntuner: stopped at once (a second signal); the session is left to be marked killed\n";
        (void)!write(STDERR_FILENO, now, sizeof now - 1);
        _exit(128 + sig);
      }
      g_stop_signal.store(sig);
      g_stop.store(true);
      if (isatty(STDERR_FILENO)) {
        static const char once[] = "\ntuner: stopping after the current config (Ctrl-C again stops at once)\n";
        (void)!write(STDERR_FILENO, once, sizeof once - 1);
      }
    }
  });
}

StopSignals::~StopSignals() {
  closing_.store(true);
  pthread_kill(waiter_.native_handle(), SIGTERM);
  waiter_.join();
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  g_depth.fetch_sub(1);
}

}  // namespace tuner
