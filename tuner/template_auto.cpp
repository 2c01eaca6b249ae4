#include "tuner/template_auto.h"

#include <algorithm>
#include <map>

#include "tuner/stop_signals.h"

namespace tuner {

namespace {

/// Trials of the summary's template in the database once its session ended.
int64_t trials_after(const TuneSummary& s) { return s.previously_measured + s.measured_now + s.measured_by_others; }

bool faster(const TuneSummary& a, const TuneSummary& b) {
  if (!a.best) return false;
  if (!b.best) return true;
  return a.best->trial.time_ms < b.best->trial.time_ms;
}

/// One `--template auto` run: its sessions in order and the latest summary of each template.
class AutoRun {
 public:
  AutoRun(const TuneOptions& base, const DeviceTarget& device, db::TuningDb& db) : base_(base), device_(device), db_(db) {}

  /// Trials of the templates tuned so far in this run (their database counts).
  int64_t used(const std::string& except = "") const {
    int64_t n = 0;
    for (const auto& [name, s] : last_)
      if (name != except) n += trials_after(s);
    return n;
  }
  const TuneSummary* last(const std::string& name) const {
    auto it = last_.find(name);
    return it == last_.end() ? nullptr : &it->second;
  }

  /// Tunes `name` up to `target` trials; false when its session ended early (a signal, or an early stop).
  bool run(const std::string& name, int64_t target, int remeasure) {
    TuneOptions opt = base_;
    opt.template_name = name;
    opt.trials = std::max<int64_t>(target, 0);
    opt.remeasure_top = remeasure;
    if (base_.on_progress) {  // the whole run's count, budget, best and time, named by the template in work
      // (The best was the template's own, and the time restarted with each template's session.)
      double best_ms = 0, best_gflops = 0, elapsed = 0;
      int64_t measured = 0, errors = 0;
      for (const auto& done : sessions_) {
        elapsed += done.wall_s;
        measured += done.measured_now;
        errors += done.errors_now;
        if (done.best && done.best->trial.time_ms > 0 && (best_ms == 0 || done.best->trial.time_ms < best_ms))
          best_ms = done.best->trial.time_ms, best_gflops = done.best->trial.gflops;
      }
      opt.on_progress = [this, name, others = used(name), best_ms, best_gflops, elapsed, measured,
                         errors](const TuneProgress& p) {
        TuneProgress whole = p;
        whole.done += others;
        whole.budget = base_.trials;
        whole.label = name;
        if (best_ms > 0 && (p.best_ms <= 0 || best_ms < p.best_ms)) whole.best_ms = best_ms, whole.best_gflops = best_gflops;
        whole.elapsed_s = elapsed + p.elapsed_s;
        whole.errors_now = errors + p.errors_now;
        const int64_t run_measured = measured + p.measured_now;
        whole.eta_s = run_measured > 0 ? whole.elapsed_s / static_cast<double>(run_measured) *
                                             static_cast<double>(std::max<int64_t>(whole.budget - whole.done, 0))
                                       : p.eta_s;
        base_.on_progress(whole);
      };
    }
    sessions_.push_back(run_tuning(opt, device_, db_));
    TuneSummary& s = sessions_.back();
    // A round that only re-measures the finalists (no trial left to search) says so, not "budget reached".
    if (remeasure > 0 && s.measured_now == 0 && !s.interrupted && !s.early_stopped)
      s.stop_reason = "finalists re-measured (no search trials left for it)";
    last_[name] = s;
    if (!s.interrupted && stop_requested()) {  // asked to stop as the session ended: no further session
      s.interrupted = true;
      s.stop_signal = stop_signal();
      s.stop_reason = "stopped by signal " + std::to_string(s.stop_signal) + " after template " + name;
    }
    return !s.interrupted && !s.early_stopped;
  }

  std::vector<TuneSummary> take() { return std::move(sessions_); }

 private:
  const TuneOptions& base_;
  const DeviceTarget& device_;
  db::TuningDb& db_;
  std::vector<TuneSummary> sessions_;
  std::map<std::string, TuneSummary> last_;
};

}  // namespace

int64_t exploration_share(int64_t budget, size_t templates) {
  if (budget <= 0 || templates == 0) return 0;
  const auto twice = 2 * static_cast<int64_t>(templates);
  return (budget + twice - 1) / twice;
}

std::vector<TuneSummary> run_template_auto(const TuneOptions& base, const std::vector<std::string>& templates,
                                           const DeviceTarget& device, db::TuningDb& db) {
  StopSignals signals;  // around every session, so that a signal between two of them ends the run
  AutoRun r(base, device, db);
  const int64_t N = base.trials, share = exploration_share(N, templates.size());
  // Exploration, without re-measuring finalists: a share each, never past the budget. An early stop ends that
  // template's share only (the next one still gets its own); a signal ends the run.
  for (const auto& name : templates)
    if (!r.run(name, std::min(share, N - r.used()), 0) && r.last(name)->interrupted) return r.take();

  // Exploitation: the fastest template first; each takes what the others have not used.
  std::vector<std::string> order = templates;
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& a, const std::string& b) { return faster(*r.last(a), *r.last(b)); });
  bool remeasured = false;
  for (const auto& name : order) {
    const int64_t left = N - r.used(), mine = trials_after(*r.last(name));
    if (left <= 0) break;
    if (mine >= r.last(name)->space_size) continue;  // this template's space is exhausted
    if (r.last(name)->early_stopped) continue;       // it stopped improving: no more trials for it
    remeasured = remeasured || name == order.front();
    if (!r.run(name, mine + left, name == order.front() ? base.remeasure_top : 0)) return r.take();
  }
  // The fastest template's finalists are measured once more (a session with no new trials).
  if (!remeasured && base.remeasure_top > 0)
    r.run(order.front(), trials_after(*r.last(order.front())), base.remeasure_top);
  return r.take();
}

TuneSummary combine_summaries(const std::vector<TuneSummary>& sessions, int64_t budget) {
  TuneSummary out;
  if (sessions.empty()) return out;
  const TuneSummary* winner = &sessions.front();
  std::map<std::string, const TuneSummary*> first_of, last_of;
  for (const auto& s : sessions) {
    // Ties go to the later session: a template's later rounds hold its earlier ones' best too, and the run's
    // session_id is then the one that measured last (a rerun's first, empty round of it was named).
    if (s.best && !faster(*winner, s)) winner = &s;
    first_of.emplace(s.template_name, &s);
    last_of[s.template_name] = &s;
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
    out.phases += s.phases;
    for (size_t i = 0; i < s.lanes.size(); ++i) {  // the same lanes serve every session
      if (i == out.lanes.size()) out.lanes.push_back({s.lanes[i].device, s.lanes[i].where, 0, false});
      out.lanes[i].measured += s.lanes[i].measured;
      out.lanes[i].lost = out.lanes[i].lost || s.lanes[i].lost;
    }
  }
  int64_t total = 0;
  bool all_exhausted = true;
  std::string parts;
  for (const auto& [name, s] : first_of) {
    out.space_size += s->space_size;
    out.previously_measured += s->previously_measured;
  }
  for (const auto& [name, s] : last_of) {
    total += trials_after(*s);
    all_exhausted = all_exhausted && trials_after(*s) >= s->space_size;
    parts += (parts.empty() ? "" : ", ") + name + " " + std::to_string(trials_after(*s));
  }
  out.session_id = winner->session_id;
  out.template_name = winner->template_name;
  out.template_hash = winner->template_hash;
  out.current_template_hash = winner->current_template_hash;
  out.best = winner->best;
  out.started_from_model = winner->started_from_model;
  out.saved_model = winner->saved_model;
  // The session that ended the run says why: a signal ends it at once, and so does an early stop of the template
  // taking the rest of the budget (it is the last). A run whose templates all stopped early, each in its own
  // share, ends below the budget: the last of those early stops says why.
  const TuneSummary& end = sessions.back();
  const TuneSummary* early = nullptr;
  for (const auto& s : sessions)
    if (s.early_stopped) early = &s;
  out.interrupted = end.interrupted;
  out.stop_signal = end.stop_signal;
  out.early_stopped = end.early_stopped;
  out.expected_improvement = end.expected_improvement;
  if (end.interrupted || end.early_stopped) {
    out.stop_reason = end.stop_reason + " (template " + end.template_name + ")";
  } else if (total >= budget) {
    out.stop_reason = "budget of " + std::to_string(budget) + " trials reached";
  } else if (all_exhausted) {
    out.stop_reason = "every template's space exhausted";
  } else if (early) {
    out.early_stopped = true;
    out.stop_reason = early->stop_reason + " (template " + early->template_name + ")";
  } else {
    out.stop_reason = end.stop_reason;
  }
  out.stop_reason += " (trials: " + parts + ")";
  return out;
}

}  // namespace tuner
