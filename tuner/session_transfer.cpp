#include "tuner/session_transfer.h"

#include <algorithm>
#include <map>
#include <optional>

#include "costmodel/features.h"
#include "tuner/device_limits.h"

namespace tuner {

namespace {

/// The kind under which the model-guided search saves its XGBoost ranking model.
constexpr const char* kCostModelKind = "xgb-rank";

/// One other workload on one GPU: its space and its records as (config, speed).
struct TransferGroup {
  templates::Workload workload;
  costmodel::GpuSpec gpu;
  search::ConfigSpace space;
  double best_speed = 0;
  std::vector<std::pair<search::Config, double>> rows;
};

/// This template's records of other shapes and GPUs, grouped by (shape, GPU) in a fixed order.
std::map<std::string, TransferGroup> transfer_groups(const Session& s) {
  db::QueryFilter f;
  f.op = s.opt.workload.op;
  f.dtype = templates::to_string(s.opt.workload.dtype);
  f.template_hashes = {template_hash(s.tmpl)};
  std::map<std::string, TransferGroup> groups;
  for (const auto& row : s.db.history(f)) {
    const bool own = row.workload.shape == s.opt.workload.shape_string() &&
                     row.device_name == s.device.identity.name && row.device_simulated == s.device.simulated;
    if (own) continue;
    const std::string key = row.workload.shape + "|" + row.device_name + "|" + std::to_string(row.device_simulated);
    auto it = groups.find(key);
    if (it == groups.end()) {
      // A sim device by its spec name; a GPU, or a replayed recording of one ("replay:NVIDIA H100 80GB HBM3"),
      // by its compute capability and SM count, and the model its name gives (an H200 is not an H100).
      const std::optional<costmodel::GpuSpec> gpu =
          spec_of_recorded(row.device_name, row.device_cc_major, row.device_cc_minor, row.device_sm_count);
      if (!gpu) continue;  // a GPU the spec table does not know: no device features for it
      TransferGroup g{templates::parse_workload(row.workload.op, row.workload.shape, row.workload.dtype), *gpu, {}, 0, {}};
      g.space = s.tmpl.space(g.workload, limits_of(*gpu));
      it = groups.emplace(key, std::move(g)).first;
    }
    TransferGroup& g = it->second;
    try {
      search::Config c = g.space.from_json(nlohmann::json::parse(row.trial.config_json));
      const double speed = row.trial.status == "ok" && row.trial.time_ms > 0 ? 1.0 / row.trial.time_ms : 0.0;
      g.best_speed = std::max(g.best_speed, speed);
      g.rows.emplace_back(std::move(c), speed);
    } catch (const std::exception&) {
      // Knob values the current template no longer has: nothing to learn from.
    }
  }
  return groups;
}

/// Gives the learner every transferred record's features and relative speed; returns how many.
int64_t add_transfer_records(const Session& s, search::TransferLearner& learner) {
  int64_t added = 0;
  for (const auto& [key, g] : transfer_groups(s)) {
    std::vector<int64_t> dims;
    for (const auto& [n, v] : g.workload.dims) dims.push_back(v);
    for (const auto& [c, speed] : g.rows) {
      auto features = costmodel::kernel_features(c, s.tmpl.profile(g.space, c, g.workload), dims,
                                                 templates::dtype_bytes(g.workload.dtype), g.gpu);
      learner.add_transfer(std::move(features), g.best_speed > 0 ? static_cast<float>(speed / g.best_speed) : 0.0f);
      ++added;
    }
  }
  return added;
}

/// The feature columns of this template and op; a saved model is reused only when they match.
std::string feature_columns(const Session& s) {
  std::vector<std::string> knob_names, dim_names;
  for (const auto& k : s.space.knobs()) knob_names.push_back(k.name);
  for (const auto& [n, v] : s.opt.workload.dims) dim_names.push_back(n);
  nlohmann::json columns = nlohmann::json::array();
  for (const auto& f : costmodel::feature_names(knob_names, dim_names)) columns.push_back(f);
  return columns.dump();
}

}  // namespace

void transfer(Session& s) {
  search::TransferLearner* learner = s.strategy->transfer_learner();
  if (!learner || !s.opt.transfer) return;
  s.sum.transferred = add_transfer_records(s, *learner);
  // The model the last session saved scores the first proposals, unless this session's history and
  // transferred records are enough to fit a new one (the refit below replaces it then).
  auto saved = s.db.latest_cost_model(kCostModelKind, s.opt.workload.op, s.tmpl.name());
  if (saved && saved->feature_names == feature_columns(s)) {
    std::string error;
    s.sum.started_from_model = learner->start_from_saved(saved->model, &error) ? saved->id : 0;
  }
  if (s.sum.transferred > 0 || s.sum.started_from_model != 0) s.strategy->observe({}, {});
}

void save_model(Session& s) {
  search::TransferLearner* learner = s.strategy->transfer_learner();
  if (!learner) return;
  const std::string bytes = learner->saved_model();
  if (bytes.empty()) return;
  db::CostModelRecord m{0, kCostModelKind, s.opt.workload.op, s.tmpl.name(), feature_columns(s),
                        static_cast<int64_t>(learner->fitted_rows()), s.sum.session_id, bytes, ""};
  s.sum.saved_model = s.db.add_cost_model(m);
}

}  // namespace tuner
