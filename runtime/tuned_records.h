// tuned_records.h: what the runtime library knows of past tuning: the measured configs per workload,
// device and template, ranked as `query --best` ranks them, read from a tuning database (read-only) or from a "best configs" file
// (tuner-best/1, `tuner export --format best`). Records of templates the Runtime's catalog does not have, or
// of other versions of them (whose configs may mean something else), are left out and counted.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/catalog.h"

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
  /// op, shape and dtype parsed once when read (shared by the records of one workload); null when they do not parse.
  /// A lookup compares the asked shape with every record's, so it must not parse 100k shape strings each time.
  std::shared_ptr<const templates::Workload> workload;
};

struct TunedRecords {
  std::vector<TunedRecord> records;
  int64_t stale = 0;  ///< Left out: unknown template or another version of one.
  /// Per "op dtype" and device name (what a lookup's not-found message counts, of its own device's): records of
  /// another version of a template the catalog has, and records of templates it does not have (a user kernel the
  /// options do not name).
  std::map<std::string, std::map<std::string, int64_t>> stale_by_op, unknown_by_op;
};

/// Reads a database or a best-configs file (told apart by content: an SQLite file starts with
/// "SQLite format 3"), keeping the records of the catalog's templates at their current versions. Throws
/// std::runtime_error with one line naming the file and the reason.
TunedRecords read_tuned_records(const std::string& path, const Catalog& catalog);

}  // namespace tuner::runtime
