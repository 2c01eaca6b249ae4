#include "tuner/session_resume.h"

#include <algorithm>

namespace tuner {

namespace {

/// The search trials among `rows` as configs of the space and outcomes (records of a space with other
/// knob values, from older limits, are left out: they cannot be proposed anyway). `kept` gets the rows used.
void as_observations(const Session& s, const std::vector<db::ResultRow>& rows, std::vector<search::Config>& configs,
                     std::vector<search::TrialOutcome>& outcomes, std::vector<const db::ResultRow*>* kept = nullptr) {
  for (const auto& row : rows) {
    if (row.trial.purpose != "search") continue;  // a finalist's second measurement: the config is known
    try {
      configs.push_back(s.space.from_json(nlohmann::json::parse(row.trial.config_json)));
    } catch (const std::exception&) {
      continue;
    }
    outcomes.push_back({row.trial.status == "ok", row.trial.time_ms});
    if (kept) kept->push_back(&row);
  }
}

}  // namespace

void resume(Session& s) {
  const auto history = s.db.history(s.records);
  for (const auto& row : history) s.last_seen_trial = std::max(s.last_seen_trial, row.trial.id);
  std::vector<search::Config> configs;
  std::vector<search::TrialOutcome> outcomes;
  as_observations(s, history, configs, outcomes);
  s.strategy->observe(configs, outcomes);
  // The budget counts search trials; re-measurements of finalists come on top of it.
  s.sum.previously_measured = std::count_if(history.begin(), history.end(),
                                            [](const db::ResultRow& r) { return r.trial.purpose == "search"; });
  // --fix: the budget is trials inside the fixed knobs; the ones outside do not use it.
  if (!s.opt.fixed_knobs.empty()) {
    s.outside_fix = s.sum.previously_measured - static_cast<int64_t>(configs.size());
    s.sum.previously_measured = static_cast<int64_t>(configs.size());
  }
}

void learn_from_others(Session& s) {
  db::QueryFilter others = s.records;
  others.after_trial_id = s.last_seen_trial;
  others.exclude_session_id = s.sum.session_id;
  const auto rows = s.db.history(others);
  for (const auto& row : rows) s.last_seen_trial = std::max(s.last_seen_trial, row.trial.id);
  std::vector<search::Config> configs;
  std::vector<search::TrialOutcome> outcomes;
  std::vector<const db::ResultRow*> kept;
  as_observations(s, rows, configs, outcomes, &kept);
  if (configs.empty()) return;
  s.strategy->observe(configs, outcomes);
  for (const db::ResultRow* row : kept) {
    ++s.progress.done;
    ++s.sum.measured_by_others;
    if (row->trial.status == "ok" && (s.progress.best_ms == 0 || row->trial.time_ms < s.progress.best_ms)) {
      s.progress.best_ms = row->trial.time_ms;
      s.progress.best_gflops = row->trial.gflops;
    }
  }
}

}  // namespace tuner
