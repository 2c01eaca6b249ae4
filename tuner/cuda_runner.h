// The measurement protocol of DESIGN.md for one kernel config on a real GPU,
// run only inside the worker process, through the driver that cuda_driver.h
// loads at run time (the GPU list is in cuda_devices.h). A machine without a
// driver gets a one-line explanation from cuda_devices(), never a crash, so
// the same binary plans, queries and compiles everywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tuner/cuda_devices.h"
#include "tuner/measure_protocol.h"

namespace tuner {

/// Runs measurement requests on one GPU; lives in the worker process.
class CudaRunner {
 public:
  /// Creates a context on GPU `ordinal`; nullptr with *error set when that is impossible.
  static std::unique_ptr<CudaRunner> create(int ordinal, std::string* error);
  ~CudaRunner();
  CudaRunner(const CudaRunner&) = delete;
  CudaRunner& operator=(const CudaRunner&) = delete;

  /// Checks the config against the reference, then times it. Failures come back as results.
  /// on_ready is called once the workload's inputs and reference are in place and the config's
  /// module is loaded, just before the config first runs (the worker tells the client then).
  MeasureResult measure(const MeasureRequest& request, const std::function<void()>& on_ready = {});

 private:
  struct Impl;
  explicit CudaRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner
