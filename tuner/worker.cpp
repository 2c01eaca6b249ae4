#include "tuner/worker.h"

#include "tuner/stop_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "costmodel/analytic_model.h"
#include "tuner/cuda_runner.h"

namespace tuner {

namespace {

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

/// Reads one line from fd (blocking); false at end of input.
bool read_line(int fd, std::string& buffer, std::string& line) {
  while (true) {
    auto nl = buffer.find('\n');
    if (nl != std::string::npos) {
      line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return true;
    }
    char chunk[65536];
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

MeasureResult error_result(const std::string& status, const std::string& message) {
  MeasureResult r;
  r.status = status;
  r.message = message;
  return r;
}

constexpr int kExecFailed = 127;  // the worker's exit code when its executable cannot be started

}  // namespace

MeasureResult sim_measure(const MeasureRequest& request, const std::function<void()>& on_ready) {
  const auto t0 = std::chrono::steady_clock::now();
  if (on_ready) on_ready();  // nothing to prepare: the config "runs" now
  if (request.fault == InjectedFault::kCrash) std::abort();
  if (request.fault == InjectedFault::kHang)
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  const std::string key = request.device.rfind("sim:", 0) == 0 ? request.device.substr(4) : request.device;
  auto gpu = costmodel::find_gpu_spec(key);
  if (!gpu) return error_result("unknown", "unknown sim device '" + request.device + "'");
  auto e = costmodel::estimate(request.profile, request.resources, *gpu);
  if (!e.launchable) return error_result("launch_error", e.reason);
  MeasureResult r;
  r.time_ms = e.time_ms;
  r.repeats = 1;
  r.estimate = true;
  r.phases.timed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

int worker_main(int in_fd, int out_fd) {
  std::signal(SIGPIPE, SIG_IGN);
  std::map<int, std::unique_ptr<CudaRunner>> runners;
  std::string buffer, line;
  // Tells the client that the config itself starts now: its timeout counts from here.
  const std::string ready_line = nlohmann::json{{"event", "ready"}}.dump() + "\n";
  const std::function<void()> on_ready = [&] { write_all(out_fd, ready_line); };
  while (read_line(in_fd, buffer, line)) {
    MeasureResult result;
    try {
      MeasureRequest req = measure_request_from_json(nlohmann::json::parse(line));
      if (req.device.rfind("sim:", 0) == 0) {
        result = sim_measure(req, on_ready);
      } else if (req.device.rfind("cuda:", 0) == 0) {
        int ordinal = std::stoi(req.device.substr(5));
        auto& runner = runners[ordinal];
        std::string err;
        if (!runner) runner = CudaRunner::create(ordinal, &err);
        if (!runner) {
          result = infrastructure_failure("cannot use " + req.device + ": " + err);
        } else {
          // On a real GPU an injected fault is a real kernel (the tuning loop compiled a faulting or
          // spinning kernel in place of the config's), so it takes the driver's own failure path.
          result = runner->measure(req, on_ready);
        }
      } else {
        result = error_result("unknown", "unknown device '" + req.device + "'");
      }
    } catch (const std::exception& e) {
      result = error_result("unknown", std::string("worker could not read the request: ") + e.what());
    }
    if (!write_all(out_fd, to_json(result).dump() + "\n")) return 1;
    if (result.context_lost) return 3;  // the CUDA context is unusable: let the client start a fresh worker
  }
  return 0;
}

std::string default_worker_executable() {
  if (const char* env = std::getenv("TUNER_WORKER_EXE"); env && *env) return env;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "tuner";
  if (self.filename() == "tuner") return self.string();
  for (auto candidate : {self.parent_path() / "tuner", self.parent_path() / "bin" / "tuner"})
    if (std::filesystem::exists(candidate, ec)) return candidate.string();
  return "tuner";
}

WorkerClient::WorkerClient(std::string executable, double startup_allowance_s)
    : executable_(std::move(executable)), startup_allowance_s_(startup_allowance_s) {
  std::signal(SIGPIPE, SIG_IGN);
}

WorkerClient::~WorkerClient() { stop(); }

namespace {

/// Whether a process of group `pgid` still runs (zombies, which hold nothing, do not count): /proc's stat lines.
bool group_alive(pid_t pgid) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(entry.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const size_t close = line.rfind(')');  // the command may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (rest >> state >> ppid >> pgrp && pgrp == pgid && state != 'Z') return true;
  }
  return false;
}

}  // namespace

bool WorkerClient::start(std::string* error) {
  // A killed worker still going (stuck in the driver; or under a TUNER_WORKER_EXE wrapper that died at once) holds
  // its GPU context: wait for its process group (up to a minute, or a Ctrl-C), then start anyway and forget it.
  const auto t0 = std::chrono::steady_clock::now();
  while (!lingering_.empty() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60) && !stop_requested()) {
    lingering_.erase(std::remove_if(lingering_.begin(), lingering_.end(),
                                    [](pid_t p) {
                                      waitpid(p, nullptr, WNOHANG);  // (reaps it once it is gone)
                                      return !group_alive(p);
                                    }),
                     lingering_.end());
    if (!lingering_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  lingering_.clear();
  // Said plainly before forking: an exec failure in the child shows only as a worker that takes no requests.
  if (::access(executable_.c_str(), X_OK) != 0) {
    *error = "'" + executable_ + "' cannot be run (" + std::strerror(errno) + ")" +
             (std::getenv("TUNER_WORKER_EXE") ? "; TUNER_WORKER_EXE names it" : "");
    return false;
  }
  int down[2], up[2];
  if (pipe2(down, O_CLOEXEC) != 0) { *error = std::string("pipe: ") + std::strerror(errno); return false; }
  if (pipe2(up, O_CLOEXEC) != 0) {
    ::close(down[0]); ::close(down[1]);
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    for (int fd : {down[0], down[1], up[0], up[1]}) ::close(fd);
    return false;
  }
  if (pid == 0) {
    // Its own process group: a Ctrl-C at the terminal stops the session, not the config being measured.
    setpgid(0, 0);
    // Dies with the parent, even when it hangs in a kernel and never reads end-of-file.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    // The session blocks SIGINT/SIGTERM in its threads; the worker starts with none blocked.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(down[0], STDIN_FILENO);
    dup2(up[1], STDOUT_FILENO);
    execl(executable_.c_str(), executable_.c_str(), "__worker", static_cast<char*>(nullptr));
    _exit(kExecFailed);
  }
  setpgid(pid, pid);  // (the child does too: whichever runs first, stop() finds the group)
  ::close(down[0]);
  ::close(up[1]);
  pid_ = pid;
  to_worker_ = down[1];
  from_worker_ = up[0];
  pending_.clear();
  ++starts_;
  return true;
}

void WorkerClient::stop() {
  if (to_worker_ >= 0) ::close(to_worker_);
  if (from_worker_ >= 0) ::close(from_worker_);
  to_worker_ = from_worker_ = -1;
  if (pid_ > 0) {
    // Closing stdin ends a healthy worker; give it a moment, then kill it.
    for (int i = 0; i < 50; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) { pid_ = -1; return; }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    // The whole group: a TUNER_WORKER_EXE wrapper that forks (a shell script, compute-sanitizer) left the real
    // worker running on the GPU. A process stuck in the driver may not go at once: wait a bounded time, not for
    // ever.
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    bool gone = false;
    for (int i = 0; i < 2500 && !gone; ++i) {
      const pid_t w = waitpid(pid_, nullptr, WNOHANG);
      gone = w == pid_ || (w < 0 && errno == ECHILD);
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (!gone || group_alive(pid_)) lingering_.push_back(pid_);  // start() waits for it
  }
  pid_ = -1;
}

MeasureResult WorkerClient::measure(const MeasureRequest& request, double timeout_s) {
  bool started = false;
  MeasureResult r = attempt(request, timeout_s, &started);
  if (started || r.infrastructure_failure || (r.status != "runtime_fault" && r.status != "run_timeout")) return r;
  // The worker died or stalled before the config ran: starting up, or preparing the workload. Once more with a
  // fresh worker; a second failure there is the worker's (a broken TUNER_WORKER_EXE, a GPU that cannot be
  // used), not this config's, and storing it as the config's fault would block the config for good.
  const std::string first = r.message;
  stop();
  started = false;
  r = attempt(request, timeout_s, &started);
  if (started || r.infrastructure_failure || (r.status != "runtime_fault" && r.status != "run_timeout")) return r;
  stop();
  return infrastructure_failure("the measurement worker '" + executable_ + "' failed twice before running a config (" +
                                first + "; then " + r.message + ")");
}

MeasureResult WorkerClient::attempt(const MeasureRequest& request, double timeout_s, bool* started) {
  std::string error;
  if (pid_ <= 0 && !start(&error)) return infrastructure_failure("cannot start the measurement worker: " + error);
  if (!write_all(to_worker_, to_json(request).dump() + "\n")) {
    // The worker died between requests: start a fresh one and send again once.
    stop();
    if (!start(&error)) return infrastructure_failure("cannot start the measurement worker: " + error);
    if (!write_all(to_worker_, to_json(request).dump() + "\n")) {
      stop();
      return infrastructure_failure("the measurement worker '" + executable_ + "' does not accept requests");
    }
  }
  // Until the worker says the config starts, it may be starting up (a fresh worker) or preparing the
  // workload's inputs and reference: the startup allowance covers that. From then on the config has
  // timeout_s, so no config stalls the session longer than its own timeout.
  double allowed_s = timeout_s + startup_allowance_s_;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(allowed_s);
  while (true) {
    auto nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      try {
        const auto j = nlohmann::json::parse(line);
        if (j.contains("event")) {
          *started = true;
          allowed_s = timeout_s;
          deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
          continue;
        }
        MeasureResult r = measure_result_from_json(j);
        if (r.context_lost) stop();
        return r;
      } catch (const std::exception& e) {
        stop();
        return error_result("unknown", std::string("unreadable reply from the worker: ") + e.what());
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      stop();
      char text[96];
      std::snprintf(text, sizeof text, "no result within %.3g s; worker killed", allowed_s);
      return error_result("run_timeout", text);
    }
    pollfd p{from_worker_, POLLIN, 0};
    int rc = poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) continue;
    char chunk[65536];
    ssize_t n = ::read(from_worker_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int status = 0;
      std::string how = "exited";
      if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) {
        pid_ = -1;
        if (WIFSIGNALED(status)) how = std::string("was killed by signal ") + strsignal(WTERMSIG(status));
        else if (WIFEXITED(status)) how = "exited with code " + std::to_string(WEXITSTATUS(status));
        if (WIFEXITED(status) && WEXITSTATUS(status) == kExecFailed) {
          stop();
          return infrastructure_failure("the measurement worker '" + executable_ + "' could not be started");
        }
      }
      stop();
      return error_result("runtime_fault", "the measurement worker " + how +
                                               (*started ? " while running this config" : " before running the config"));
    }
    pending_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace tuner
