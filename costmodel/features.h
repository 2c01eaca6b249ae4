// Featurization: pure functions from a candidate (its knob values, the
// template's KernelProfile, the workload's dimensions and the GPU) to the
// feature vector the cost model reads.
//
// Features come in four kinds so that one model spans shapes and GPUs: knob
// values (log2), derived launch and traffic figures (threads, estimated
// registers, occupancy, waves and tail efficiency, traffic per FLOP at each
// level, arithmetic intensity, vector width, stages, ILP, bank conflicts),
// workload figures (log2 of each dimension, bytes per element) and device
// figures (SM count, peak FLOP/s, bandwidths). The analytic estimate itself is
// not a feature. Registers are estimated from the register tile for every
// row alike, so measured and unmeasured candidates are described the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/gpu_spec.h"
#include "costmodel/kernel_profile.h"

namespace tuner::costmodel {

/// Registers per thread estimated from the register tile (accumulators, two fragments, ~24 for
/// addresses), for candidates that have not been compiled; a producer-ring GEMM (one CTA per SM by
/// design) gets the register file's share per thread.
int estimated_registers(const KernelProfile& p);

/// Names of the features kernel_features() returns, in order.
std::vector<std::string> feature_names(const std::vector<std::string>& knob_names,
                                       const std::vector<std::string>& dim_names);

/// The feature vector of one candidate.
std::vector<float> kernel_features(const std::vector<int64_t>& knob_values, const KernelProfile& p,
                                   const std::vector<int64_t>& dims, int dtype_bytes, const GpuSpec& gpu);

}  // namespace tuner::costmodel
