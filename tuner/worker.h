// The measurement worker: a child process (`tuner __worker`) that runs
// measurement requests one at a time, and the client the tuning loop uses to
// talk to it over pipes.
//
// Isolation is the point: a kernel that faults, hangs past its timeout or
// loses its CUDA context takes the worker down, not the session. The client
// turns a dead worker into a runtime_fault result, a silent one into a
// run_timeout result (after killing it), and starts a fresh worker for the
// next request.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "tuner/measure_protocol.h"

namespace tuner {

/// The worker's main loop: reads one JSON request per line from in_fd and writes one JSON result per
/// line to out_fd until end of input. Returns the process exit code.
int worker_main(int in_fd, int out_fd);

/// Measures on a sim device: the analytic model's estimate (and injected faults, after on_ready as on a
/// GPU). Exposed for tests.
MeasureResult sim_measure(const MeasureRequest& request, const std::function<void()>& on_ready = {});

/// The path of the tuner executable that serves as worker: $TUNER_WORKER_EXE, else the running
/// program if it is `tuner`, else `tuner` beside it.
std::string default_worker_executable();

/// Whatever measures a request for the tuning loop: a local worker process, or a remote MPI rank's.
/// One lane of the loop owns one measurer and calls it from one thread at a time.
class Measurer {
 public:
  virtual ~Measurer() = default;
  /// Measures one request, waiting up to timeout_s (plus its startup allowance); never throws.
  virtual MeasureResult measure(const MeasureRequest& request, double timeout_s) = 0;
  /// Worker processes started so far.
  virtual int starts() const { return 0; }
  /// True once the measurer is gone for good (a remote rank that stopped answering): the loop gives
  /// the request it could not measure to another lane and uses this one no more.
  virtual bool lost() const { return false; }
  /// Where it measures, for reports: "local", "rank 2 (host)".
  virtual std::string where() const { return "local"; }
};

class WorkerClient : public Measurer {
 public:
  /// startup_allowance_s: extra seconds a request may take before the worker reports that the config
  /// itself starts (a fresh worker's context; a new workload's inputs and reference on a GPU). From that
  /// report on, the request has its own timeout_s.
  explicit WorkerClient(std::string executable = default_worker_executable(), double startup_allowance_s = 0);
  ~WorkerClient();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  /// Sends one request and waits up to timeout_s for its result; never throws for worker failures. A worker
  /// that dies or stalls after reporting that the config started blames the config (runtime_fault,
  /// run_timeout); one that does so before, twice in a row with a fresh worker, is the machinery failing
  /// (MeasureResult::infrastructure_failure): no config is blamed for a worker that cannot run any.
  MeasureResult measure(const MeasureRequest& request, double timeout_s) override;
  /// Workers started so far (1 + restarts).
  int starts() const override { return starts_; }

 private:
  bool start(std::string* error);
  void stop();
  /// One try of measure(); *started: the worker reported that the config itself started.
  MeasureResult attempt(const MeasureRequest& request, double timeout_s, bool* started);

  std::string executable_;
  pid_t pid_ = -1;
  /// Killed workers not yet gone (stuck in the driver): a new worker waits for them, as a GPU in exclusive-process
  /// mode gives one process a context at a time.
  std::vector<pid_t> lingering_;
  int to_worker_ = -1;
  int from_worker_ = -1;
  std::string pending_;  ///< Bytes read past the last newline.
  double startup_allowance_s_ = 0;
  int starts_ = 0;
};

}  // namespace tuner
