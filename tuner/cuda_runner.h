// The CUDA driver side of tuner: libcuda.so.1 loaded at run time with dlopen,
// the list of real GPUs with their identity, and the measurement protocol of
// DESIGN.md for one kernel config (run only inside the worker process).
//
// This is the only file pair that includes cuda.h. A machine without a
// driver gets a one-line explanation from cuda_devices(), never a crash, so
// the same binary plans, queries and compiles everywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tuner/measure_protocol.h"

namespace tuner {

struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t memory_bytes = 0;
  int l2_bytes = 0;
  int max_threads_per_block = 0;
  int max_shared_per_block_optin = 0;  ///< Bytes of dynamic shared memory a block may opt in to.
  int registers_per_block = 0;         ///< 32-bit registers a block may hold.
  int clock_khz = 0;
  std::string driver_version;          ///< "13.0"
};

/// Real GPUs. When the driver is absent or fails to initialise, returns empty and sets *error
/// to one line saying why.
std::vector<CudaDeviceInfo> cuda_devices(std::string* error);

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
