// tuned_records.h: what the runtime library knows of past tuning: the best config per workload,
// device and template, read from a tuning database (read-only) or from a "best configs" file
// (tuner-best/1, `tuner export --format best`). Records of templates this build does not have, or
// of older versions of them (whose configs may mean something else), are left out and counted.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tuner::runtime {

struct TunedRecord {
  std::string op, shape, dtype;   ///< The workload tuned ("gemm", "M=..,N=..,K=..", "f16").
  std::string template_name;
  std::string config_json;
  double time_ms = 0;             ///< Mean of its ok measurements.
  bool estimate = false;          ///< A sim device's estimate.
  std::string device_name;
  bool device_simulated = false;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
};

struct TunedRecords {
  std::vector<TunedRecord> records;
  int64_t stale = 0;  ///< Left out: unknown template or an older version of one.
  /// The same, per "op dtype" (what a lookup's not-found message counts).
  std::map<std::string, int64_t> stale_by_op;
};

/// Reads a database or a best-configs file (told apart by content: an SQLite file starts with
/// "SQLite format 3"). Throws std::runtime_error with one line naming the file and the reason.
TunedRecords read_tuned_records(const std::string& path);

/// The version hash of a built-in template as the tuner stores it.
std::string current_template_version(const std::string& template_name);

}  // namespace tuner::runtime
