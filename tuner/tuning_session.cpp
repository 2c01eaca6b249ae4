// Where to start reading: run_tuning() below is the whole session as a
// sequence of named stages, each in a file of its own:
//
//   Session (session.h)           setup: template, space, strategy, compile pool, workers
//   resume (session_resume.h)     the database's records of this workload: budget, strategy observes them
//   transfer (session_transfer.h) other shapes' and GPUs' records and the saved model (learning strategies)
//   open_session (session.h)      the session's row in the database
//   propose (session_propose.h)   the strategy's next batch, claimed in the database
//   compile (session_compile.h)   instantiated and queued on the NVRTC pool, references first
//   measure (session_measure.h)   every lane checks and times configs of the batch in its worker
//   commit (session_commit.h)     one transaction per batch, then the strategy observes the results
//   finish (session_finish.h)     finalists re-measured, model saved, session ended, summary
//
// A strategy whose proposals do not depend on results (grid, random) has its next batch proposed and
// compiled while the current one is measured.
#include "tuner/tuning_session.h"

#include "tuner/session.h"
#include "tuner/session_commit.h"
#include "tuner/session_compile.h"
#include "tuner/session_finish.h"
#include "tuner/session_measure.h"
#include "tuner/session_propose.h"
#include "tuner/session_resume.h"
#include "tuner/session_transfer.h"
#include "tuner/stop_signals.h"

namespace tuner {

namespace {

/// The propose and compile stages together, timed as the session's search phase.
PendingBatch propose_and_compile(Session& s) {
  const auto tp = std::chrono::steady_clock::now();
  PendingBatch batch = compile(s, propose(s));
  s.sum.phases.search_s += seconds_since(tp);
  return batch;
}

}  // namespace

TuneSummary run_tuning(const TuneOptions& opt, const DeviceTarget& device, db::TuningDb& db) {
  StopSignals signals;
  Session s(opt, device, db);
  resume(s);
  transfer(s);
  open_session(s);
  try {
    start_progress(s);
    queue_first_reference(s);
    s.sum.phases.setup_s = seconds_since(s.t0);
    PendingBatch current = propose_and_compile(s);
    while (!current.configs.empty() && !stop_requested()) {
      PendingBatch next;
      if (s.strategy->independent_of_results()) next = propose_and_compile(s);
      MeasuredBatch measured = measure(s, current);
      commit(s, current, measured);
      if (stop_requested() || s.sum.early_stopped) {
        s.pool.discard_queued();
        break;
      }
      current = next.configs.empty() ? propose_and_compile(s) : std::move(next);
    }
    finish(s);
    return s.sum;
  } catch (const db::DbError& e) {
    fail(s, e.what(), e.kind() == db::DbError::Kind::kBusy);
    throw;
  } catch (const std::exception& e) {
    fail(s, e.what(), false);
    throw;
  }
}

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
  j["sim_delay_s"] = p.sim_delay_s;
  j["compile_cpu_s"] = p.compile_cpu_s;
  return j;
}

}  // namespace tuner
