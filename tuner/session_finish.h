// The finish stage of a tuning session: the finalists measured once more (so
// noise cannot crown the winner), the strategy's model saved for the next
// session, the session row ended (finished or interrupted, with the reason),
// and the summary completed; and fail(), which marks the session failed with
// the error that ended it.
#pragma once

#include <string>

#include "tuner/session.h"

namespace tuner {

/// Re-measures the finalists (unless stopped, turned off or on a replay device), saves the model, ends the
/// session and completes s.sum.
void finish(Session& s);

/// Marks the session failed with `reason` (trying only briefly when the database is locked).
void fail(Session& s, const std::string& reason, bool database_busy);

}  // namespace tuner
