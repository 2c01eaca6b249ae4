// Builds a search strategy by name, wiring the model-guided one (`xgb`) to its
// XGBoost cost model and to a featurizer over the template's profiles.
#pragma once

#include <memory>
#include <string>

#include "costmodel/gpu_spec.h"
#include "search/strategy.h"
#include "templates/kernel_template.h"

namespace tuner {

/// "xgb", "random" or "grid"; throws std::invalid_argument for other names. The space, template and
/// workload must outlive the strategy.
std::unique_ptr<search::SearchStrategy> build_strategy(const std::string& name, const search::ConfigSpace& space,
                                                       uint64_t seed, const templates::KernelTemplate& tmpl,
                                                       const templates::Workload& workload,
                                                       const costmodel::GpuSpec& gpu);

}  // namespace tuner
