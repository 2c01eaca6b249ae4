// kernel_choice.h: the runtime library's lookup rule: from tuned records, the config to run for a
// workload on a device: the exact shape's best record, else the nearest tuned shape whose config is
// valid for the asked one (the rule is spelled out in include/tuner/runtime.h). Pure: no driver, no
// NVRTC, so it is tested on any machine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/catalog.h"
#include "runtime/tuned_records.h"
#include "templates/kernel_template.h"

namespace tuner::runtime {

/// Which records a device's lookups use: its own name, the records replayed from its recordings ("replay:" +
/// the name, as `tuner query --device NAME` includes them), and with match_identity real GPUs of its kind.
struct DeviceMatch {
  std::string name;
  bool match_identity = false;  ///< Also accept real-GPU records of the same cc and SM count.
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  bool accepts(const TunedRecord& r) const;
  /// Whether records stored under `device_name` are this device's by name: its own, or replayed from its recordings.
  bool names(const std::string& device_name) const;
};

struct Choice {
  const TunedRecord* record = nullptr;
  const templates::KernelTemplate* tmpl = nullptr;
  search::Config config;
  templates::KernelInstance instance;  ///< For the asked workload.
  bool exact = false;
};

/// Distance between two shapes of one op: sum of |ln(a/b)| over dimensions; nullopt when they cannot
/// share a config (a dimension missing, or conv2d's R, S, stride, pad or dilation differ).
std::optional<double> shape_distance(const templates::Workload& asked, const templates::Workload& tuned);

/// The config for `w` (output buffer of `output_dtype`, or when nullopt of w.dtype for a built-in op and of any
/// type for a user kernel's) among `records` of the device, run by the catalog's templates. nullopt with *why set
/// to one line when nothing fits.
std::optional<Choice> choose(const std::vector<TunedRecord>& records, const Catalog& catalog,
                             const DeviceMatch& device, const templates::DeviceLimits& limits,
                             const templates::Workload& w,
                             std::optional<templates::DType> output_dtype, bool nearest, std::string* why);

}  // namespace tuner::runtime
