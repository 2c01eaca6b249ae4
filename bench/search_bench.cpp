// Benchmark of the model-guided search's own cost (not a test): time to refit
// the XGBoost model and propose the next batch of 64 by simulated annealing,
// on the GEMM space for sim:h100-sxm, as the history grows. Targets come from
// the analytic model with registers estimated from the register tile (no
// compilation), which is enough to time the search machinery. Prints a table
// and writes results/search_bench.json.
//
//   build/bin/search_bench [--out FILE]
//
// A second table times the same on a synthetic space of more than 100,000
// configs with every batch a full 64 (the first-batch cap turned off: the
// proposal's worst case), and a third times the bo strategy (Gaussian process
// fit + expected-improvement proposal) there as its batches grow to 64. The
// search-efficiency comparison (trials to 95% of the optimum) is
// bench/search_efficiency_bench. Last, the first proposal with the analytic
// prior: its ranking alone on the synthetic space, and on the GEMM space with
// the prior's best compiled by NVRTC (cold cache), compile time apart.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "costmodel/analytic_model.h"
#include "costmodel/features.h"
#include "costmodel/xgb_ensemble.h"
#include "search/bayes_opt_strategy.h"
#include "search/model_guided_strategy.h"
#include "templates/gemm_f32.h"
#include "tuner/compile_cache.h"
#include "tuner/compile_pool.h"
#include "tuner/compiled_resources.h"
#include "tuner/device_registry.h"
#include "tuner/nvrtc_builder.h"
#include "tuner/strategy_factory.h"

using namespace tuner;

namespace {

/// xgb's first proposal with the compiled prior on the GEMM space: the analytic model ranks prior_pool
/// configs, NVRTC compiles the best prior_refine (a fresh cache: cold compiles), the analytic model re-ranks
/// them with their registers and spills. Prints the time of each part, returns them.
nlohmann::json time_compiled_prior(const templates::KernelTemplate& tmpl, const search::ConfigSpace& space,
                                   const templates::Workload& w, const DeviceTarget& device) {
  const auto dir = std::filesystem::temp_directory_path() / ("search_bench_cache_" + std::to_string(::getpid()));
  CompileCache cache(dir.string());
  NvrtcBuilder builder(&cache);
  CompilePool pool(builder, 0);
  CompiledResources compiled(tmpl, space, w, device.limits, pool);
  StrategyOptions options;
  options.analytic_prior = true;
  options.resources = [&compiled](const std::vector<search::Config>& cs) { return compiled.resources(cs); };
  auto strategy = build_strategy("xgb", space, 1, tmpl, w, device.gpu, options);
  const auto t0 = std::chrono::steady_clock::now();
  const size_t batch = strategy->propose(64).size();
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& st = compiled.stats();
  std::printf("\nxgb's first proposal with the compiled prior, gemm M=N=K=1000 on sim:h100-sxm (batch %zu): %.1f s, "
              "of which %.1f s waiting for %lld cold NVRTC compiles (%lld failed; %.1f s NVRTC time on %u threads) and "
              "%.3f s ranking\n",
              batch, total_s, st.wall_s, static_cast<long long>(st.compiled + st.failed), static_cast<long long>(st.failed),
              st.compile_cpu_s, pool.size(), total_s - st.wall_s);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return {{"batch", batch}, {"total_s", total_s}, {"compile_wait_s", st.wall_s}, {"compiles", st.compiled + st.failed},
          {"failed", st.failed}, {"nvrtc_s", st.compile_cpu_s}, {"threads", pool.size()},
          {"ranking_s", total_s - st.wall_s}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path = "results/search_bench.json";
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--out") out_path = argv[i + 1];

  auto device = resolve_device("sim:h100-sxm");
  templates::GemmF32Template tmpl;
  auto w = templates::parse_workload("gemm", "M=1000,N=1000,K=1000", "f32");
  auto space = tmpl.space(w, device.limits);
  auto strategy = build_strategy("xgb", space, 1, tmpl, w, device.gpu);

  // The time a config would take by the analytic model, registers estimated from the register tile.
  auto simulate = [&](const search::Config& c) {
    auto p = tmpl.profile(space, c, w);
    auto e = costmodel::estimate(p, {costmodel::estimated_registers(p), 0, 0}, device.gpu);
    return search::TrialOutcome{e.launchable, e.time_ms};
  };

  std::printf("Model-guided search on gemm M=N=K=1000, sim:h100-sxm space of %llu configs, batches of up to 64\n",
              static_cast<unsigned long long>(space.size()));
  std::printf("  %8s %12s %12s %14s\n", "history", "refit s", "propose s", "best so far ms");
  nlohmann::json rows = nlohmann::json::array();
  double best = 0;
  size_t measured = 0;
  for (int round = 0; round < 8; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    auto batch = strategy->propose(64);
    const double propose_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<search::TrialOutcome> outcomes;
    for (const auto& c : batch) {
      outcomes.push_back(simulate(c));
      if (outcomes.back().ok && (best == 0 || outcomes.back().time_ms < best)) best = outcomes.back().time_ms;
    }
    t0 = std::chrono::steady_clock::now();
    strategy->observe(batch, outcomes);
    const double refit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    measured += batch.size();
    const size_t history = measured;
    std::printf("  %8zu %12.3f %12.3f %14.4f\n", history, refit_s, propose_s, best);
    rows.push_back({{"history", history}, {"refit_s", refit_s}, {"propose_s", propose_s}, {"best_ms", best}});
  }

  // The same machinery on a space of more than 100,000 valid configs (the bound: refit plus a
  // proposal of 64 within 1 s). Synthetic: 7 knobs, as many features as the GEMM featurizer gives,
  // and a smooth objective with one optimum, so the timing reflects the search and not the oracle.
  search::ConfigSpace big({{"A", {1, 2, 4, 8, 16, 32, 64, 128}, ""},
                           {"B", {1, 2, 4, 8, 16, 32, 64, 128}, ""},
                           {"C", {1, 2, 3, 4, 5, 6, 7, 8}, ""},
                           {"D", {1, 2, 4, 8, 16, 32}, ""},
                           {"E", {0, 1, 2, 3, 4, 5}, ""},
                           {"F", {1, 2, 3, 4, 5, 6, 7}, ""},
                           {"G", {1, 2, 3}, ""}},
                          {});
  const size_t feature_count = costmodel::feature_names({"BM", "BN", "TM", "TN", "BK", "VEC", "STAGES", "PAD", "GROUP_M", "WARP_N", "FRAG_DB", "CP_ASYNC"},
                                                        {"M", "N", "K"})
                                   .size();
  search::Featurizer featurize = [feature_count](const search::Config& c) {
    std::vector<float> f;
    for (int64_t v : c) f.push_back(static_cast<float>(std::log2(static_cast<double>(v) + 1.0)));
    for (size_t i = 0; f.size() < feature_count; ++i)
      f.push_back(f[i % c.size()] * f[(i + 3) % c.size()] - static_cast<float>(i % 5));
    return f;
  };
  auto objective = [](const search::Config& c) {
    double d = 0;
    const double target[] = {4, 3, 4, 3, 2, 4, 1};  // log2 / index coordinates of the optimum
    for (size_t i = 0; i < c.size(); ++i) {
      const double x = i < 2 || i == 3 ? std::log2(static_cast<double>(c[i])) : static_cast<double>(c[i]);
      d += (x - target[i]) * (x - target[i]);
    }
    return search::TrialOutcome{true, 1.0 + d};
  };
  costmodel::EnsembleParams xp;  // the ensemble (StrategyOptions::xgb_members 5): the costlier model
  xp.member.seed = 1;
  search::AnnealingParams full_batches;
  full_batches.first_batch = 0;  // every proposal a full 64: the worst case of the annealing's cost
  search::ModelGuidedStrategy big_search(big, 1, std::make_unique<costmodel::XgbEnsemble>(xp), featurize, full_batches);
  std::printf("\nThe same on a synthetic space of %llu configs (%zu features), batch 64\n",
              static_cast<unsigned long long>(big.size()), feature_count);
  std::printf("  %8s %12s %12s %12s\n", "history", "refit s", "propose s", "sum s");
  nlohmann::json big_rows = nlohmann::json::array();
  double worst = 0;
  for (int round = 0; round < 8; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    auto batch = big_search.propose(64);
    const double propose_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<search::TrialOutcome> outcomes;
    for (const auto& c : batch) outcomes.push_back(objective(c));
    t0 = std::chrono::steady_clock::now();
    big_search.observe(batch, outcomes);
    const double refit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int history = (round + 1) * 64;
    worst = std::max(worst, refit_s + propose_s);
    std::printf("  %8d %12.3f %12.3f %12.3f\n", history, refit_s, propose_s, refit_s + propose_s);
    big_rows.push_back({{"history", history}, {"refit_s", refit_s}, {"propose_s", propose_s}});
  }
  std::printf("  worst refit + proposal: %.3f s (bound: 1 s)\n", worst);

  // The lone model (the default, StrategyOptions::xgb_members 1) on the same space and load.
  costmodel::XgbParams lone_params;
  lone_params.seed = 1;
  search::ModelGuidedStrategy lone_search(big, 1, std::make_unique<costmodel::XgbModel>(lone_params), featurize,
                                          full_batches);
  double lone_worst = 0;
  for (int round = 0; round < 8; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    auto batch = lone_search.propose(64);
    std::vector<search::TrialOutcome> outcomes;
    for (const auto& c : batch) outcomes.push_back(objective(c));
    lone_search.observe(batch, outcomes);
    lone_worst = std::max(lone_worst, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("  a lone boosted model (no ensemble) on the same space: worst refit + proposal %.3f s\n", lone_worst);

  // The prior's first proposal on the same space: prior_pool configs ranked by a prior (the objective
  // itself, as cheap as the analytic model), the best prior_refine re-scored by a refiner (here without
  // compiling; the GEMM row below compiles), a full batch of 64 picked for diversity.
  search::AnnealingParams prior_params = full_batches;
  prior_params.prior_first_batch = 0;
  search::Prior synthetic_prior = [&objective](const search::Config& c) { return -objective(c).time_ms; };
  search::PriorRefiner synthetic_refine = [&objective](const std::vector<search::Config>& cs) {
    std::vector<double> out;
    for (const auto& c : cs) out.push_back(-objective(c).time_ms);
    return out;
  };
  search::ModelGuidedStrategy prior_search(big, 1, std::make_unique<costmodel::XgbModel>(lone_params), featurize,
                                           prior_params, synthetic_prior, synthetic_refine);
  auto tp = std::chrono::steady_clock::now();
  const size_t prior_batch = prior_search.propose(64).size();
  const double prior_propose_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - tp).count();
  std::printf("  the prior's first proposal (%zu configs ranked, %zu refined, batch %zu): %.3f s\n",
              prior_params.prior_pool, prior_search.prior_refined(), prior_batch, prior_propose_s);
  const nlohmann::json compiled_prior = time_compiled_prior(tmpl, space, w, device);

  // bo on the same space: its batches grow (8, 8, 16, 32, 64, ...); the process is fitted on at most
  // 256 rows, so the cost stops growing once the history passes them.
  search::BayesOptStrategy bo(big, 1);
  std::printf("\nbo (Gaussian process + expected improvement) on the same space\n");
  std::printf("  %8s %6s %12s %12s %12s\n", "history", "batch", "fit s", "propose s", "sum s");
  nlohmann::json bo_rows = nlohmann::json::array();
  double bo_worst_64 = 0;
  size_t bo_history = 0;
  while (bo_history < 640) {
    auto t0 = std::chrono::steady_clock::now();
    auto batch = bo.propose(64);
    const double propose_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<search::TrialOutcome> outcomes;
    for (const auto& c : batch) outcomes.push_back(objective(c));
    t0 = std::chrono::steady_clock::now();
    bo.observe(batch, outcomes);
    const double fit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bo_history += batch.size();
    if (batch.size() == 64) bo_worst_64 = std::max(bo_worst_64, fit_s + propose_s);
    std::printf("  %8zu %6zu %12.3f %12.3f %12.3f\n", bo_history, batch.size(), fit_s, propose_s, fit_s + propose_s);
    bo_rows.push_back({{"history", bo_history}, {"batch", batch.size()}, {"fit_s", fit_s}, {"propose_s", propose_s}});
  }
  std::printf("  worst fit + proposal of a batch of 64: %.3f s (bound: 1 s)\n", bo_worst_64);

  std::filesystem::path path(out_path);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << nlohmann::json{{"space_size", space.size()},
                                        {"rounds", rows},
                                        {"big_space_size", big.size()},
                                        {"big_rounds", big_rows},
                                        {"big_worst_s", worst},
                                        {"big_lone_model_worst_s", lone_worst},
                                        {"big_prior_first_proposal_s", prior_propose_s},
                                        {"compiled_prior", compiled_prior},
                                        {"bo_rounds", bo_rows},
                                        {"bo_worst_64_s", bo_worst_64}}
                             .dump(2)
                      << "\n";
  std::printf("results written to %s\n", out_path.c_str());
  return 0;
}
