#include "tuner/strategy_factory.h"

#include <cmath>

#include "costmodel/analytic_model.h"
#include "costmodel/features.h"
#include "costmodel/xgb_ensemble.h"
#include "costmodel/xgboost_model.h"
#include "search/model_guided_strategy.h"

namespace tuner {

namespace {
constexpr double kWontRun = -1e30;  // the prior's value of a config that cannot launch or compile

/// Minus the log of the analytic model's time (larger = expected faster).
double prior_value(const costmodel::KernelProfile& p, const costmodel::KernelResources& r, const costmodel::GpuSpec& gpu) {
  const auto e = costmodel::estimate(p, r, gpu);
  return e.launchable && e.time_ms > 0 ? -std::log(e.time_ms) : kWontRun;
}
}  // namespace

std::unique_ptr<search::SearchStrategy> build_strategy(const std::string& name, const search::ConfigSpace& space,
                                                       uint64_t seed, const templates::KernelTemplate& tmpl,
                                                       const templates::Workload& workload,
                                                       const costmodel::GpuSpec& gpu, const StrategyOptions& options) {
  if (name != "xgb") return search::make_strategy(name, space, seed);
  std::vector<int64_t> dims;
  for (const auto& [n, v] : workload.dims) dims.push_back(v);
  const int dtype_bytes = templates::dtype_bytes(workload.dtype);
  search::Featurizer featurize = [&space, &tmpl, workload, dims, dtype_bytes, gpu](const search::Config& c) {
    return costmodel::kernel_features(c, tmpl.profile(space, c, workload), dims, dtype_bytes, gpu);
  };
  search::Prior prior;
  search::PriorRefiner refine;
  if (options.analytic_prior) {
    prior = [&space, &tmpl, workload, gpu](const search::Config& c) {
      const auto p = tmpl.profile(space, c, workload);
      return prior_value(p, {costmodel::estimated_registers(p), 0, 0}, gpu);
    };
    if (options.resources)
      refine = [&space, &tmpl, workload, gpu, of = options.resources](const std::vector<search::Config>& configs) {
        const auto resources = of(configs);
        std::vector<double> out;
        for (size_t i = 0; i < configs.size(); ++i)
          out.push_back(i < resources.size() && resources[i]
                            ? prior_value(tmpl.profile(space, configs[i], workload), *resources[i], gpu)
                            : kWontRun);
        return out;
      };
  }
  std::unique_ptr<costmodel::CostModel> model;
  if (options.xgb_members > 1) {
    costmodel::EnsembleParams params;
    params.members = options.xgb_members;
    params.member.seed = seed;
    params.member.objective = options.xgb_objective;
    params.member.pairs_per_row = options.xgb_pairs_per_row;
    model = std::make_unique<costmodel::XgbEnsemble>(params);
  } else {
    costmodel::XgbParams params;
    params.seed = seed;
    params.objective = options.xgb_objective;
    params.pairs_per_row = options.xgb_pairs_per_row;
    model = std::make_unique<costmodel::XgbModel>(params);
  }
  return std::make_unique<search::ModelGuidedStrategy>(space, seed, std::move(model),
                                                       std::move(featurize), options.annealing,
                                                       std::move(prior), std::move(refine));
}

}  // namespace tuner
