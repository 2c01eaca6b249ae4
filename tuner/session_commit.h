// The commit stage of a tuning session: a measured batch is stored in one
// transaction (the store retries while another process holds the lock), and
// then the strategy observes its results. When the batch cannot be stored the
// error says what was kept and what was not. Not responsible for measuring.
#pragma once

#include <vector>

#include "tuner/session.h"
#include "tuner/session_measure.h"

namespace tuner {

/// Stores what was measured of the batch, rethrows a lane's error (after the store), lets the strategy
/// observe the results, and throws when the measuring machinery failed.
void commit(Session& s, const PendingBatch& batch, MeasuredBatch& measured);

/// Stores records in one transaction; a busy or full database becomes an error naming what was lost and
/// what was kept (`stored_before`: this session's trials already stored).
void store_records(Session& s, std::vector<db::TrialRecord>& records, int64_t stored_before);

}  // namespace tuner
