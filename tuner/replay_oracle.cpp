#include "tuner/replay_oracle.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "costmodel/rank_correlation.h"
#include "templates/registry.h"
#include "tuner/device_limits.h"
#include "tuner/device_registry.h"
#include "tuner/tuning_session.h"

namespace tuner {

std::string RecordedSpace::label() const {
  return workload.to_string() + " on " + gpu.key + " (" + (tmpl ? tmpl->name() : std::string("?")) + ")";
}

std::vector<double> RecordedSpace::time_by_index() const {
  std::vector<double> t(space.size(), 0.0);
  for (const auto& c : configs) t[c.index] = c.time_ms;
  return t;
}

costmodel::KernelResources record_resources(const ReplayRecord& r, const costmodel::KernelProfile& p) {
  // The recording stores static + dynamic shared memory and the local (spill + stack) bytes.
  return {r.registers, std::max(0, r.shared_bytes - p.dynamic_shared_bytes), r.spill_bytes};
}

search::ConfigSpace recorded_space(const search::ConfigSpace& space, const ReplayData& data) {
  auto keys = std::make_shared<std::set<std::string>>();
  for (const auto& [json, rec] : data.records) keys->insert(json);
  std::vector<search::Constraint> constraints = space.constraints();
  // Keyed as the records are: the config's JSON (knobs at their `absent` value left out), keys sorted.
  constraints.push_back({"recorded in the replay file '" + data.path + "'", [keys](const search::ConfigView& v) {
                           const nlohmann::json j = v.space().to_json(v.config());
                           return keys->count(j.dump()) > 0;
                         }});
  return search::ConfigSpace(space.knobs(), std::move(constraints));
}

RecordedSpace load_recorded_space(const std::string& path) {
  RecordedSpace s;
  s.data = read_replay(path);
  const auto bad = [&](const std::string& what) {
    return std::invalid_argument("replay file '" + path + "': " + what);
  };
  auto gpu = spec_of_recording(s.data.device, s.data.gpu_key);
  if (!gpu) throw bad("GPU '" + s.data.gpu_key + "' is not in the spec table (" + costmodel::gpu_spec_keys() + ")");
  s.gpu = *gpu;
  s.workload = templates::parse_workload(s.data.op, s.data.shape, s.data.dtype);
  const templates::DeviceLimits limits = limits_of(s.gpu);
  s.tmpl = &templates::find_template(s.data.op, s.workload.dtype, &limits, s.data.template_name);
  s.version_matches = s.data.template_version == template_hash(*s.tmpl);
  const search::ConfigSpace full = s.tmpl->space(s.workload, limits);
  canonicalize_records(s.data, full);
  s.space = recorded_space(full, s.data);
  for (const auto& [json, rec] : s.data.records) {
    if (rec.status != "ok") {
      ++s.not_ok;
      continue;
    }
    search::Config c;
    try {
      c = s.space.from_json(nlohmann::json::parse(json));
    } catch (const std::invalid_argument&) {
      ++s.outside_space;
      continue;
    }
    const auto index = s.space.index_of(c);
    if (!index) {
      ++s.outside_space;
      continue;
    }
    RecordedConfig rc;
    rc.config = c;
    rc.index = *index;
    rc.time_ms = rec.time_ms;
    rc.profile = s.tmpl->profile(s.space, c, s.workload);
    rc.resources = record_resources(rec, rc.profile);
    s.configs.push_back(std::move(rc));
  }
  if (s.configs.empty()) throw bad("no ok record is a config of " + s.tmpl->name() + "'s space");
  std::sort(s.configs.begin(), s.configs.end(),
            [](const RecordedConfig& a, const RecordedConfig& b) { return a.index < b.index; });
  s.best_ms = std::numeric_limits<double>::infinity();
  for (const auto& c : s.configs) s.best_ms = std::min(s.best_ms, c.time_ms);
  return s;
}

std::vector<std::string> replay_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".json") out.push_back(entry.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<double> sim_estimates(const RecordedSpace& s) {
  std::vector<double> est;
  est.reserve(s.configs.size());
  for (const auto& c : s.configs) {
    const auto e = costmodel::estimate(c.profile, c.resources, s.gpu);
    est.push_back(e.launchable ? e.time_ms : std::numeric_limits<double>::infinity());
  }
  return est;
}

RankAgreement rank_agreement(const RecordedSpace& s, const std::vector<double>& estimates,
                             const std::vector<size_t>& subset) {
  std::vector<size_t> idx = subset;
  if (idx.empty())
    for (size_t i = 0; i < s.configs.size(); ++i) idx.push_back(i);
  std::vector<double> est, real;
  for (size_t i : idx) {
    est.push_back(estimates.at(i));
    real.push_back(s.configs.at(i).time_ms);
  }
  RankAgreement a;
  a.configs = idx.size();
  a.spearman = costmodel::spearman(est, real);
  a.top10_overlap = costmodel::top_k_overlap(est, real, 10);
  const size_t pick = static_cast<size_t>(std::min_element(est.begin(), est.end()) - est.begin());
  a.pick_over_best = real[pick] / *std::min_element(real.begin(), real.end());
  return a;
}

}  // namespace tuner
