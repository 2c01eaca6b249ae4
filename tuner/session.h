// The state one tuning session's stages share (tuner/tuning_session.cpp runs
// the stages in order; each stage is a file of its own: session_resume,
// session_transfer, session_propose, session_compile, session_measure,
// session_commit, session_finish). Like Halide's SearchSpace bundle: one
// struct of what the stages need, passed explicitly, no globals.
//
// Constructing a Session is the setup: the template and its space, the
// strategy, the compile pool and the measuring workers — everything that can
// fail for want of resources — before anything is written to the database.
// It is not responsible for the order of the stages.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "db/tuning_db.h"
#include "search/strategy.h"
#include "templates/kernel_template.h"
#include "tuner/compile_cache.h"
#include "tuner/compile_pool.h"
#include "tuner/compiled_resources.h"
#include "tuner/lane_pool.h"
#include "tuner/nvrtc_builder.h"
#include "tuner/timing_stop.h"
#include "tuner/tuning_session.h"

namespace tuner {

struct Session {
  Session(const TuneOptions& options, const DeviceTarget& target, db::TuningDb& database);

  const TuneOptions& opt;
  const DeviceTarget& device;
  db::TuningDb& db;
  const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  const templates::KernelTemplate& tmpl;
  const search::ConfigSpace space;
  /// The records of this workload on this device (matched as queries match it) and template version.
  db::QueryFilter records;
  TuneSummary sum;
  CompileCache cache;
  NvrtcBuilder builder;
  CompilePool pool;
  /// The compiles that rank xgb's first batch (TuneOptions::prior "compiled" on a device that compiles).
  std::unique_ptr<CompiledResources> prior_resources;
  std::unique_ptr<search::SearchStrategy> strategy;
  /// Reference kernels' compiles by reference source (configs of one workload may need different
  /// references: gemm_tc_mma's OUT_F32 changes C's type). Queued by session_compile.
  std::map<std::string, std::shared_future<CompileResult>> reference_jobs;

  /// The device spec each lane's requests name, and its measurer (one worker process per local device,
  /// then the remote lanes); lane_pool runs them on threads of their own when there are several.
  std::vector<std::string> lanes;
  std::vector<std::shared_ptr<Measurer>> workers;
  std::unique_ptr<LanePool> lane_pool;

  TuneProgress progress;
  int64_t last_seen_trial = 0;    ///< The newest trial of the database the strategy has heard of.
  /// With --fix: search trials of this workload in the database whose config lies outside the fixed knobs
  /// (counted at the start). The run's budget is --trials inside the fix, so the database's is this more.
  int64_t outside_fix = 0;
  /// Whether the config JSON is one of this session's space (with --fix: inside the fixed knobs).
  bool in_space(const std::string& config_json) const;
  int64_t since_improvement = 0;  ///< Trials of this session since the best time last improved.
  std::string infrastructure_error;  ///< Set when the measuring machinery failed (ends the session).
  std::mutex mu;                  ///< Guards the state above while several lanes measure.

  /// Counts one measured trial of this session (under mu): progress, best so far, the early-stop rule.
  /// True when the session should stop early.
  bool note_trial(const db::TrialRecord& rec);
};

/// Writes the session's row; from then on whatever ends the run early marks it failed with the reason.
void open_session(Session& s);
/// The progress line's starting point: the budget, the trials already done, the best so far.
void start_progress(Session& s);

}  // namespace tuner
