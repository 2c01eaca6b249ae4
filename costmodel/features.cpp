#include "costmodel/features.h"

#include <algorithm>
#include <cmath>

#include "costmodel/analytic_model.h"

namespace tuner::costmodel {

namespace {

float log2p(double v) { return static_cast<float>(std::log2(std::max(v, 0.0) + 1.0)); }

const std::vector<std::string>& derived_names() {
  static const std::vector<std::string> n = {
      "log2_threads",        "est_registers",       "occupancy",          "blocks_per_sm",
      "log2_blocks",         "waves",               "tail_efficiency",    "log2_shared_bytes",
      "l2_bytes_per_flop",   "shared_bytes_per_flop", "dram_bytes_per_flop", "arith_intensity_l2",
      "vector_width",        "stages",              "log2_ilp",           "shared_conflict_ways",
      "log2_loop_iters",     "l2_reuse"};
  return n;
}

const std::vector<std::string>& device_names() {
  static const std::vector<std::string> n = {"sm_count", "peak_fp32_tflops", "dram_tbps", "l2_mb",
                                             "shared_per_sm_kb"};
  return n;
}

}  // namespace

int estimated_registers(const KernelProfile& p) {
  const double ilp = std::max(p.ilp, 1);
  return static_cast<int>(std::min(255.0, ilp + 2 * std::sqrt(ilp) + 24));
}

std::vector<std::string> feature_names(const std::vector<std::string>& knob_names,
                                       const std::vector<std::string>& dim_names) {
  std::vector<std::string> out;
  for (const auto& k : knob_names) out.push_back("knob_log2_" + k);
  out.insert(out.end(), derived_names().begin(), derived_names().end());
  for (const auto& d : dim_names) out.push_back("log2_" + d);
  out.push_back("dtype_bytes");
  out.insert(out.end(), device_names().begin(), device_names().end());
  return out;
}

std::vector<float> kernel_features(const std::vector<int64_t>& knob_values, const KernelProfile& p,
                                   const std::vector<int64_t>& dims, int dtype_bytes, const GpuSpec& gpu) {
  std::vector<float> f;
  f.reserve(knob_values.size() + 18 + dims.size() + 6);
  for (int64_t v : knob_values) f.push_back(log2p(static_cast<double>(v)));

  const double ilp = std::max(p.ilp, 1);
  const int est_regs = estimated_registers(p);
  const Occupancy o = occupancy(p, {est_regs, 0, 0}, gpu);
  const double slots = static_cast<double>(std::max(o.blocks_per_sm, 1)) * gpu.sm_count;
  const double waves = static_cast<double>(p.blocks) / slots;
  const double tail = waves > 0 ? waves / std::ceil(waves) : 0;
  const double flops = std::max(p.flops, 1.0);
  f.push_back(log2p(p.threads_per_block));
  f.push_back(static_cast<float>(est_regs));
  f.push_back(static_cast<float>(o.occupancy));
  f.push_back(static_cast<float>(o.blocks_per_sm));
  f.push_back(log2p(static_cast<double>(p.blocks)));
  f.push_back(static_cast<float>(waves));
  f.push_back(static_cast<float>(tail));
  f.push_back(log2p(p.dynamic_shared_bytes));
  f.push_back(static_cast<float>(p.global_bytes / flops));
  f.push_back(static_cast<float>(p.shared_bytes / flops));
  f.push_back(static_cast<float>(p.dram_bytes / flops));
  f.push_back(static_cast<float>(flops / std::max(p.global_bytes, 1.0)));
  f.push_back(static_cast<float>(p.vector_width));
  f.push_back(static_cast<float>(p.stages));
  f.push_back(log2p(ilp));
  f.push_back(static_cast<float>(p.shared_conflict_ways));
  f.push_back(log2p(static_cast<double>(p.main_loop_iterations)));
  f.push_back(static_cast<float>(p.l2_reuse));

  for (int64_t d : dims) f.push_back(log2p(static_cast<double>(d)));
  f.push_back(static_cast<float>(dtype_bytes));

  f.push_back(static_cast<float>(gpu.sm_count));
  f.push_back(static_cast<float>(gpu.peak_fp32_tflops));
  f.push_back(static_cast<float>(gpu.dram_bandwidth_gbps / 1000.0));
  f.push_back(static_cast<float>(gpu.l2_bytes / 1048576.0));
  f.push_back(static_cast<float>(gpu.shared_per_sm_bytes / 1024.0));
  return f;
}

}  // namespace tuner::costmodel
