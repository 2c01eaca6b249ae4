// `tune --template auto`: one trial budget shared by every template that can run a workload on a
// device (gemm f16 on an H100: gemm_tc_mma and gemm_tc_wgmma), so users need not know which
// template wins where. Each template is tuned by its own session (run_tuning), in two rounds:
//
//   1. exploration: every template gets the same share, ceil(N / 2T) of the budget N over T templates;
//   2. exploitation: the rest of N goes to the template whose best record is fastest (then, when its
//      space runs out, to the next fastest); only its finalists are re-measured (--remeasure).
//
// A signal ends the whole run. An early stop (--early-stop, --min-improvement) ends one template's
// session: the next template still gets its exploration share, and the run ends below its budget once
// every template has stopped early.
//
// Shares are targets for the database's count of a template's trials, like --trials itself, so a
// rerun with the same budget measures nothing new and a larger one continues where the last ended.
// `query --best` ranks every template's records together.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tuner/tuning_session.h"

namespace tuner {

/// The exploration share of each of `templates` templates in a budget of `budget` trials.
int64_t exploration_share(int64_t budget, size_t templates);

/// Runs `base` (its template_name ignored) for each named template, sharing base.trials as above.
/// Returns one summary per session, in the order they ran; stops after a session that was interrupted.
std::vector<TuneSummary> run_template_auto(const TuneOptions& base, const std::vector<std::string>& templates,
                                           const DeviceTarget& device, db::TuningDb& db);

/// One summary of several sessions: counts, times, phases and lanes (by index) added up; the best
/// record over all, with the session and template that hold it (the first session when none has one);
/// space_size and previously_measured summed over the templates; interruption, early stop and stop
/// reason of the session that ended the run, with each template's trials in the database.
TuneSummary combine_summaries(const std::vector<TuneSummary>& sessions, int64_t budget);

}  // namespace tuner
