#include "tuner/session_propose.h"

#include <algorithm>
#include <cstdio>

#include "tuner/session_resume.h"

namespace tuner {

namespace {

/// True (with the reason set) when the strategy expects less than the threshold from its proposal.
bool too_little_to_expect(Session& s) {
  if (s.opt.min_expected_improvement <= 0) return false;
  const double ei = s.strategy->expected_improvement();
  if (ei < 0 || ei >= s.opt.min_expected_improvement) return false;
  char text[160];
  std::snprintf(text, sizeof text, "expected improvement of the next batch %.3g%% < %g%%", 100 * ei,
                100 * s.opt.min_expected_improvement);
  s.sum.early_stopped = true;
  s.sum.stop_reason = text;
  return true;
}

}  // namespace

std::vector<search::Config> propose(Session& s) {
  learn_from_others(s);
  std::vector<search::Config> claimed;
  while (claimed.empty()) {
    const int64_t left = s.db.budget_left(s.sum.session_id, s.opt.trials + s.outside_fix);
    if (left <= 0) {
      // A budget of the whole space (--trials all) ends with the space, and says so.
      s.sum.stop_reason = s.opt.trials >= static_cast<int64_t>(s.space.size())
                              ? "space exhausted"
                              : "budget of " + std::to_string(s.opt.trials) + " trials reached";
      // Trials of the budget that other processes sharing the database are measuring now: say so, or a second run
      // that found everything claimed reads as one that had nothing to do.
      std::vector<std::pair<std::string, int64_t>> processes;
      if (const int64_t others = s.db.claims_of_others(s.sum.session_id, &processes); others > 0) {
        std::string list;
        for (const auto& [host, pid] : processes)
          list += (list.empty() ? "" : ", ") + std::to_string(pid) + (host.empty() ? "" : " on " + host);
        s.sum.stop_reason += ": " + std::to_string(others) +
                             (others == 1 ? " trial of the budget is" : " trials of the budget are") + " being measured by " +
                             (processes.size() > 1 ? "processes " : "process ") + list +
                             " sharing the database (`tuner query` shows their results once stored)";
      }
      break;
    }
    std::vector<search::Config> proposed =
        s.strategy->propose(std::min<size_t>(s.opt.batch_size, static_cast<size_t>(left)));
    if (proposed.empty()) {
      s.sum.stop_reason = "space exhausted";
      break;
    }
    s.sum.expected_improvement = s.progress.expected_improvement = s.strategy->expected_improvement();
    if (too_little_to_expect(s)) return {};
    std::vector<std::string> configs;
    for (const auto& c : proposed) configs.push_back(s.space.to_json_string(c));
    const db::ClaimResult claim = s.db.claim_configs(s.sum.session_id, configs, s.opt.trials + s.outside_fix);
    for (size_t i = 0; i < proposed.size(); ++i)
      if (claim.claimed[i]) claimed.push_back(std::move(proposed[i]));
    if (claimed.empty()) learn_from_others(s);  // all taken: learn what the others found, then propose again
  }
  return claimed;
}

}  // namespace tuner
