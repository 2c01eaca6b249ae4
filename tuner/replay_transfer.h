// Transfer between real recordings: the records of one whole-space replay
// recording turned into the rows a model-guided search learns from before it
// tunes another workload (what a tuning session's transfer stage feeds it
// from the database: tuner/session_transfer.h), so that warm and cold starts
// can be compared on real measurements (bench/search_efficiency_bench
// --replay-transfer).
//
// Decides which recordings can feed which (same op, dtype and template, a
// different shape or GPU: only then do the feature columns match) and samples
// a recording's records deterministically under a seed. Runs no search and
// measures nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "search/transfer_learner.h"
#include "tuner/replay_oracle.h"

namespace tuner {

/// One record of another workload as a transfer learner takes it.
struct TransferRow {
  std::vector<float> features;  ///< kernel_features of the config on its own workload and GPU.
  float relative_speed = 0;     ///< Its speed over the best speed among the rows given (1 for the best).
};

/// True when `from`'s records can feed a search of `to`: the same op, dtype and template (so the same
/// feature columns), and another shape or GPU (spec key or device name; a recording does not feed itself).
bool transferable(const RecordedSpace& from, const RecordedSpace& to);

/// Up to `most` of `from`'s records (all of them when `most` is 0 or at least their number), drawn without
/// replacement under `seed`, as transfer rows: the session's featurization, speeds relative to the best
/// of the rows drawn (as the session relates a workload's records to its best one).
std::vector<TransferRow> transfer_rows(const RecordedSpace& from, size_t most, uint64_t seed);

/// Gives every row to the learner; the strategy learns from them at its next observe().
void feed_transfer(search::TransferLearner& learner, const std::vector<TransferRow>& rows);

}  // namespace tuner
