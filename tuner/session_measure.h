// The measure stage of a tuning session: each lane (a worker process on its
// device, or a remote MPI rank) takes the next compiled config of the batch,
// checks and times it, and counts it, until the batch is done, a stop is
// asked for, early stopping triggers or the machinery fails. A lane that is
// lost (a rank that stopped answering) hands its config to another lane. On
// sim: devices the worker estimates; on replay: devices the recording answers.
// Results keep the batch's order. Not responsible for storing them.
#pragma once

#include <exception>
#include <optional>
#include <vector>

#include "tuner/session.h"
#include "tuner/session_compile.h"

namespace tuner {

/// What the lanes made of one batch.
struct MeasuredBatch {
  /// By batch position; nullopt: not measured (stopped, halted, or the machinery failed).
  std::vector<std::optional<db::TrialRecord>> results;
  /// The first exception a lane threw (rethrown once what was measured is stored).
  std::exception_ptr lane_error;
};

/// Measures the batch on every lane.
MeasuredBatch measure(Session& s, PendingBatch& batch);

/// Checks and times one compiled config on `lane`. nullopt: not measured (the machinery failed, which sets
/// s.infrastructure_error, or a stop request cut the measurement short). Several lanes may call it at once.
/// `new_trial`: false for a second measurement of a config (a finalist re-measured), whose compile is not
/// counted again in the summary's compiled_from_cache.
std::optional<db::TrialRecord> measure_one(Session& s, size_t lane, const search::Config& config,
                                           const templates::KernelInstance& inst, CompileResult cr,
                                           InjectedFault fault, bool new_trial = true);

}  // namespace tuner
