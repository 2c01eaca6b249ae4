// The resume stage of a tuning session, and its twin during the loop: what
// the database already holds for this workload, device and template version
// reaches the strategy through observe(), so it is never measured again and
// a learning strategy trains on it; the budget counts the same records.
// During the loop, learn_from_others() does the same for the trials other
// processes sharing the database stored since the strategy last looked.
#pragma once

#include "tuner/session.h"

namespace tuner {

/// The database's search trials of this workload: observed by the strategy, counted in
/// sum.previously_measured. Re-measurements of finalists are known configs, not budget.
void resume(Session& s);

/// Trials of other sessions stored since the last look: observed by the strategy (never proposed), counted
/// in the progress and in sum.measured_by_others.
void learn_from_others(Session& s);

}  // namespace tuner
