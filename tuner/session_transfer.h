// The transfer stage of a tuning session, and the model's save at its end:
// a strategy with a TransferLearner (xgb) starts from what the database knows
// beyond this workload — this template's records of other shapes and GPUs,
// each with its speed relative to the best of its own workload and GPU, and
// the cost model the last session of this op and template saved — and the
// model it fitted is saved for the next session. Strategies without one, and
// --transfer none, skip the stage.
#pragma once

#include <string>

#include "tuner/session.h"

namespace tuner {

/// Feeds the transfer learner the other workloads' records and the saved model (when its feature columns
/// match), then lets the strategy refit on everything it knows. Sets sum.transferred and
/// sum.started_from_model.
void transfer(Session& s);

/// Saves the model the strategy fitted in this session (if any) as the next session's start; sets
/// sum.saved_model.
void save_model(Session& s);

}  // namespace tuner
