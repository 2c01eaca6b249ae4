#include "tuner/session_measure.h"

#include <atomic>
#include <thread>

#include "tuner/stop_signals.h"

namespace tuner {

namespace {

/// A trial answered from replay data: the recorded outcome of the config, or "unknown" when the
/// recording lacks it.
db::TrialRecord replayed(const ReplayData& data, const std::string& config_json, double flops, double bytes) {
  db::TrialRecord rec;
  rec.config_json = config_json;
  rec.bytes = bytes;
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

/// The worker's request for a compiled config on the lane's device, with the session's settings.
MeasureRequest request_for(const Session& s, size_t lane, const templates::KernelInstance& inst, const CompileResult& cr,
                           const std::string& reference_cubin, InjectedFault fault) {
  MeasureRequest mr = measure_request(
      s.lanes[lane], inst, cr.cubin,
      {cr.resources.registers, cr.resources.static_shared_bytes, cr.resources.local_bytes}, reference_cubin);
  mr.settings = s.opt.settings;
  mr.settings.input_seed = s.opt.seed;
  mr.fault = fault;
  return mr;
}

/// The lanes working through one batch; run() returns when every config was taken or the batch halted.
class BatchMeasurement {
 public:
  BatchMeasurement(Session& s, PendingBatch& batch) : s_(s), batch_(batch), kept_(batch.configs.size()) {
    out_.results.resize(batch.configs.size());
  }

  MeasuredBatch run() {
    auto loop = [this](size_t lane) { lane_loop(lane); };
    if (s_.lane_pool) {
      s_.lane_pool->run(loop);
      // Configs a lost lane gave back after the others had finished: measured here on a lane still there.
      for (size_t lane = 0; lane < s_.workers.size() && !given_back_.empty(); ++lane)
        if (!s_.workers[lane]->lost()) lane_loop(lane);
    } else {
      lane_loop(0);
    }
    // Configs a lane took but never measured (halted) stay unmeasured; their futures are dropped unread.
    return std::move(out_);
  }

 private:
  /// The next config for a lane: one a lost lane gave back, else the next of the batch. False when none.
  bool take(size_t& i, CompileResult& cr) {
    std::unique_lock<std::mutex> lock(s_.mu);
    if (!given_back_.empty()) {
      i = given_back_.back();
      given_back_.pop_back();
      cr = std::move(kept_[i]);
      return true;
    }
    lock.unlock();
    i = next_index_.fetch_add(1);
    if (i >= batch_.configs.size()) return false;
    const auto tc = std::chrono::steady_clock::now();
    cr = batch_.compiled[i].get();
    lock.lock();
    s_.sum.phases.compile_wait_s += seconds_since(tc);
    return true;
  }

  void lane_loop(size_t lane) {
    try {
      while (!halt_.load() && !stop_requested() && !s_.workers[lane]->lost()) {
        size_t i = 0;
        CompileResult cr;
        if (!take(i, cr)) break;
        // A remote lane may be lost mid-measurement: keep what it would need to hand the config on.
        std::optional<CompileResult> backup;
        if (!s_.opt.remote_lanes.empty()) backup = cr;
        std::optional<db::TrialRecord> measured =
            measure_one(s_, lane, batch_.configs[i], batch_.instances[i], std::move(cr), batch_.faults[i]);
        std::lock_guard<std::mutex> lock(s_.mu);
        if (s_.workers[lane]->lost()) {  // a remote rank stopped answering: another lane measures this config
          s_.sum.lanes[lane].lost = true;
          kept_[i] = std::move(*backup);
          given_back_.push_back(i);
          break;
        }
        if (!measured) {  // machinery failure, or stopped mid-measurement
          halt_.store(true);
          break;
        }
        ++s_.sum.lanes[lane].measured;
        if (s_.note_trial(*measured)) halt_.store(true);
        out_.results[i] = std::move(measured);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(s_.mu);
      if (!out_.lane_error) out_.lane_error = std::current_exception();
      halt_.store(true);
    }
  }

  Session& s_;
  PendingBatch& batch_;
  MeasuredBatch out_;
  std::vector<CompileResult> kept_;  ///< Compile results of configs a lost lane gave back.
  std::vector<size_t> given_back_;   ///< Those configs, for the next lane that asks.
  std::atomic<size_t> next_index_{0};
  std::atomic<bool> halt_{false};
};

}  // namespace

MeasuredBatch measure(Session& s, PendingBatch& batch) { return BatchMeasurement(s, batch).run(); }

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

namespace {

std::optional<db::TrialRecord> measure_config(Session& s, size_t lane, const search::Config& config,
                                              const templates::KernelInstance& inst, CompileResult cr,
                                              InjectedFault fault, bool new_trial) {
  const std::string reference_cubin = reference_for(s, inst);
  db::TrialRecord rec;
  rec.config_json = s.space.to_json_string(config);
  rec.bytes = inst.bytes;
  if (s.device.simulated && s.opt.sim_delay_ms > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(s.opt.sim_delay_ms));
    std::lock_guard<std::mutex> lock(s.mu);
    s.sum.phases.sim_delay_s += s.opt.sim_delay_ms / 1000.0;
  }
  if (s.device.replay) return replayed(*s.device.replay, rec.config_json, inst.flops, inst.bytes);
  rec.compile_ms = cr.compile_ms;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!cr.from_cache) s.sum.phases.compile_cpu_s += cr.compile_ms / 1000.0;
    if (cr.from_cache && new_trial) ++s.sum.compiled_from_cache;
  }
  if (!cr.ok()) {
    rec.status = cr.status;
    rec.error_message = cr.log.substr(0, 2000);
    return rec;
  }
  rec.registers = cr.resources.registers;
  rec.shared_bytes = cr.resources.static_shared_bytes + inst.launch.dynamic_shared_bytes;
  rec.spill_bytes = cr.resources.local_bytes;
  const double timeout =
      s.device.simulated ? s.opt.run_timeout_s : s.opt.run_timeout_s + s.opt.settings.max_wall_ms / 1000.0;
  const auto tm = std::chrono::steady_clock::now();
  MeasureResult m = s.workers[lane]->measure(request_for(s, lane, inst, cr, reference_cubin, fault), timeout);
  const double round_trip = seconds_since(tm);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.sum.phases.worker += m.phases;
    s.sum.phases.worker_other_s += std::max(0.0, round_trip - m.phases.total());
    if (m.infrastructure_failure) {
      if (!s.workers[lane]->lost()) s.infrastructure_error = s.lanes[lane] + ": " + m.message;
      return std::nullopt;
    }
  }
  if (stop_requested() && m.status != "ok") return std::nullopt;  // stopped mid-measurement: leave it unmeasured
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
}

}  // namespace

std::optional<db::TrialRecord> measure_one(Session& s, size_t lane, const search::Config& config,
                                           const templates::KernelInstance& inst, CompileResult cr,
                                           InjectedFault fault, bool new_trial) {
  // A trial's times are its measurement's (they were the batch's commit time, the same for every trial of it).
  const std::string started = db::now_iso8601();
  std::optional<db::TrialRecord> rec = measure_config(s, lane, config, inst, std::move(cr), fault, new_trial);
  if (rec) {
    rec->started_at = started;
    rec->finished_at = db::now_iso8601();
  }
  return rec;
}

}  // namespace tuner
