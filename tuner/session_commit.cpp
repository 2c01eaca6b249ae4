#include "tuner/session_commit.h"

#include <stdexcept>

#include "tuner/stop_signals.h"

namespace tuner {

void store_records(Session& s, std::vector<db::TrialRecord>& records, int64_t stored_before) {
  if (records.empty()) return;
  try {
    s.db.add_trials(s.sum.session_id, records);
  } catch (const db::DbError& e) {
    if (e.kind() != db::DbError::Kind::kBusy && e.kind() != db::DbError::Kind::kFull) throw;
    throw db::DbError(std::string(e.what()) + "; the " + std::to_string(records.size()) +
                          " trials measured since the last commit were not stored, the " +
                          std::to_string(stored_before) +
                          " stored before by this session are kept; run the same command again to continue",
                      e.kind());
  }
}

void commit(Session& s, const PendingBatch& batch, MeasuredBatch& measured) {
  std::vector<db::TrialRecord> records;
  std::vector<search::TrialOutcome> outcomes;
  std::vector<search::Config> configs;
  for (size_t i = 0; i < batch.configs.size(); ++i) {
    if (!measured.results[i]) continue;
    outcomes.push_back({measured.results[i]->status == "ok", measured.results[i]->time_ms});
    records.push_back(std::move(*measured.results[i]));
    configs.push_back(batch.configs[i]);
  }
  // A stop request leaves the rest unmeasured (and uncompiled) for the next session.
  if (stop_requested()) s.pool.discard_queued();
  auto tw = std::chrono::steady_clock::now();
  store_records(s, records, s.progress.measured_now - static_cast<int64_t>(records.size()));
  s.sum.phases.commit_s += seconds_since(tw);
  if (measured.lane_error) std::rethrow_exception(measured.lane_error);  // after what was measured is stored
  tw = std::chrono::steady_clock::now();
  s.strategy->observe(configs, outcomes);
  s.sum.phases.search_s += seconds_since(tw);
  if (!s.infrastructure_error.empty()) {
    s.pool.discard_queued();
    throw std::runtime_error(s.infrastructure_error);
  }
}

}  // namespace tuner
