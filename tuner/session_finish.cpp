#include "tuner/session_finish.h"

#include <algorithm>
#include <csignal>
#include <map>
#include <stdexcept>

#include "templates/registry.h"
#include "tuner/session_commit.h"
#include "tuner/session_measure.h"
#include "tuner/session_transfer.h"
#include "tuner/stop_signals.h"
#include "tuner/instance_compile.h"

namespace tuner {

namespace {

/// The ok measurements of each config of the workload, by config JSON; with --fix only the configs inside
/// the fixed knobs.
struct ConfigMeasurements {
  double first_ms = 0, sum_ms = 0;
  int n = 0;
  db::ResultRow last;  ///< The newest measurement (history is in id order).
};
std::map<std::string, ConfigMeasurements> measurements_by_config(const Session& s) {
  db::QueryFilter ok = s.records;
  ok.ok_only = true;
  std::map<std::string, ConfigMeasurements> out;
  for (auto& row : s.db.history(ok)) {
    if (!s.opt.fixed_knobs.empty() && !s.in_space(row.trial.config_json)) continue;  // outside --fix
    ConfigMeasurements& m = out[row.trial.config_json];
    if (m.n++ == 0) m.first_ms = row.trial.time_ms;
    m.sum_ms += row.trial.time_ms;
    m.last = std::move(row);
  }
  return out;
}

/// The top configs by time that have one measurement only (a config re-measured by an earlier session
/// is not measured again), best first.
std::vector<std::string> finalists(const Session& s) {
  const auto by_config = measurements_by_config(s);
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [config, m] : by_config) ranked.emplace_back(m.first_ms, config);
  std::sort(ranked.begin(), ranked.end());
  if (ranked.size() > static_cast<size_t>(s.opt.remeasure_top)) ranked.resize(s.opt.remeasure_top);
  std::vector<std::string> out;
  for (const auto& [time_ms, config_json] : ranked)
    if (by_config.at(config_json).n == 1) out.push_back(config_json);
  return out;
}

/// Measures the finalists once more; both measurements stay and best() ranks a config by their mean.
int64_t remeasure_finalists(Session& s) {
  std::vector<db::TrialRecord> records;
  for (const std::string& config_json : finalists(s)) {
    if (stop_requested()) continue;
    // Another process finishing on the same workload may have taken (or measured) this finalist meanwhile.
    if (!s.db.claim_remeasure(s.sum.session_id, config_json)) continue;
    const search::Config c = s.space.from_json(nlohmann::json::parse(config_json));
    const auto inst = s.tmpl.instantiate(s.space, c, s.opt.workload);
    auto job = s.pool.submit(kernel_request(inst, s.device.limits));
    const auto tc = std::chrono::steady_clock::now();
    CompileResult cr = job.get();
    s.sum.phases.compile_wait_s += seconds_since(tc);
    std::optional<db::TrialRecord> rec = measure_one(s, 0, c, inst, std::move(cr), InjectedFault::kNone, false);
    if (!rec) break;
    rec->purpose = "remeasure";
    records.push_back(std::move(*rec));
  }
  const auto tw = std::chrono::steady_clock::now();
  store_records(s, records, s.progress.measured_now);
  s.sum.phases.commit_s += seconds_since(tw);
  if (!s.infrastructure_error.empty()) throw std::runtime_error(s.infrastructure_error);
  return static_cast<int64_t>(records.size());
}

/// With --fix: the best config inside the fixed knobs, ranked as TuningDb::best ranks (the mean of a
/// config's ok measurements, then the older last measurement), as the row of its last measurement.
std::optional<db::ResultRow> best_in_space(const Session& s) {
  std::optional<db::ResultRow> best;
  for (auto& [config, m] : measurements_by_config(s)) {
    db::ResultRow r = std::move(m.last);
    r.measurements = m.n;
    r.mean_time_ms = m.sum_ms / m.n;
    if (!best || r.mean_time_ms < best->mean_time_ms ||
        (r.mean_time_ms == best->mean_time_ms && r.trial.id < best->trial.id))
      best = std::move(r);
  }
  return best;
}

/// The reason stored with an ended session: a signal's, else why the search stopped (its budget, the space
/// exhausted, an early stop), as the summary says it.
std::string end_reason(const Session& s) {
  if (s.sum.interrupted)
    return "stopped by signal " + std::to_string(s.sum.stop_signal) +
           (s.sum.stop_signal == SIGINT ? " (SIGINT)" : s.sum.stop_signal == SIGTERM ? " (SIGTERM)" : "");
  return s.sum.stop_reason;
}

}  // namespace

void finish(Session& s) {
  // A replay answers the same again: nothing to confirm.
  if (!stop_requested() && s.opt.remeasure_top > 0 && !s.device.replay) s.sum.remeasured = remeasure_finalists(s);
  const auto tsave = std::chrono::steady_clock::now();
  save_model(s);
  s.sum.interrupted = stop_requested();
  s.sum.stop_signal = stop_signal();
  if (s.sum.interrupted) s.sum.stop_reason = end_reason(s);
  s.db.end_session(s.sum.session_id, s.sum.interrupted ? "interrupted" : "finished", end_reason(s));
  s.sum.phases.commit_s += seconds_since(tsave);
  s.sum.measured_now = s.progress.measured_now;
  s.sum.errors_now = s.progress.errors_now;
  for (const auto& w : s.workers) s.sum.worker_starts += w->starts();
  s.sum.best = s.opt.fixed_knobs.empty() ? s.db.best(s.records) : best_in_space(s);
  s.sum.wall_s = seconds_since(s.t0);
}

void fail(Session& s, const std::string& reason, bool database_busy) {
  // A database still locked would keep the mark waiting as long again: try it briefly (a session left
  // running is marked killed by the next run that sees its process gone).
  if (database_busy) s.db.set_write_patience(2);
  try {
    s.db.end_session(s.sum.session_id, "failed", reason);
  } catch (const std::exception&) {
    // The store itself is failing (full disk, lock): the next run marks the session killed.
  }
}

}  // namespace tuner
