// Builds a search strategy by name, wiring the model-guided one (`xgb`) to its
// XGBoost cost model, to a featurizer over the template's profiles and
// (optionally, StrategyOptions) to the analytic model of the device as the
// prior that ranks its first proposals, re-ranking the prior's best few by the
// same model fed their compiled registers and spills when it is given a
// source of them (tuner/compiled_resources.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "costmodel/gpu_spec.h"
#include "search/model_guided_strategy.h"
#include "search/strategy.h"
#include "templates/kernel_template.h"

namespace tuner {

/// Per config, in order: its resources as compiled (registers, static shared memory, local bytes), or
/// nullopt when it does not compile (CompiledResources::resources, or a recording's resources).
using ResourcesOf =
    std::function<std::vector<std::optional<costmodel::KernelResources>>(const std::vector<search::Config>&)>;

struct StrategyOptions {
  /// xgb: rank the first proposals by the analytic model's estimate (registers estimated from the
  /// register tile, or compiled: `resources`) until the model has rows to learn from; the first batch is
  /// then the prior's best 8. Off (the default here): the first batch is drawn at random. A tuning session
  /// turns it on with compiled resources on cuda and replay devices (TuneOptions::prior). On the one real
  /// recording (softmax f16 on an H100, 20 seeds, bench/search_efficiency_bench) the estimated registers
  /// alone take a median 18.5 trials to 95% of the best (random 22.5); re-ranked with compiled ones, 1.
  bool analytic_prior = false;
  /// xgb with analytic_prior: where the prior's best annealing.prior_refine configs get their compiled
  /// resources; the analytic model then ranks them with those instead of estimated registers (a config
  /// that does not compile ranks last). Empty: estimated registers only.
  ResourcesOf resources;
  /// xgb: boosted models in the cost model. With more than one (an XgbEnsemble of bootstrap members),
  /// candidates are picked by an upper confidence bound on the members' mean and spread; 1 (the default)
  /// is a lone model with a fixed 5% share of random picks. 1 because the ensemble of 5 measured no
  /// better: held-out workloads 73 of 96 cases (xgb N >= random 3N) against 81 for the lone model (with
  /// the local share and batch growth of search::AnnealingParams; 3 seeds, bench/search_efficiency_bench).
  int xgb_members = 1;
  /// xgb: the search's parameters (batch growth, confidence bound, annealing); defaults as documented there.
  search::AnnealingParams annealing;
  /// xgb: the members' XGBoost objective ("rank:pairwise", AutoTVM's; or a pointwise one such as
  /// "reg:squarederror" on the same targets).
  std::string xgb_objective = "rank:pairwise";
  /// xgb, rank:pairwise: random partners per row and boosting round (costmodel::XgbParams::pairs_per_row;
  /// XGBoost's and AutoTVM's default is 1). 8 because a session's model learns from 8-64 rows, where one
  /// partner per round leaves the pairwise gradient noisy: fitted on 64 random rows of the sim's H100
  /// 1024^3 f32 space, Spearman over the space 0.86-0.92 with 1 partner, 0.94-0.95 with 8; median trials to
  /// 95% of the best over the benchmark's 12 sim rows (20 seeds) 28 -> 22; real recordings and the
  /// held-out check unchanged within seed noise (bench/search_efficiency_bench, docs/benchmarks.md).
  int xgb_pairs_per_row = 8;
};

/// "xgb", "bo", "ga", "random" or "grid"; throws std::invalid_argument for other names. The space,
/// template and workload must outlive the strategy.
std::unique_ptr<search::SearchStrategy> build_strategy(const std::string& name, const search::ConfigSpace& space,
                                                       uint64_t seed, const templates::KernelTemplate& tmpl,
                                                       const templates::Workload& workload,
                                                       const costmodel::GpuSpec& gpu,
                                                       const StrategyOptions& options = {});

}  // namespace tuner
