#include "tuner/stop_signals.h"

#include <pthread.h>

namespace tuner {

namespace {
std::atomic<bool> g_stop{false};
std::atomic<int> g_stop_signal{0};
}  // namespace

bool stop_requested() { return g_stop.load(); }
int stop_signal() { return g_stop_signal.load(); }

StopSignals::StopSignals() {
  g_stop.store(false);
  g_stop_signal.store(0);
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
  waiter_ = std::thread([this] {
    int sig = 0;
    while (sigwait(&set_, &sig) == 0) {
      if (closing_.load()) return;
      g_stop_signal.store(sig);
      g_stop.store(true);
    }
  });
}

StopSignals::~StopSignals() {
  closing_.store(true);
  pthread_kill(waiter_.native_handle(), SIGTERM);
  waiter_.join();
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace tuner
