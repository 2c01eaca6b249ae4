#include "tuner/template_auto.h"

#include <algorithm>
#include <map>

namespace tuner {

namespace {

/// Trials of the summary's template in the database once its session ended.
int64_t trials_after(const TuneSummary& s) { return s.previously_measured + s.measured_now + s.measured_by_others; }

bool faster(const TuneSummary& a, const TuneSummary& b) {
  if (!a.best) return false;
  if (!b.best) return true;
  return a.best->trial.time_ms < b.best->trial.time_ms;
}

}  // namespace

int64_t exploration_share(int64_t budget, size_t templates) {
  if (budget <= 0 || templates == 0) return 0;
  const auto twice = 2 * static_cast<int64_t>(templates);
  return (budget + twice - 1) / twice;
}

std::vector<TuneSummary> run_template_auto(const TuneOptions& base, const std::vector<std::string>& templates,
                                           const DeviceTarget& device, db::TuningDb& db) {
  std::vector<TuneSummary> sessions;
  std::map<std::string, TuneSummary> last;  // the latest session of each template
  auto run = [&](const std::string& name, int64_t target) {
    TuneOptions opt = base;
    opt.template_name = name;
    opt.trials = target;
    sessions.push_back(run_tuning(opt, device, db));
    last[name] = sessions.back();
    return !sessions.back().interrupted;
  };
  const int64_t share = exploration_share(base.trials, templates.size());
  for (const auto& name : templates)
    if (!run(name, share)) return sessions;

  // Exploitation: fastest template first; each takes what the others have not used.
  std::vector<std::string> order = templates;
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& a, const std::string& b) { return faster(last[a], last[b]); });
  for (const auto& name : order) {
    int64_t used = 0;
    for (const auto& [other, s] : last) used += trials_after(s);
    const int64_t mine = trials_after(last[name]);
    const int64_t left = base.trials - used;
    if (left <= 0) break;
    if (mine >= last[name].space_size) continue;  // this template's space is exhausted
    if (!run(name, mine + left)) break;
  }
  return sessions;
}

TuneSummary combine_summaries(const std::vector<TuneSummary>& sessions, int64_t budget) {
  TuneSummary out;
  if (sessions.empty()) return out;
  const TuneSummary* winner = &sessions.front();
  std::map<std::string, int64_t> space_of, previously_of;  // per template: its space; trials before its first session
  for (const auto& s : sessions) {
    if (faster(s, *winner)) winner = &s;
    space_of.emplace(s.template_name, s.space_size);
    previously_of.emplace(s.template_name, s.previously_measured);
    out.measured_now += s.measured_now;
    out.errors_now += s.errors_now;
    out.compiled_from_cache += s.compiled_from_cache;
    out.prior_compiles += s.prior_compiles;
    out.prior_compile_s += s.prior_compile_s;
    out.transferred += s.transferred;
    out.remeasured += s.remeasured;
    out.worker_starts += s.worker_starts;
    out.wall_s += s.wall_s;
    out.measured_by_others += s.measured_by_others;
    TunePhases& p = out.phases;
    p.setup_s += s.phases.setup_s;
    p.search_s += s.phases.search_s;
    p.compile_wait_s += s.phases.compile_wait_s;
    p.worker += s.phases.worker;
    p.worker_other_s += s.phases.worker_other_s;
    p.commit_s += s.phases.commit_s;
    p.compile_cpu_s += s.phases.compile_cpu_s;
  }
  for (const auto& [name, n] : space_of) out.space_size += n;
  for (const auto& [name, n] : previously_of) out.previously_measured += n;
  out.session_id = winner->session_id;
  out.template_name = winner->template_name;
  out.template_hash = winner->template_hash;
  out.best = winner->best;
  out.started_from_model = winner->started_from_model;
  out.saved_model = winner->saved_model;
  out.lanes = sessions.back().lanes;
  out.interrupted = sessions.back().interrupted;
  out.stop_signal = sessions.back().stop_signal;
  out.early_stopped = sessions.back().early_stopped;
  out.stop_reason = sessions.back().stop_reason;
  if (!out.interrupted && !out.early_stopped) {
    std::map<std::string, int64_t> trials_of;  // the latest count of each template
    for (const auto& s : sessions) trials_of[s.template_name] = trials_after(s);
    int64_t total = 0;
    std::string parts;
    for (const auto& [name, n] : trials_of) {
      total += n;
      parts += (parts.empty() ? "" : ", ") + name + " " + std::to_string(n);
    }
    out.stop_reason = (total >= budget ? "budget of " + std::to_string(budget) + " trials reached"
                                       : std::string("every template's space exhausted")) +
                      " (" + parts + ")";
  }
  return out;
}

}  // namespace tuner
