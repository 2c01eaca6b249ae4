// SIGINT/SIGTERM and the threads of a tune process (tuner/stop_signals.h). A thread that does not block
// the stop signals can take a process-directed one and end the process by the default action: on a GPU
// the CUDA driver's threads (started at cuInit, before any session) did, and `tune` cut by `timeout -s
// INT` printed nothing and left its session marked running. Each case runs in a forked child, so the
// signal it sends cannot reach the test runner.
#include "tuner/stop_signals.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace tuner {
namespace {

bool blocks_stop_signals() {
  sigset_t m;
  pthread_sigmask(SIG_BLOCK, nullptr, &m);
  return sigismember(&m, SIGINT) == 1 && sigismember(&m, SIGTERM) == 1;
}

/// Runs body in a forked child and returns its wait status.
template <typename F>
int in_child(F body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

/// Waits up to 2 s for the stop flag.
bool stop_seen() {
  for (int i = 0; i < 200 && !stop_requested(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return stop_requested();
}

TEST(StopSignalsBlocked, ThreadsStartedWithinInheritTheBlockAndTheCallerGetsItsMaskBack) {
  ASSERT_FALSE(blocks_stop_signals());
  bool inner = false;
  {
    StopSignalsBlocked blocked;
    EXPECT_TRUE(blocks_stop_signals());
    std::thread([&] { inner = blocks_stop_signals(); }).join();
  }
  EXPECT_TRUE(inner);
  EXPECT_FALSE(blocks_stop_signals());
}

// The failure, without a session: the main thread blocks the signals, an older thread does not, and a
// process-directed SIGINT goes to that thread, whose default action ends the process.
TEST(StopSignals, AnOlderThreadThatDoesNotBlockTheSignalsTakesThemAndEndsTheProcess) {
  const int status = in_child([] {
    std::thread older([] { std::this_thread::sleep_for(std::chrono::seconds(3)); });
    older.detach();
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    kill(getpid(), SIGINT);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    return 0;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGINT);
}

// The fix: a thread started under StopSignalsBlocked (as cuInit's are) never takes the signal, so a
// session's StopSignals sees every SIGINT and SIGTERM and the process lives on to commit and report.
TEST(StopSignals, ASignalReachesTheSessionWhenOlderThreadsStartedBlocked) {
  for (int sig : {SIGINT, SIGTERM}) {
    const int status = in_child([sig] {
      {
        StopSignalsBlocked blocked;
        for (int i = 0; i < 4; ++i) std::thread([] { std::this_thread::sleep_for(std::chrono::seconds(3)); }).detach();
      }
      StopSignals signals;
      kill(getpid(), sig);
      if (!stop_seen()) return 3;
      return stop_signal() == sig ? 0 : 4;
    });
    ASSERT_TRUE(WIFEXITED(status)) << "signal " << sig << " ended the process (status " << status << ")";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "signal " << sig;
  }
}

}  // namespace
}  // namespace tuner
