// --template auto's arithmetic (tuner/template_auto.h): the exploration share of each template, and
// the one summary made of several templates' sessions. The sessions themselves run in the CLI test
// TemplateOpsCli.TheDefaultTemplateAutoSharesTheBudgetAndGivesTheRestToTheFastest.
#include "tuner/template_auto.h"

#include <gtest/gtest.h>

namespace {

using tuner::TuneSummary;

TuneSummary session(const std::string& tmpl, int64_t id, int64_t space, int64_t before, int64_t now, double best_ms) {
  TuneSummary s;
  s.template_name = tmpl;
  s.template_hash = tmpl + "-hash";
  s.session_id = id;
  s.space_size = space;
  s.previously_measured = before;
  s.measured_now = now;
  s.wall_s = 1.5;
  s.phases.commit_s = 0.25;
  s.lanes = {{"sim:h100-sxm", "local", now, false}};
  if (best_ms > 0) {
    tuner::db::ResultRow r;
    r.trial.time_ms = best_ms;
    r.template_name = tmpl;
    s.best = r;
  }
  s.stop_reason = "budget of " + std::to_string(before + now) + " trials reached";
  return s;
}

TEST(TemplateAuto, EachTemplateExploresAShareOfHalfTheBudget) {
  EXPECT_EQ(tuner::exploration_share(200, 2), 50);
  EXPECT_EQ(tuner::exploration_share(201, 2), 51);  // rounded up
  EXPECT_EQ(tuner::exploration_share(7, 3), 2);
  EXPECT_EQ(tuner::exploration_share(1, 2), 1);     // the run caps it at what the budget has left
  EXPECT_EQ(tuner::exploration_share(0, 2), 0);
  EXPECT_EQ(tuner::exploration_share(10, 0), 0);
}

TEST(TemplateAuto, TheSummaryAddsSessionsUpAndNamesTheTemplateOfTheBestRecord) {
  // mma explores 5 (it had 3 already), wgmma explores 5, then wgmma (faster) takes 10 more.
  const std::vector<TuneSummary> sessions = {session("mma", 1, 2136, 3, 2, 0.08), session("wgmma", 2, 496, 0, 5, 0.07),
                                             session("wgmma", 3, 496, 5, 10, 0.05)};
  const TuneSummary s = tuner::combine_summaries(sessions, 20);
  EXPECT_EQ(s.measured_now, 17);
  EXPECT_EQ(s.previously_measured, 3) << "what each template had before the run, not between its sessions";
  EXPECT_EQ(s.space_size, 2136 + 496);
  EXPECT_EQ(s.template_name, "wgmma");
  EXPECT_EQ(s.session_id, 3);
  ASSERT_TRUE(s.best);
  EXPECT_DOUBLE_EQ(s.best->trial.time_ms, 0.05);
  EXPECT_DOUBLE_EQ(s.wall_s, 4.5);
  EXPECT_DOUBLE_EQ(s.phases.commit_s, 0.75);
  ASSERT_EQ(s.lanes.size(), 1u);
  EXPECT_EQ(s.lanes[0].measured, 17) << "the lanes serve every session: their counts add up";
  EXPECT_EQ(s.stop_reason, "budget of 20 trials reached (trials: mma 5, wgmma 15)");
  EXPECT_FALSE(s.early_stopped);
  // A rerun that measures nothing: both wgmma rounds hold the same best; the run names the later one (it named the
  // first, an empty round, while the summary's trials counted the second's).
  const std::vector<TuneSummary> rerun = {session("mma", 4, 2136, 5, 0, 0.08), session("wgmma", 5, 496, 15, 0, 0.05),
                                          session("wgmma", 6, 496, 15, 0, 0.05)};
  EXPECT_EQ(tuner::combine_summaries(rerun, 20).session_id, 6);
}

// An early stop in an exploration share ends that template's share only: the next template still gets its own,
// and the run ends below the budget once every template has stopped early (the last early stop says why), or goes
// on to the budget with the templates that did not.
TEST(TemplateAuto, AnEarlyStopEndsOneTemplatesShareNotTheRun) {
  std::vector<TuneSummary> sessions = {session("mma", 1, 2136, 0, 3, 0.08), session("wgmma", 2, 496, 0, 6, 0.05),
                                       session("wgmma", 3, 496, 6, 3, 0.04)};
  sessions[0].early_stopped = true;
  sessions[0].stop_reason = "early stop: 2 batches without a better time";
  TuneSummary s = tuner::combine_summaries(sessions, 12);
  EXPECT_FALSE(s.early_stopped) << "wgmma took the rest of the budget";
  EXPECT_EQ(s.stop_reason, "budget of 12 trials reached (trials: mma 3, wgmma 9)");
  // Both stopped early in their shares, then the fastest's finalists were re-measured: an early stop, below budget.
  sessions = {session("mma", 1, 2136, 0, 3, 0.08), session("wgmma", 2, 496, 0, 4, 0.05), session("wgmma", 3, 496, 4, 0, 0.05)};
  sessions[0].early_stopped = sessions[1].early_stopped = true;
  sessions[0].stop_reason = sessions[1].stop_reason = "early stop: 2 batches without a better time";
  s = tuner::combine_summaries(sessions, 100);
  EXPECT_TRUE(s.early_stopped);
  EXPECT_EQ(s.stop_reason, "early stop: 2 batches without a better time (template wgmma) (trials: mma 3, wgmma 4)");
}

TEST(TemplateAuto, TheSessionThatEndedTheRunSaysWhy) {
  std::vector<TuneSummary> sessions = {session("mma", 1, 2136, 0, 5, 0.08), session("wgmma", 2, 496, 0, 5, 0.07),
                                       session("wgmma", 3, 496, 5, 3, 0.05)};
  sessions.back().early_stopped = true;
  sessions.back().stop_reason = "early stop: 3 trials without a better time";
  sessions.back().lanes[0].lost = true;
  TuneSummary s = tuner::combine_summaries(sessions, 100);
  EXPECT_TRUE(s.early_stopped);
  EXPECT_EQ(s.stop_reason, "early stop: 3 trials without a better time (template wgmma) (trials: mma 5, wgmma 8)");
  EXPECT_TRUE(s.lanes[0].lost) << "a lane lost in any session stays lost";
  // Small spaces measured whole before the budget: every template's space exhausted.
  sessions = {session("a", 1, 4, 0, 4, 0.2), session("b", 2, 3, 0, 3, 0.1)};
  s = tuner::combine_summaries(sessions, 100);
  EXPECT_EQ(s.stop_reason, "every template's space exhausted (trials: a 4, b 3)");
  EXPECT_EQ(s.template_name, "b");
  // No successful record anywhere: the first session stands for the run, with no best.
  sessions = {session("a", 7, 4, 0, 2, 0), session("b", 8, 3, 0, 2, 0)};
  s = tuner::combine_summaries(sessions, 4);
  EXPECT_EQ(s.session_id, 7);
  EXPECT_FALSE(s.best);
}

}  // namespace

#include <unistd.h>

#include <filesystem>

#include "templates/registry.h"
#include "tuner/device_registry.h"

namespace {

// The progress line of an auto run shows the run's best and time: it showed the template in work's own best
// (0.0987 ms for wgmma after mma had reached 0.0222) and restarted its elapsed time with each template.
TEST(TemplateAuto, ProgressShowsTheRunsBestAndTimeAcrossTemplates) {
  const auto dir = std::filesystem::temp_directory_path() / ("tuner_auto_progress_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  tuner::TuneOptions o;
  o.workload = tuner::templates::parse_workload("gemm", "M=512,N=512,K=512", "f16");
  o.trials = 8;
  o.strategy = "random";
  o.seed = 3;
  o.batch_size = 2;
  o.remeasure_top = 0;
  o.transfer = false;
  o.worker_executable = TUNER_BIN;
  std::vector<tuner::TuneProgress> seen;
  o.on_progress = [&](const tuner::TuneProgress& p) { seen.push_back(p); };
  const tuner::DeviceTarget device = tuner::resolve_device("sim:h100-sxm");
  tuner::db::TuningDb db((dir / "auto.db").string());
  const auto sessions = tuner::run_template_auto(o, {"gemm_tc_mma", "gemm_tc_wgmma"}, device, db);
  std::filesystem::remove_all(dir);
  ASSERT_GE(sessions.size(), 2u);
  ASSERT_FALSE(seen.empty());
  // After the first session, every line's best is at least as good as that session's best, whatever template it
  // names, and the time goes on from it.
  const TuneSummary& first = sessions.front();
  ASSERT_TRUE(first.best.has_value());
  int later = 0;
  for (const auto& p : seen) {
    if (p.label == first.template_name) continue;
    ++later;
    EXPECT_GT(p.best_ms, 0);
    EXPECT_LE(p.best_ms, first.best->trial.time_ms) << p.label;
    EXPECT_GE(p.elapsed_s, first.wall_s) << p.label;
  }
  EXPECT_GT(later, 0) << "the second template reported progress";
}

}  // namespace
