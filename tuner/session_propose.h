// The propose stage of a tuning session: the strategy proposes up to a batch
// within what is left of the database's budget, and the configs are claimed
// in the database before anything is compiled, so a config another process
// measured or is measuring is left to it and the strategy proposes again in
// its place. Not responsible for compiling or measuring the batch.
#pragma once

#include <vector>

#include "tuner/session.h"

namespace tuner {

/// The next batch, claimed for this session; empty when the budget is spent or the space exhausted.
std::vector<search::Config> propose(Session& s);

}  // namespace tuner
