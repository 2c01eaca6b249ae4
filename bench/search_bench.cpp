// Benchmark of the model-guided search's own cost (not a test): time to refit
// the XGBoost model and propose the next batch of 64 by simulated annealing,
// on the GEMM space for sim:h100-sxm, as the history grows. Targets come from
// the analytic model with registers estimated from the register tile (no
// compilation), which is enough to time the search machinery. Prints a table
// and writes results/search_bench.json.
//
//   build/bin/search_bench [--out FILE]
//
// The search-efficiency comparison of issue 4 (trials to 95% of the optimum,
// xgb vs ga vs random over workloads and seeds) is still to be added here.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "costmodel/analytic_model.h"
#include "costmodel/features.h"
#include "search/model_guided_strategy.h"
#include "templates/gemm_f32.h"
#include "tuner/device_registry.h"
#include "tuner/strategy_factory.h"

using namespace tuner;

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

  std::printf("Model-guided search on gemm M=N=K=1000, sim:h100-sxm space of %llu configs, batch 64\n",
              static_cast<unsigned long long>(space.size()));
  std::printf("  %8s %12s %12s %14s\n", "history", "refit s", "propose s", "best so far ms");
  nlohmann::json rows = nlohmann::json::array();
  double best = 0;
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
    strategy->update(batch, outcomes);
    const double refit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int history = (round + 1) * 64;
    std::printf("  %8d %12.3f %12.3f %14.4f\n", history, refit_s, propose_s, best);
    rows.push_back({{"history", history}, {"refit_s", refit_s}, {"propose_s", propose_s}, {"best_ms", best}});
  }
  std::filesystem::path path(out_path);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << nlohmann::json{{"space_size", space.size()}, {"rounds", rows}}.dump(2) << "\n";
  std::printf("results written to %s\n", out_path.c_str());
  return 0;
}
