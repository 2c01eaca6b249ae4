// The messages between tuner and its measurement worker process: one JSON
// document per line over a pipe, a MeasureRequest down and a MeasureResult up.
//
// A request carries everything the worker needs to run one config on its
// device without any state in the parent: the cubin (base64), launch
// geometry, buffers and scalars, the reference kernel, the protocol's limits,
// and for sim devices the profile and resources the analytic model reads. A
// fault-injection field lets tests drive the isolation path on any machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/kernel_profile.h"
#include "templates/kernel_template.h"

namespace tuner {

/// What the worker does on purpose for fault-injection tests.
enum class InjectedFault { kNone, kCrash, kHang };
std::string to_string(InjectedFault f);
InjectedFault injected_fault_from_string(const std::string& s);

/// Limits of the measurement protocol (DESIGN.md; the stopping rule is tuner/timing_stop.h).
struct MeasureSettings {
  double min_time_ms = 1;     ///< Time at least this much kernel time...
  int min_repeats = 10;       ///< ...and at least this many runs; then stop once
  double max_noise = 0.01;    ///< the median's 95% confidence interval is within +-this (0: off),
  double max_time_ms = 100;   ///< or this much kernel time is measured,
  int max_repeats = 2000;     ///< or this many runs,
  double max_wall_ms = 3000;  ///< or this much wall time has passed.
  int warmup_runs = 3;        ///< Untimed runs before timing.
  bool flush_l2 = true;       ///< Overwrite a buffer twice the L2 size before every timed run.
  uint64_t input_seed = 1;    ///< Seed of the random inputs (uniform in [-1, 1], never zeros).
};

struct MeasureRequest {
  std::string device;                    ///< "cuda:0" or "sim:h100-sxm".
  std::string cubin;                     ///< Raw cubin bytes (base64 on the wire).
  std::string kernel_name;
  templates::LaunchGeometry launch;
  std::vector<templates::BufferSpec> buffers;
  std::vector<templates::TensorMapSpec> tensor_maps;  ///< Encoded by the runner over the buffers.
  std::vector<int32_t> scalar_args;
  std::string reference_cubin;           ///< Raw cubin of the reference kernel.
  std::string reference_kernel_name;
  templates::LaunchGeometry reference_launch;
  double tolerance = 1e-4;
  double flops = 0;
  costmodel::KernelProfile profile;      ///< For sim devices.
  costmodel::KernelResources resources;  ///< From the cubin; for sim devices.
  MeasureSettings settings;
  InjectedFault fault = InjectedFault::kNone;
  /// "" to run the cubin; "cublas_sgemm", "cublas_gemm_ex" or "cudnn_conv" (vendor_baseline_for) to run the vendor
  /// baseline on the same buffers and protocol instead (buffers A, B, C and scalars M, N, K); or
  /// kDeviceCopyBaseline, the bandwidth yardstick of memory-bound ops (its output is not compared).
  std::string vendor;
};

/// MeasureRequest::vendor of a device-to-device copy of the first buffer into the first output buffer
/// (cuMemcpyDtoDAsync, the smaller one's bytes), timed by the same protocol.
inline constexpr const char* kDeviceCopyBaseline = "device_copy";

/// Seconds the worker spent per phase of one measurement (what `tune --json` sums into `phases`).
struct MeasurePhases {
  double module_load_s = 0;  ///< cuModuleLoadData of the config's cubin (and vendor planning).
  double inputs_s = 0;       ///< Allocating, filling and guarding the buffers (only when the workload's state is new).
  double reference_s = 0;    ///< Running the reference kernel and keeping its output (likewise).
  double check_s = 0;        ///< Poison, the checked run, the comparison with the reference and the guard check.
  double timed_s = 0;        ///< Warm-up and timed runs (the sim model's estimate on sim devices).
  double total() const { return module_load_s + inputs_s + reference_s + check_s + timed_s; }
  MeasurePhases& operator+=(const MeasurePhases& o) {
    module_load_s += o.module_load_s;
    inputs_s += o.inputs_s;
    reference_s += o.reference_s;
    check_s += o.check_s;
    timed_s += o.timed_s;
    return *this;
  }
};

struct MeasureResult {
  std::string status = "ok";   ///< An error kind of DESIGN.md ("ok", "launch_error", "runtime_fault", ...).
  std::string message;         ///< Why, when not ok.
  std::string detail;          ///< What a vendor baseline ran and how it was chosen ("cudnn graph eng62_k2=5 (...)"); else empty.
  double time_ms = 0;          ///< Median of the timed runs in ms.
  double spread_ms = 0;        ///< Interquartile range of the timed runs in ms.
  int repeats = 0;             ///< Timed runs.
  double max_error = 0;        ///< max |out - ref| / max |ref| of the checked run.
  bool estimate = false;       ///< True when the time is a sim device's estimate.
  bool context_lost = false;   ///< The worker's CUDA context is unusable: it exits after replying.
  MeasurePhases phases;        ///< Where the worker's time went.
  /// The measuring machinery failed (no worker, no device), not the config: the session stops and the
  /// config stays unmeasured. Never crosses the pipe.
  bool infrastructure_failure = false;
};

/// A failure of the measuring machinery rather than of the config (no worker, a lost rank): status
/// "unknown", the message, infrastructure_failure set. Not a trial outcome.
MeasureResult infrastructure_failure(const std::string& message);

nlohmann::json to_json(const MeasureRequest& r);
MeasureRequest measure_request_from_json(const nlohmann::json& j);
nlohmann::json to_json(const MeasureResult& r);
nlohmann::json to_json(const MeasurePhases& p);
MeasurePhases measure_phases_from_json(const nlohmann::json& j);
MeasureResult measure_result_from_json(const nlohmann::json& j);

std::string base64_encode(const std::string& bytes);
std::string base64_decode(const std::string& text);

}  // namespace tuner
