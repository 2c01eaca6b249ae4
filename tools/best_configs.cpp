#include "tools/best_configs.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "templates/registry.h"

namespace tuner::cli {

namespace {

/// What a recorded config writes, the workload's dtype where the template is not this process's.
std::string writes(const db::ResultRow& r) { return output_dtype_of(r).value_or(r.workload.dtype); }

using WorkloadKey = std::tuple<std::string, std::string, std::string, std::string, std::string>;
WorkloadKey group_of(const db::ResultRow& r) {
  return {r.workload.op, r.workload.shape, r.workload.dtype, r.device_name, r.template_name};
}

/// The best config of a group among those writing `dtype`: the lowest mean over its ok trials.
std::optional<db::ResultRow> best_writing(const std::vector<const db::ResultRow*>& rows, const std::string& dtype) {
  std::map<std::string, std::pair<db::ResultRow, double>> by_config;  // config -> (latest row, sum)
  std::map<std::string, int> counts;
  for (const auto* r : rows) {
    if (writes(*r) != dtype) continue;
    auto [it, fresh] = by_config.try_emplace(r->trial.config_json, *r, 0.0);
    it->second.second += r->trial.time_ms;
    ++counts[r->trial.config_json];
  }
  std::optional<db::ResultRow> best;
  for (auto& [config, value] : by_config) {
    value.first.measurements = counts[config];
    value.first.mean_time_ms = value.second / counts[config];
    if (!best || value.first.mean_time_ms < best->mean_time_ms) best = value.first;
  }
  return best;
}

}  // namespace

// From the config's knobs (KernelTemplate::output_dtype): building each workload's space to instantiate the config
// took 5-43 ms a row, 20 s for `query --best` of 800 rows.
std::optional<std::string> output_dtype_of(const db::ResultRow& r) {
  try {
    const auto w = templates::parse_workload(r.workload.op, r.workload.shape, r.workload.dtype);
    for (const auto* t : templates::all_templates())
      if (t->name() == r.template_name) return templates::to_string(t->output_dtype(w, r.trial.config_json));
  } catch (const std::exception&) {  // a workload this build cannot parse
  }
  return std::nullopt;
}

std::vector<BestConfig> best_configs(const db::TuningDb& db, const RecordFilter& f) {
  std::vector<BestConfig> result;
  std::vector<db::ResultRow> history;
  std::map<WorkloadKey, std::vector<const db::ResultRow*>> groups;
  for (const auto& best : run_best_per_workload(db, f)) {
    const std::string dtype = writes(best);
    result.push_back({best, dtype});
    if (dtype == best.workload.dtype) continue;
    if (history.empty()) {  // only when some best config writes another type
      RecordFilter ok = f;
      ok.filter.ok_only = true;
      ok.filter.limit = 0;
      history = run_history(db, ok);
      for (const auto& r : history) groups[group_of(r)].push_back(&r);
    }
    if (auto own = best_writing(groups[group_of(best)], best.workload.dtype))
      result.push_back({*own, best.workload.dtype, true});
  }
  return result;
}

}  // namespace tuner::cli
