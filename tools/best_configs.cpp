#include "tools/best_configs.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "templates/registry.h"
#include "tuner/device_limits.h"

namespace tuner::cli {

namespace {

/// The output buffer's dtype of a recorded config (instantiated for the recorded device's limits).
class OutputDtypes {
 public:
  std::string of(const db::ResultRow& r) {
    try {
      const auto w = templates::parse_workload(r.workload.op, r.workload.shape, r.workload.dtype);
      const templates::KernelTemplate* tmpl = nullptr;
      for (const auto* t : templates::all_templates())
        if (t->name() == r.template_name) tmpl = t;
      if (!tmpl) return r.workload.dtype;
      const std::string key = r.template_name + " " + w.to_string() + " " + r.device_name;
      auto it = spaces_.find(key);
      if (it == spaces_.end()) it = spaces_.emplace(key, tmpl->space(w, limits(r))).first;
      const auto config = it->second.from_json(nlohmann::json::parse(r.trial.config_json));
      for (const auto& b : tmpl->instantiate(it->second, config, w).buffers)
        if (b.output) return templates::to_string(b.dtype);
    } catch (const std::exception&) {  // a config this build cannot instantiate: assume the workload's
    }
    return r.workload.dtype;
  }

 private:
  static templates::DeviceLimits limits(const db::ResultRow& r) {
    return limits_of_recorded(r.device_name, r.device_cc_major, r.device_cc_minor, r.device_sm_count);
  }
  std::map<std::string, search::ConfigSpace> spaces_;
};

using WorkloadKey = std::tuple<std::string, std::string, std::string, std::string, std::string>;
WorkloadKey group_of(const db::ResultRow& r) {
  return {r.workload.op, r.workload.shape, r.workload.dtype, r.device_name, r.template_name};
}

/// The best config of a group among those writing `dtype`: the lowest mean over its ok trials.
std::optional<db::ResultRow> best_writing(const std::vector<const db::ResultRow*>& rows, const std::string& dtype,
                                          OutputDtypes& out) {
  std::map<std::string, std::pair<db::ResultRow, double>> by_config;  // config -> (latest row, sum)
  std::map<std::string, int> counts;
  for (const auto* r : rows) {
    if (out.of(*r) != dtype) continue;
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

std::string output_dtype_of(const db::ResultRow& r) { return OutputDtypes().of(r); }

std::vector<BestConfig> best_configs(const db::TuningDb& db, const RecordFilter& f) {
  OutputDtypes out;
  std::vector<BestConfig> result;
  std::vector<db::ResultRow> history;
  std::map<WorkloadKey, std::vector<const db::ResultRow*>> groups;
  for (const auto& best : run_best_per_workload(db, f)) {
    const std::string dtype = out.of(best);
    result.push_back({best, dtype});
    if (dtype == best.workload.dtype) continue;
    if (history.empty()) {  // only when some best config writes another type
      RecordFilter ok = f;
      ok.filter.ok_only = true;
      ok.filter.limit = 0;
      history = run_history(db, ok);
      for (const auto& r : history) groups[group_of(r)].push_back(&r);
    }
    if (auto own = best_writing(groups[group_of(best)], best.workload.dtype, out))
      result.push_back({*own, best.workload.dtype});
  }
  return result;
}

}  // namespace tuner::cli
