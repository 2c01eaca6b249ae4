#include "tuner/session.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "templates/registry.h"
#include "tuner/replay_oracle.h"
#include "tuner/strategy_factory.h"

namespace tuner {

namespace {

// Before a config starts, a GPU worker may create its context and make the workload's inputs and
// reference: 30 s, plus the naive reference's time at 0.2 TFLOP/s (double accumulation) for large work.
constexpr double kGpuStartupAllowanceS = 30, kReferenceFlopsPerS = 2e11;

/// The resources a replay recording stores for configs (nullopt: not recorded, or failed on the GPU).
std::vector<std::optional<costmodel::KernelResources>> recorded_resources(const Session& s, const ReplayData& replay,
                                                                         const std::vector<search::Config>& configs) {
  std::vector<std::optional<costmodel::KernelResources>> out;
  for (const auto& c : configs) {
    const ReplayRecord* r = replay.find(nlohmann::json::parse(s.space.to_json_string(c)).dump());  // keys sorted
    if (!r || r->status != "ok") {
      out.emplace_back();
      continue;
    }
    out.push_back(record_resources(*r, s.tmpl.profile(s.space, c, s.opt.workload)));
  }
  return out;
}

/// The template version a session's records are stored under: today's, or the one a replayed recording measured
/// (stored under today's, an old kernel's times would pool with the live GPU's and steer the runtime).
std::string record_version(const templates::KernelTemplate& t, const DeviceTarget& device) {
  return device.replay && !device.replay->template_version.empty() ? device.replay->template_version
                                                                   : template_hash(t);
}

db::QueryFilter records_of(const TuneOptions& opt, const DeviceTarget& device, const std::string& hash) {
  db::QueryFilter f;
  f.op = opt.workload.op;
  f.shape = opt.workload.shape_string();
  f.dtype = templates::to_string(opt.workload.dtype);
  f.device_name = device.identity.name;
  f.simulated = device.simulated;
  f.cc_major = device.identity.cc_major;
  f.cc_minor = device.identity.cc_minor;
  f.sm_count = device.identity.sm_count;
  f.template_hashes = {hash};
  return f;
}

/// The prior of xgb's first batch as TuneOptions::prior asks, with compiled resources from the session's
/// pool (or, on a replay device, from the recording).
StrategyOptions strategy_options(Session& s) {
  StrategyOptions o;
  const std::string& prior = s.opt.prior;
  const bool compiled = prior == "compiled" || (prior == "auto" && !(s.device.simulated && !s.device.replay));
  o.analytic_prior = compiled || prior == "analytic";
  if (!compiled || s.opt.strategy != "xgb") return o;
  if (s.device.replay) {
    o.resources = [&s, replay = s.device.replay](const std::vector<search::Config>& configs) {
      return recorded_resources(s, *replay, configs);
    };
  } else {
    s.prior_resources = std::make_unique<CompiledResources>(s.tmpl, s.space, s.opt.workload, s.device.limits, s.pool);
    o.resources = [&s](const std::vector<search::Config>& configs) {
      auto r = s.prior_resources->resources(configs);
      s.sum.prior_compiles = s.prior_resources->stats().compiled + s.prior_resources->stats().from_cache +
                             s.prior_resources->stats().failed;
      s.sum.prior_compile_s = s.prior_resources->stats().wall_s;
      return r;
    };
  }
  return o;
}

}  // namespace

bool Session::in_space(const std::string& config_json) const {
  try {
    const search::Config c = space.from_json(nlohmann::json::parse(config_json));
    return space.index_of(c).has_value();
  } catch (const std::exception&) {
    return false;
  }
}

Session::Session(const TuneOptions& options, const DeviceTarget& target, db::TuningDb& database)
    : opt(options),
      device(target),
      db(database),
      tmpl(templates::find_template(opt.workload.op, opt.workload.dtype, &device.limits, opt.template_name)),
      space(search::with_knobs_fixed(device.replay ? recorded_space(tmpl.space(opt.workload, device.limits), *device.replay)
                                                    : tmpl.space(opt.workload, device.limits),
                                     opt.fixed_knobs)),
      records(records_of(opt, device, record_version(tmpl, device))),
      cache(opt.cache_dir.empty() ? CompileCache::default_dir() : opt.cache_dir),
      builder(&cache),
      pool(builder, opt.compile_threads) {
  strategy = build_strategy(opt.strategy, space, opt.seed, tmpl, opt.workload, device.gpu, strategy_options(*this));
  sum.template_name = tmpl.name();
  sum.template_hash = record_version(tmpl, device);
  if (sum.template_hash != template_hash(tmpl)) sum.current_template_hash = template_hash(tmpl);
  sum.space_size = static_cast<int64_t>(space.size());
  const double reference_flops = space.size() > 0 ? tmpl.instantiate(space, space.at(0), opt.workload).flops : 0.0;
  // One worker per device measured on in parallel (cuda:all, --workers), each a process of its own.
  lanes = opt.measure_devices.empty() ? std::vector<std::string>{device.spec} : opt.measure_devices;
  for (size_t i = 0; i < lanes.size(); ++i)
    workers.push_back(std::make_shared<WorkerClient>(
        opt.worker_executable.empty() ? default_worker_executable() : opt.worker_executable,
        device.simulated ? 0.0 : kGpuStartupAllowanceS + reference_flops / kReferenceFlopsPerS));
  for (const auto& remote : opt.remote_lanes) {  // they measure on their own device of the same identity
    lanes.push_back(device.spec);
    workers.push_back(remote);
  }
  for (size_t i = 0; i < workers.size(); ++i) sum.lanes.push_back({lanes[i], workers[i]->where(), 0, false});
  // Several lanes measure on threads that live as long as the session (their workers die with them).
  if (workers.size() > 1) lane_pool = std::make_unique<LanePool>(workers.size());
}

bool Session::note_trial(const db::TrialRecord& rec) {
  const bool ok = rec.status == "ok";
  if (ok && (progress.best_ms == 0 || rec.time_ms < progress.best_ms)) {
    progress.best_ms = rec.time_ms;
    progress.best_gflops = rec.gflops;
    since_improvement = 0;
  } else {
    ++since_improvement;
  }
  if (!ok) ++progress.errors_now;
  ++progress.measured_now;
  ++progress.done;
  progress.elapsed_s = seconds_since(t0);
  const double rate = progress.measured_now / std::max(progress.elapsed_s, 1e-9);
  progress.eta_s = static_cast<double>(std::max<int64_t>(0, opt.trials - progress.done)) / rate;
  if (opt.on_progress) opt.on_progress(progress);
  if (opt.early_stop > 0 && since_improvement >= opt.early_stop) {
    sum.early_stopped = true;
    sum.stop_reason = "early stop: " + std::to_string(opt.early_stop) + " trials without a better time";
    return true;
  }
  return false;
}

void open_session(Session& s) {
  s.db.set_write_patience(s.opt.db_patience_s);
  const int64_t device_id = s.db.upsert_device(s.device.identity);
  const int64_t workload_id = s.db.upsert_workload(
      {s.opt.workload.op, s.opt.workload.shape_string(), templates::to_string(s.opt.workload.dtype)});
  const int64_t template_id = s.db.upsert_template({s.sum.template_name, s.sum.template_hash});
  s.sum.session_id = s.db.begin_session(device_id, workload_id, template_id, s.opt.strategy, s.opt.seed,
                                        s.opt.trials, s.opt.command_line);
}

void start_progress(Session& s) {
  s.progress.budget = s.opt.trials;
  s.progress.done = s.sum.previously_measured;
  s.progress.estimate = s.device.estimates();
  if (templates::is_row_op(s.opt.workload.op)) s.progress.bytes = templates::compulsory_bytes(s.opt.workload);
  if (auto b = s.db.best(s.records)) {
    s.progress.best_ms = b->trial.time_ms;
    s.progress.best_gflops = b->trial.gflops;
  }
}

}  // namespace tuner
