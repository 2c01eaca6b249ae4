#include "costmodel/features.h"

#include <algorithm>
#include <cmath>

#include "costmodel/analytic_model.h"
#include "costmodel/ring_gemm_model.h"

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

// Device-relative figures: where a config sits against this GPU's balance points, so that records of one
// GPU say something of another (an absolute traffic per FLOP means compute-bound on one GPU and
// memory-bound on another).
const std::vector<std::string>& relative_names() {
  static const std::vector<std::string> n = {"log2_dram_over_compute", "log2_l2_over_compute",
                                             "log2_shared_over_compute", "shared_fraction_of_sm",
                                             "register_fraction_of_sm"};
  return n;
}

const std::vector<std::string>& device_names() {
  static const std::vector<std::string> n = {"sm_count", "peak_fp32_tflops", "dram_tbps", "l2_mb",
                                             "shared_per_sm_kb"};
  return n;
}

}  // namespace

int estimated_registers(const KernelProfile& p) {
  // A producer-ring GEMM is built for one CTA per SM (__launch_bounds__(threads, 1), setmaxnreg moving
  // the producer's registers to the consumers): its launch takes the register file's share per thread
  // (recorded on the H100: 168 with 384 threads, 240 with 256), in allocation units of 8.
  constexpr int kRegisterFile = 65536;
  if (is_ring_gemm(p) && p.threads_per_block > 0)
    return std::min(255, kRegisterFile / p.threads_per_block) / 8 * 8;
  const double ilp = std::max(p.ilp, 1);
  return static_cast<int>(std::min(255.0, ilp + 2 * std::sqrt(ilp) + 24));
}

std::vector<std::string> feature_names(const std::vector<std::string>& knob_names,
                                       const std::vector<std::string>& dim_names) {
  std::vector<std::string> out;
  for (const auto& k : knob_names) out.push_back("knob_log2_" + k);
  out.insert(out.end(), derived_names().begin(), derived_names().end());
  out.insert(out.end(), relative_names().begin(), relative_names().end());
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

  // Time each level would take at its peak, over the time of the FLOPs at the compute peak (log2).
  const double peak_tflops = p.tensor_cores ? std::max(gpu.peak_fp16_tflops, gpu.peak_fp32_tflops) : gpu.peak_fp32_tflops;
  const double compute_s = flops / std::max(peak_tflops * 1e12, 1.0);
  const double shared_gbps = static_cast<double>(gpu.sm_count) * gpu.shared_bank_bytes_per_clk * gpu.boost_clock_ghz;
  auto log2_ratio = [compute_s](double bytes, double gbps) {
    return static_cast<float>(std::log2(std::max(bytes / std::max(gbps * 1e9, 1.0) / compute_s, 1e-6)));
  };
  f.push_back(log2_ratio(p.dram_bytes, gpu.dram_bandwidth_gbps));
  f.push_back(log2_ratio(p.global_bytes / std::max(p.l2_reuse, 1.0), gpu.l2_bandwidth_gbps));
  f.push_back(log2_ratio(p.shared_bytes * std::max(p.shared_conflict_ways, 1.0), shared_gbps));
  f.push_back(static_cast<float>(static_cast<double>(p.dynamic_shared_bytes) / std::max(gpu.shared_per_sm_bytes, 1)));
  f.push_back(static_cast<float>(static_cast<double>(est_regs) * p.threads_per_block /
                                 std::max(gpu.registers_per_sm, 1)));

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
