// best_configs.h: what `tuner export --format best` writes for deployment: per workload, device and
// template the best config, and, when that config writes its output in another type than the
// workload's (an f16 GEMM whose fastest config writes f32: the OUT_F32 knob), also the best config
// that writes the workload's own type, so a program asking for C in f16 finds one. Each entry knows
// its output dtype, found by instantiating the config for the recorded device's limits.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "db/tuning_db.h"
#include "tools/cli_common.h"

namespace tuner::cli {

struct BestConfig {
  db::ResultRow row;         ///< With mean_time_ms and measurements of the config.
  std::string output_dtype;  ///< "f16", "f32", ...; the workload's dtype when it cannot be told.
  /// The best config writing the workload's own type, right after a best that writes another (same workload,
  /// device and template).
  bool own_dtype_alternative = false;
};

/// The dtype a recorded config writes its output in, for a built-in template (an f16 GEMM config with OUT_F32
/// writes f32); nullopt for a template this process does not have (a user kernel's: its spec is not here).
std::optional<std::string> output_dtype_of(const db::ResultRow& r);

/// The best configs of the records `f` selects, in the order of run_best_per_workload.
std::vector<BestConfig> best_configs(const db::TuningDb& db, const RecordFilter& f);

}  // namespace tuner::cli
