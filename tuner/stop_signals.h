// SIGINT and SIGTERM during a tuning session: the loop polls stop_requested()
// between configs and ends the session after the current one (what was
// measured is committed; the session is marked interrupted with the signal).
//
// StopSignals lives as long as the session: it blocks both signals in every
// thread (the compile pool inherits the mask, and NVRTC installs handlers of
// its own that would exit the process) and one thread of its own waits for
// them. Not responsible for what the loop does once asked to stop.
//
// Threads started before a StopSignals do not block the signals, and the kernel may hand a
// process-directed signal to any thread that does not block it: one of the CUDA driver's threads
// (started at cuInit, before any session) would then take SIGINT and end the process by its default
// action, with nothing committed or printed. StopSignalsBlocked keeps the signals blocked while such
// threads start, so they never take them.
#pragma once

#include <signal.h>

#include <atomic>
#include <thread>

namespace tuner {

/// True once SIGINT or SIGTERM arrived while a StopSignals was alive (reset by each new outermost one:
/// a StopSignals held around several sessions keeps a stop that arrived between them).
bool stop_requested();
/// The signal that asked the loop to stop (0: none).
int stop_signal();

/// Blocks SIGINT and SIGTERM in the calling thread for its lifetime (then restores its mask), so threads
/// started meanwhile (the CUDA driver's, at cuInit) inherit the block and never take a stop signal.
class StopSignalsBlocked {
 public:
  StopSignalsBlocked();
  ~StopSignalsBlocked();
  StopSignalsBlocked(const StopSignalsBlocked&) = delete;
  StopSignalsBlocked& operator=(const StopSignalsBlocked&) = delete;

 private:
  sigset_t old_mask_{};
};

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  sigset_t set_{};
  sigset_t old_mask_{};
  std::atomic<bool> closing_{false};
  std::thread waiter_;
};

}  // namespace tuner
