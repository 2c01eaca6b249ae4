#include "tuner/tuning_session.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "costmodel/features.h"
#include "search/model_guided_strategy.h"
#include "search/strategy.h"
#include "templates/registry.h"
#include "tuner/compile_cache.h"
#include "tuner/compile_pool.h"
#include "tuner/lane_pool.h"
#include "tuner/nvrtc_builder.h"
#include "tuner/strategy_factory.h"
#include "tuner/worker.h"

namespace tuner {

namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_stop_signal{0};  // the signal that asked the loop to stop (0: none)

/// SIGINT/SIGTERM for the session's lifetime: blocked in every thread (the compile pool inherits the
/// mask, and NVRTC installs handlers of its own that exit the process) and taken by one thread that
/// waits for them and asks the loop to stop.
class StopSignals {
 public:
  StopSignals() {
    g_stop.store(false);
    g_stop_signal.store(0);
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
    waiter_ = std::thread([this] {
      int sig = 0;
      while (sigwait(&set_, &sig) == 0) {
        if (closing_.load()) return;
        g_stop_signal.store(sig);
        g_stop.store(true);
      }
    });
  }
  ~StopSignals() {
    closing_.store(true);
    pthread_kill(waiter_.native_handle(), SIGTERM);
    waiter_.join();
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  sigset_t set_{};
  sigset_t old_mask_{};
  std::atomic<bool> closing_{false};
  std::thread waiter_;
};

/// Gives the model-guided strategy this template's records of other shapes and GPUs, each with its
/// speed relative to the best of its own (workload, GPU). Returns how many it added.
int64_t add_transfer_records(search::ModelGuidedStrategy& strategy, const db::TuningDb& db,
                             const templates::KernelTemplate& tmpl, const templates::Workload& current,
                             const DeviceTarget& device) {
  db::QueryFilter f;
  f.op = current.op;
  f.dtype = templates::to_string(current.dtype);
  f.template_hashes = {template_hash(tmpl)};
  struct Group {
    templates::Workload workload;
    costmodel::GpuSpec gpu;
    search::ConfigSpace space;
    double best_speed = 0;
    std::vector<std::pair<search::Config, double>> rows;  // (config, speed)
  };
  std::map<std::string, Group> groups;  // ordered: the rows reach the model in a fixed order
  for (const auto& row : db.history(f)) {
    const bool own = row.workload.shape == current.shape_string() && row.device_name == device.identity.name &&
                     row.device_simulated == device.simulated;
    if (own) continue;
    const std::string key = row.workload.shape + "|" + row.device_name + "|" + std::to_string(row.device_simulated);
    auto it = groups.find(key);
    if (it == groups.end()) {
      std::optional<costmodel::GpuSpec> gpu =
          row.device_simulated ? costmodel::find_gpu_spec(row.device_name.substr(4))
                               : costmodel::find_gpu_spec(row.device_cc_major, row.device_cc_minor, row.device_sm_count);
      if (!gpu) continue;  // a GPU the spec table does not know: no device features for it
      Group g{templates::parse_workload(row.workload.op, row.workload.shape, row.workload.dtype), *gpu, {}, 0, {}};
      g.space = tmpl.space(g.workload, limits_of(*gpu));
      it = groups.emplace(key, std::move(g)).first;
    }
    Group& g = it->second;
    try {
      search::Config c = g.space.from_json(nlohmann::json::parse(row.trial.config_json));
      const double speed = row.trial.status == "ok" && row.trial.time_ms > 0 ? 1.0 / row.trial.time_ms : 0.0;
      g.best_speed = std::max(g.best_speed, speed);
      g.rows.emplace_back(std::move(c), speed);
    } catch (const std::exception&) {
      // Knob values the current template no longer has: nothing to learn from.
    }
  }
  int64_t added = 0;
  for (const auto& [key, g] : groups) {
    std::vector<int64_t> dims;
    for (const auto& [n, v] : g.workload.dims) dims.push_back(v);
    for (const auto& [c, speed] : g.rows) {
      auto features = costmodel::kernel_features(c, tmpl.profile(g.space, c, g.workload), dims,
                                                 templates::dtype_bytes(g.workload.dtype), g.gpu);
      strategy.add_transfer(std::move(features), g.best_speed > 0 ? static_cast<float>(speed / g.best_speed) : 0.0f);
      ++added;
    }
  }
  return added;
}

/// A trial answered from replay data: the recorded outcome of the config, or "unknown" when the
/// recording lacks it.
db::TrialRecord replayed(const ReplayData& data, const std::string& config_json, double flops) {
  db::TrialRecord rec;
  rec.config_json = config_json;
  const ReplayRecord* r = data.find(nlohmann::json::parse(config_json).dump());
  if (!r) {
    rec.status = "unknown";
    rec.error_message = "config not in the replay file '" + data.path + "'";
    return rec;
  }
  rec.status = r->status;
  rec.error_message = r->error_message;
  rec.registers = r->registers;
  rec.shared_bytes = r->shared_bytes;
  rec.spill_bytes = r->spill_bytes;
  rec.estimate = r->estimate;
  if (r->status == "ok") {
    rec.time_ms = r->time_ms;
    rec.time_spread_ms = r->time_spread_ms;
    rec.repeats = r->repeats;
    rec.gflops = flops / (r->time_ms * 1e-3) / 1e9;
  }
  return rec;
}

/// The kind under which the model-guided search saves its XGBoost ranking model.
constexpr const char* kCostModelKind = "xgb-rank";

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

nlohmann::ordered_json to_json(const TunePhases& p) {
  nlohmann::ordered_json j;
  j["setup_s"] = p.setup_s;
  j["search_s"] = p.search_s;
  j["compile_wait_s"] = p.compile_wait_s;
  j["module_load_s"] = p.worker.module_load_s;
  j["inputs_s"] = p.worker.inputs_s;
  j["reference_s"] = p.worker.reference_s;
  j["check_s"] = p.worker.check_s;
  j["timed_s"] = p.worker.timed_s;
  j["worker_other_s"] = p.worker_other_s;
  j["commit_s"] = p.commit_s;
  j["compile_cpu_s"] = p.compile_cpu_s;
  return j;
}

std::string template_hash(const templates::KernelTemplate& t) { return sha256_hex(t.source_text()).substr(0, 16); }

std::string fault_kernel_source(const std::string& kernel_name, InjectedFault fault) {
  if (fault == InjectedFault::kCrash)
    // A store far outside any allocation (an illegal address), then a trap in case the store did not
    // fault: on the H100 a store to the low address 0x10 completed silently and the kernel "ran". The
    // trap ends the launch with CUDA_ERROR_LAUNCH_FAILED, a sticky fault that costs the context.
    return "extern \"C\" __global__ void " + kernel_name +
           "() {\n"
           "  volatile int* p = reinterpret_cast<volatile int*>(0x7ffffff00000ull + 4ull * threadIdx.x);\n"
           "  *p = static_cast<int>(threadIdx.x);\n"
           "  __threadfence_system();\n"
           "  __trap();\n"
           "}\n";
  return "extern \"C\" __global__ void " + kernel_name +
         "() { volatile int spin = 1; while (spin) { } }\n";
}

MeasureRequest measure_request(const std::string& device, const templates::KernelInstance& k, const std::string& cubin,
                               const costmodel::KernelResources& resources, const std::string& reference_cubin) {
  MeasureRequest mr;
  mr.device = device;
  mr.cubin = cubin;
  mr.kernel_name = k.kernel_name;
  mr.launch = k.launch;
  mr.buffers = k.buffers;
  mr.tensor_maps = k.tensor_maps;
  mr.scalar_args = k.scalar_args;
  mr.reference_cubin = reference_cubin;
  mr.reference_kernel_name = k.reference_kernel_name;
  mr.reference_launch = k.reference_launch;
  mr.tolerance = k.tolerance;
  mr.flops = k.flops;
  mr.profile = k.profile;
  mr.resources = resources;
  return mr;
}

TuneSummary run_tuning(const TuneOptions& opt, const DeviceTarget& device, db::TuningDb& db) {
  const auto t0 = std::chrono::steady_clock::now();
  StopSignals signals;
  const auto& tmpl = templates::find_template(opt.workload.op, opt.workload.dtype, &device.limits, opt.template_name);
  const search::ConfigSpace space = tmpl.space(opt.workload, device.limits);

  TuneSummary sum;
  sum.template_name = tmpl.name();
  sum.template_hash = template_hash(tmpl);
  sum.space_size = static_cast<int64_t>(space.size());

  // The records of this workload on this device (matched as queries match it) and template version.
  db::QueryFilter best_filter;
  best_filter.op = opt.workload.op;
  best_filter.shape = opt.workload.shape_string();
  best_filter.dtype = templates::to_string(opt.workload.dtype);
  best_filter.device_name = device.identity.name;
  best_filter.simulated = device.simulated;
  best_filter.cc_major = device.identity.cc_major;
  best_filter.cc_minor = device.identity.cc_minor;
  best_filter.sm_count = device.identity.sm_count;
  best_filter.template_hashes = {sum.template_hash};

  // Everything that can fail for want of resources is built before the database is written.
  auto strategy = build_strategy(opt.strategy, space, opt.seed, tmpl, opt.workload, device.gpu);
  CompileCache cache(opt.cache_dir.empty() ? CompileCache::default_dir() : opt.cache_dir);
  NvrtcBuilder builder(&cache);
  CompilePool pool(builder, opt.compile_threads);
  // Before a config starts, a GPU worker may create its context and make the workload's inputs and
  // reference: 30 s, plus the naive reference's time at 0.2 TFLOP/s (double accumulation) for large work.
  constexpr double kGpuStartupAllowanceS = 30, kReferenceFlopsPerS = 2e11;
  const double reference_flops = space.size() > 0 ? tmpl.instantiate(space, space.at(0), opt.workload).flops : 0.0;
  // One worker per device measured on in parallel (cuda:all, --workers), each a process of its own.
  std::vector<std::string> lanes = opt.measure_devices.empty() ? std::vector<std::string>{device.spec}
                                                                : opt.measure_devices;
  std::vector<std::shared_ptr<Measurer>> workers;
  for (size_t i = 0; i < lanes.size(); ++i)
    workers.push_back(std::make_shared<WorkerClient>(
        opt.worker_executable.empty() ? default_worker_executable() : opt.worker_executable,
        device.simulated ? 0.0 : kGpuStartupAllowanceS + reference_flops / kReferenceFlopsPerS));
  for (const auto& remote : opt.remote_lanes) {  // they measure on their own device of the same identity
    lanes.push_back(device.spec);
    workers.push_back(remote);
  }
  for (size_t i = 0; i < workers.size(); ++i) sum.lanes.push_back({lanes[i], workers[i]->where(), 0, false});
  std::mutex state_mu;  // the loop's shared state while several workers measure
  // Several lanes measure on threads that live as long as the session (their workers die with them).
  std::unique_ptr<LanePool> lane_pool = workers.size() > 1 ? std::make_unique<LanePool>(workers.size()) : nullptr;

  // Resume: every config already in the database is known to the strategy (and trains a model); the
  // budget counts the same records.
  auto* guided = dynamic_cast<search::ModelGuidedStrategy*>(strategy.get());
  const auto history = db.history(best_filter);
  int64_t last_seen_trial = 0;  // the newest trial the strategy has heard of
  for (const auto& row : history) {
    last_seen_trial = std::max(last_seen_trial, row.trial.id);
    if (row.trial.purpose != "search") continue;  // a finalist's second measurement: the config is known
    try {
      strategy->add_result(space.from_json(nlohmann::json::parse(row.trial.config_json)),
                           {row.trial.status == "ok", row.trial.time_ms});
    } catch (const std::exception&) {
      // A record from a space with other knob values (older limits); it cannot be proposed anyway.
    }
  }
  if (guided && opt.transfer) sum.transferred = add_transfer_records(*guided, db, tmpl, opt.workload, device);
  // The feature columns of this template and op; a saved model is reused only when they match.
  nlohmann::json feature_columns = nlohmann::json::array();
  {
    std::vector<std::string> knob_names, dim_names;
    for (const auto& k : space.knobs()) knob_names.push_back(k.name);
    for (const auto& [n, v] : opt.workload.dims) dim_names.push_back(n);
    for (const auto& f : costmodel::feature_names(knob_names, dim_names)) feature_columns.push_back(f);
  }
  if (guided && opt.transfer) {
    // The model the last session saved scores the first proposals, unless this session's history and
    // transferred records are enough to fit a new one (the refit below replaces it then).
    auto saved = db.latest_cost_model(kCostModelKind, opt.workload.op, tmpl.name());
    if (saved && saved->feature_names == feature_columns.dump()) {
      std::string error;
      sum.started_from_model = guided->start_from_saved(saved->model, &error) ? saved->id : 0;
    }
  }
  if (guided) guided->update({}, {});  // fit on the history (and the transferred records)
  // The budget counts search trials; re-measurements of finalists come on top of it.
  sum.previously_measured = std::count_if(history.begin(), history.end(),
                                          [](const db::ResultRow& r) { return r.trial.purpose == "search"; });

  db.set_write_patience(opt.db_patience_s);
  const int64_t device_id = db.upsert_device(device.identity);
  const int64_t workload_id =
      db.upsert_workload({opt.workload.op, opt.workload.shape_string(), templates::to_string(opt.workload.dtype)});
  const int64_t template_id = db.upsert_template({sum.template_name, sum.template_hash});
  sum.session_id = db.begin_session(device_id, workload_id, template_id, opt.strategy, opt.seed, opt.trials,
                                    opt.command_line);

  // From here on the session row exists: whatever ends the run early marks it failed with the reason.
  try {
    TuneProgress progress;
    progress.budget = opt.trials;
    progress.done = sum.previously_measured;
    progress.estimate = device.simulated;
    if (auto b = db.best(best_filter)) {
      progress.best_ms = b->trial.time_ms;
      progress.best_gflops = b->trial.gflops;
    }

    // A batch on its way: proposed, instantiated, and queued on the compile pool.
    struct PendingBatch {
      std::vector<search::Config> configs;
      std::vector<templates::KernelInstance> instances;
      std::vector<std::future<CompileResult>> compiled;
      std::vector<InjectedFault> faults;
    };
    // Reference kernels, one per distinct reference source: configs of one workload may need different
    // references (gemm_tc_mma's OUT_F32 changes C's type, so its reference writes fp32 or the input type).
    // The first config's is queued first, so it compiles while the first batch does.
    std::map<std::string, std::shared_future<CompileResult>> reference_jobs;  // reference source -> its compile
    auto queue_reference = [&](const templates::KernelInstance& k) {
      auto it = reference_jobs.find(k.reference_source);
      if (it == reference_jobs.end())
        it = reference_jobs
                 .emplace(k.reference_source,
                          pool.submit({k.reference_source, k.reference_kernel_name, device.limits.arch, {}}).share())
                 .first;
      return it->second;
    };
    // What other processes sharing the database measured since we last looked: the strategy learns it and
    // never proposes it, and progress counts it.
    auto absorb_others = [&] {
      db::QueryFilter others = best_filter;
      others.after_trial_id = last_seen_trial;
      others.exclude_session_id = sum.session_id;
      for (const auto& row : db.history(others)) {
        last_seen_trial = std::max(last_seen_trial, row.trial.id);
        if (row.trial.purpose != "search") continue;
        const bool ok = row.trial.status == "ok";
        try {
          strategy->add_result(space.from_json(nlohmann::json::parse(row.trial.config_json)), {ok, row.trial.time_ms});
        } catch (const std::exception&) {
          continue;
        }
        ++progress.done;
        ++sum.measured_by_others;
        if (ok && (progress.best_ms == 0 || row.trial.time_ms < progress.best_ms)) {
          progress.best_ms = row.trial.time_ms;
          progress.best_gflops = row.trial.gflops;
        }
      }
    };
    // Proposes up to a batch within what is left of the database's budget, and claims the configs before
    // anything is compiled: a config another process measured or is measuring is left to it, and the
    // strategy proposes again in its place.
    auto launch_batch = [&]() {
      const auto tp = std::chrono::steady_clock::now();
      PendingBatch p;
      absorb_others();
      for (int round = 0; p.configs.empty(); ++round) {
        const int64_t left = db.budget_left(sum.session_id, opt.trials);
        if (left <= 0) break;
        std::vector<search::Config> proposed = strategy->propose(std::min<size_t>(opt.batch_size, static_cast<size_t>(left)));
        if (proposed.empty()) break;  // the space is exhausted
        std::vector<std::string> configs;
        for (const auto& c : proposed) configs.push_back(space.to_json_string(c));
        const db::ClaimResult claim = db.claim_configs(sum.session_id, configs, opt.trials);
        for (size_t i = 0; i < proposed.size(); ++i)
          if (claim.claimed[i]) p.configs.push_back(std::move(proposed[i]));
        if (p.configs.empty()) absorb_others();  // all taken: learn what the others found, then propose again
      }
      for (const auto& c : p.configs) {
        p.instances.push_back(tmpl.instantiate(space, c, opt.workload));
        if (!device.replay) queue_reference(p.instances.back());  // ahead of the configs that need it
        InjectedFault fault = InjectedFault::kNone;
        const uint64_t index = *space.index_of(c);
        for (const auto& [i, f] : opt.faults)
          if (i == index) fault = f;
        p.faults.push_back(fault);
        if (device.replay) {  // answered from the recording: nothing to compile
          std::promise<CompileResult> none;
          none.set_value({});
          p.compiled.push_back(none.get_future());
          continue;
        }
        CompileRequest req{p.instances.back().source, p.instances.back().kernel_name,
                           templates::compile_arch(p.instances.back(), device.limits), {}};
        if (fault != InjectedFault::kNone && !device.simulated) req.source = fault_kernel_source(req.kernel_name, fault);
        p.compiled.push_back(pool.submit(std::move(req)));
      }
      sum.phases.search_s += seconds_since(tp);
      return p;
    };

    if (opt.trials > sum.previously_measured && space.size() > 0 && !device.replay)
      queue_reference(tmpl.instantiate(space, space.at(0), opt.workload));
    std::string infrastructure_error;
    int64_t since_improvement = 0;  // trials of this session since the best time last improved

    // The reference cubin of an instance, compiled on first need; a reference that does not compile is a
    // failure of the template, not of any config, and ends the session.
    auto reference_for = [&](const templates::KernelInstance& k) -> std::string {
      if (device.replay) return {};
      const auto tr = std::chrono::steady_clock::now();
      std::shared_future<CompileResult> job;
      {
        std::lock_guard<std::mutex> lock(state_mu);
        job = queue_reference(k);
      }
      const CompileResult& ref = job.get();
      std::lock_guard<std::mutex> lock(state_mu);
      sum.phases.compile_wait_s += seconds_since(tr);
      if (ref.ok()) return ref.cubin;
      throw std::runtime_error(("reference kernel failed to compile: " + ref.log).substr(0, 2000));
    };

    // Checks and times one compiled config in the worker. nullopt: not measured (the machinery failed, which
    // sets infrastructure_error, or a stop request cut the measurement short).
    // Several workers may call it at once (one per lane); the loop's shared state is taken under state_mu.
    auto measure_one = [&](size_t lane, const search::Config& config, const templates::KernelInstance& inst,
                           CompileResult cr, InjectedFault fault) -> std::optional<db::TrialRecord> {
      const std::string reference_cubin = reference_for(inst);
      db::TrialRecord rec;
      rec.config_json = space.to_json_string(config);
      if (device.simulated && opt.sim_delay_ms > 0)
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(opt.sim_delay_ms));
      if (device.replay) return replayed(*device.replay, rec.config_json, inst.flops);
      rec.compile_ms = cr.compile_ms;
      {
        std::lock_guard<std::mutex> lock(state_mu);
        if (!cr.from_cache) sum.phases.compile_cpu_s += cr.compile_ms / 1000.0;
        if (cr.from_cache) ++sum.compiled_from_cache;
      }
      if (!cr.ok()) {
        rec.status = cr.status;
        rec.error_message = cr.log.substr(0, 2000);
        return rec;
      }
      rec.registers = cr.resources.registers;
      rec.shared_bytes = cr.resources.static_shared_bytes + inst.launch.dynamic_shared_bytes;
      rec.spill_bytes = cr.resources.local_bytes;
      MeasureRequest mr = measure_request(
          lanes[lane], inst, cr.cubin,
          {cr.resources.registers, cr.resources.static_shared_bytes, cr.resources.local_bytes}, reference_cubin);
      mr.settings = opt.settings;
      mr.settings.input_seed = opt.seed;
      mr.fault = fault;
      const double timeout =
          device.simulated ? opt.run_timeout_s : opt.run_timeout_s + opt.settings.max_wall_ms / 1000.0;
      const auto tm = std::chrono::steady_clock::now();
      MeasureResult m = workers[lane]->measure(mr, timeout);
      const double round_trip = seconds_since(tm);
      {
        std::lock_guard<std::mutex> lock(state_mu);
        sum.phases.worker += m.phases;
        sum.phases.worker_other_s += std::max(0.0, round_trip - m.phases.total());
        if (m.infrastructure_failure) {
          if (!workers[lane]->lost()) infrastructure_error = lanes[lane] + ": " + m.message;
          return std::nullopt;
        }
      }
      if (g_stop.load() && m.status != "ok") return std::nullopt;  // stopped mid-measurement: leave it unmeasured
      rec.status = m.status;
      rec.error_message = m.message;
      rec.estimate = m.estimate;
      if (m.status == "ok") {
        rec.time_ms = m.time_ms;
        rec.time_spread_ms = m.spread_ms;
        rec.repeats = m.repeats;
        rec.gflops = inst.flops / (m.time_ms * 1e-3) / 1e9;
      }
      return rec;
    };

    // Stores a batch in one transaction (the store retries while another process holds the lock). When it
    // cannot, the error says what was kept and what was not.
    auto commit = [&](std::vector<db::TrialRecord>& records, int64_t stored_before) {
      if (records.empty()) return;
      try {
        db.add_trials(sum.session_id, records);
      } catch (const db::DbError& e) {
        if (e.kind() != db::DbError::Kind::kBusy && e.kind() != db::DbError::Kind::kFull) throw;
        throw db::DbError(std::string(e.what()) + "; the " + std::to_string(records.size()) +
                              " trials measured since the last commit were not stored, the " +
                              std::to_string(stored_before) +
                              " stored before by this session are kept; run the same command again to continue",
                          e.kind());
      }
    };

    // The top configs by time measured once more, so measurement noise cannot crown the winner; both
    // measurements stay in the database and best() ranks a config by their mean. Configs already
    // re-measured (an earlier session) are not measured again.
    auto remeasure_finalists = [&]() -> int64_t {
      std::map<std::string, std::pair<double, int>> by_config;  // config_json -> (first time, measurements)
      db::QueryFilter ok = best_filter;
      ok.ok_only = true;
      for (const auto& row : db.history(ok)) {
        auto [it, fresh] = by_config.try_emplace(row.trial.config_json, row.trial.time_ms, 0);
        ++it->second.second;
      }
      std::vector<std::pair<double, std::string>> finalists;
      for (const auto& [config, tm] : by_config) finalists.emplace_back(tm.first, config);
      std::sort(finalists.begin(), finalists.end());
      if (finalists.size() > static_cast<size_t>(opt.remeasure_top)) finalists.resize(opt.remeasure_top);
      std::vector<db::TrialRecord> records;
      for (const auto& [time_ms, config_json] : finalists) {
        if (by_config[config_json].second > 1 || g_stop.load()) continue;
        const search::Config c = space.from_json(nlohmann::json::parse(config_json));
        const auto inst = tmpl.instantiate(space, c, opt.workload);
        auto job = pool.submit({inst.source, inst.kernel_name, templates::compile_arch(inst, device.limits), {}});
        const auto tc = std::chrono::steady_clock::now();
        CompileResult cr = job.get();
        sum.phases.compile_wait_s += seconds_since(tc);
        std::optional<db::TrialRecord> rec = measure_one(0, c, inst, std::move(cr), InjectedFault::kNone);
        if (!rec) break;
        rec->purpose = "remeasure";
        records.push_back(std::move(*rec));
      }
      const auto tw = std::chrono::steady_clock::now();
      commit(records, progress.measured_now);
      sum.phases.commit_s += seconds_since(tw);
      if (!infrastructure_error.empty()) throw std::runtime_error(infrastructure_error);
      return static_cast<int64_t>(records.size());
    };

    sum.phases.setup_s = seconds_since(t0);
    PendingBatch current = launch_batch();
    while (!current.configs.empty() && !g_stop.load()) {
      const auto& batch = current.configs;
      const auto& instances = current.instances;
      auto& compiled = current.compiled;
      const auto& faults = current.faults;
      // Compile one batch ahead while this one is measured, when proposals do not need its results.
      PendingBatch next;
      if (strategy->independent_of_results()) next = launch_batch();

      // Each lane (a worker on its device) takes the next config of the batch until the batch is done, a
      // stop is asked for, early stopping triggers or the machinery fails; results keep the batch's order.
      std::vector<std::optional<db::TrialRecord>> results(batch.size());
      std::vector<CompileResult> kept(batch.size());  // compile results of configs a lost lane gave back
      std::vector<size_t> given_back;                 // those configs, for the next lane that asks
      std::atomic<size_t> next_index{0};
      std::atomic<bool> halt{false};
      std::exception_ptr lane_error;
      auto lane_loop = [&](size_t lane) {
        try {
          while (!halt.load() && !g_stop.load() && !workers[lane]->lost()) {
            size_t i = 0;
            CompileResult cr;
            {
              std::unique_lock<std::mutex> lock(state_mu);
              if (!given_back.empty()) {
                i = given_back.back();
                given_back.pop_back();
                cr = std::move(kept[i]);
              } else {
                lock.unlock();
                i = next_index.fetch_add(1);
                if (i >= batch.size()) break;
                const auto tc = std::chrono::steady_clock::now();
                cr = compiled[i].get();
                lock.lock();
                sum.phases.compile_wait_s += seconds_since(tc);
              }
            }
            // A remote lane may be lost mid-measurement: keep what it would need to hand the config on.
            std::optional<CompileResult> backup;
            if (!opt.remote_lanes.empty()) backup = cr;
            std::optional<db::TrialRecord> measured = measure_one(lane, batch[i], instances[i], std::move(cr), faults[i]);
            std::lock_guard<std::mutex> lock(state_mu);
            if (workers[lane]->lost()) {  // a remote rank stopped answering: another lane measures this config
              sum.lanes[lane].lost = true;
              kept[i] = std::move(*backup);
              given_back.push_back(i);
              break;
            }
            if (!measured) {  // machinery failure, or stopped mid-measurement
              halt.store(true);
              break;
            }
            ++sum.lanes[lane].measured;
            search::TrialOutcome out{measured->status == "ok", measured->time_ms};
            if (out.ok && (progress.best_ms == 0 || measured->time_ms < progress.best_ms)) {
              progress.best_ms = measured->time_ms;
              progress.best_gflops = measured->gflops;
              since_improvement = 0;
            } else {
              ++since_improvement;
            }
            if (!out.ok) ++progress.errors_now;
            results[i] = std::move(measured);
            ++progress.measured_now;
            ++progress.done;
            progress.elapsed_s = seconds_since(t0);
            const double rate = progress.measured_now / std::max(progress.elapsed_s, 1e-9);
            progress.eta_s = static_cast<double>(std::max<int64_t>(0, opt.trials - progress.done)) / rate;
            if (opt.on_progress) opt.on_progress(progress);
            if (opt.early_stop > 0 && since_improvement >= opt.early_stop) {
              sum.early_stopped = true;
              halt.store(true);
            }
          }
        } catch (...) {
          std::lock_guard<std::mutex> lock(state_mu);
          if (!lane_error) lane_error = std::current_exception();
          halt.store(true);
        }
      };
      if (lane_pool) {
        lane_pool->run(lane_loop);
        // Configs a lost lane gave back after the others had finished: measured here on a lane still there.
        for (size_t lane = 0; lane < workers.size() && !given_back.empty(); ++lane)
          if (!workers[lane]->lost()) lane_loop(lane);
      } else {
        lane_loop(0);
      }
      // Configs a lane took but never measured (halted) stay unmeasured; their futures are dropped unread.
      std::vector<db::TrialRecord> records;
      std::vector<search::TrialOutcome> outcomes;
      std::vector<search::Config> done_configs;
      for (size_t i = 0; i < batch.size(); ++i) {
        if (!results[i]) continue;
        outcomes.push_back({results[i]->status == "ok", results[i]->time_ms});
        records.push_back(std::move(*results[i]));
        done_configs.push_back(batch[i]);
      }
      // A stop request leaves the rest unmeasured (and uncompiled) for the next session.
      if (g_stop.load()) pool.discard_queued();
      auto tw = std::chrono::steady_clock::now();
      commit(records, progress.measured_now - static_cast<int64_t>(records.size()));
      sum.phases.commit_s += seconds_since(tw);
      if (lane_error) std::rethrow_exception(lane_error);  // after what was measured is stored
      tw = std::chrono::steady_clock::now();
      strategy->update(done_configs, outcomes);
      sum.phases.search_s += seconds_since(tw);
      if (!infrastructure_error.empty()) {
        pool.discard_queued();
        throw std::runtime_error(infrastructure_error);
      }
      if (g_stop.load() || sum.early_stopped) {
        pool.discard_queued();
        break;
      }
      current = next.configs.empty() ? launch_batch() : std::move(next);
    }

    // A replay answers the same again: nothing to confirm.
    if (!g_stop.load() && opt.remeasure_top > 0 && !device.replay) sum.remeasured = remeasure_finalists();

    const auto tsave = std::chrono::steady_clock::now();
    if (guided) {
      const std::string bytes = guided->saved_model();
      if (!bytes.empty()) {
        db::CostModelRecord m{0, kCostModelKind, opt.workload.op, tmpl.name(), feature_columns.dump(),
                              static_cast<int64_t>(guided->fitted_rows()), sum.session_id, bytes, ""};
        sum.saved_model = db.add_cost_model(m);
      }
    }

    sum.interrupted = g_stop.load();
    sum.stop_signal = g_stop_signal.load();
    std::string reason;
    if (sum.interrupted)
      reason = "stopped by signal " + std::to_string(sum.stop_signal) +
               (sum.stop_signal == SIGINT ? " (SIGINT)" : sum.stop_signal == SIGTERM ? " (SIGTERM)" : "");
    else if (sum.early_stopped)
      reason = "early stop: " + std::to_string(opt.early_stop) + " trials without a better time";
    db.end_session(sum.session_id, sum.interrupted ? "interrupted" : "finished", reason);
    sum.phases.commit_s += seconds_since(tsave);
    sum.measured_now = progress.measured_now;
    sum.errors_now = progress.errors_now;
    for (const auto& w : workers) sum.worker_starts += w->starts();
    sum.best = db.best(best_filter);
    sum.wall_s = seconds_since(t0);
    return sum;
  } catch (const std::exception& e) {
    const auto* dbe = dynamic_cast<const db::DbError*>(&e);
    // A database still locked would keep the mark waiting as long again: try it briefly (a session left
    // running is marked killed by the next run that sees its process gone).
    if (dbe && dbe->kind() == db::DbError::Kind::kBusy) db.set_write_patience(2);
    try {
      db.end_session(sum.session_id, "failed", e.what());
    } catch (const std::exception&) {
      // The store itself is failing (full disk, lock): the next run marks the session killed.
    }
    throw;
  }
}

}  // namespace tuner
