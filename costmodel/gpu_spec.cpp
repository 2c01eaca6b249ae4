#include "costmodel/gpu_spec.h"

#include <cctype>
#include <cmath>

namespace tuner::costmodel {

namespace {

GpuSpec h100_sxm() {
  GpuSpec s;
  s.key = "h100-sxm";
  s.name = "NVIDIA H100 SXM5 80GB";
  s.model = "H100";
  s.cc_major = 9;
  s.cc_minor = 0;
  s.sm_count = 132;
  s.boost_clock_ghz = 1.98;
  s.peak_fp32_tflops = 66.9;  // 132 SM x 128 lanes x 2 x 1.98 GHz
  s.peak_fp16_tflops = 989.4;
  s.peak_bf16_tflops = 989.4;
  s.memory_gb = 80;
  s.dram_bandwidth_gbps = 3350;
  s.l2_bandwidth_gbps = 7500;
  s.l2_bytes = 50LL * 1024 * 1024;
  s.shared_per_sm_bytes = 228 * 1024;
  s.shared_per_block_bytes = 227 * 1024;
  s.shared_carveouts_kb = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};  // Hopper tuning guide
  s.registers_per_sm = 65536;
  s.max_threads_per_sm = 2048;
  s.max_blocks_per_sm = 32;
  s.nvlink_bandwidth_gbps = 900;
  return s;
}

/// The H200: the H100 SXM's chip (same SMs, clocks and peaks) with 141 GB of HBM3e at 4.8 TB/s. It reports the
/// same compute capability and SM count, so a device is matched to it by name or memory (find_gpu_spec).
GpuSpec h200_sxm() {
  GpuSpec s = h100_sxm();
  s.key = "h200-sxm";
  s.name = "NVIDIA H200 SXM 141GB";
  s.model = "H200";
  s.memory_gb = 141;
  s.dram_bandwidth_gbps = 4800;
  return s;
}

GpuSpec a100_sxm4_80gb() {
  GpuSpec s;
  s.key = "a100-sxm4-80gb";
  s.name = "NVIDIA A100-SXM4-80GB";
  s.model = "A100";
  s.cc_major = 8;
  s.cc_minor = 0;
  s.sm_count = 108;
  s.boost_clock_ghz = 1.41;
  s.peak_fp32_tflops = 19.5;  // 108 SM x 64 lanes x 2 x 1.41 GHz
  s.peak_fp16_tflops = 312;
  s.peak_bf16_tflops = 312;
  s.memory_gb = 80;
  s.dram_bandwidth_gbps = 2039;
  s.l2_bandwidth_gbps = 5000;
  s.l2_bytes = 40LL * 1024 * 1024;
  s.shared_per_sm_bytes = 164 * 1024;
  s.shared_per_block_bytes = 163 * 1024;
  s.shared_carveouts_kb = {0, 8, 16, 32, 64, 100, 132, 164};  // Ampere tuning guide
  s.registers_per_sm = 65536;
  s.max_threads_per_sm = 2048;
  s.max_blocks_per_sm = 32;
  s.fp32_lanes_per_sm = 64;
  s.nvlink_bandwidth_gbps = 600;
  return s;
}

}  // namespace

const std::vector<GpuSpec>& gpu_specs() {
  static const std::vector<GpuSpec> table = {h100_sxm(), a100_sxm4_80gb(), h200_sxm()};
  return table;
}

std::optional<GpuSpec> find_gpu_spec(std::string_view key) {
  for (const auto& s : gpu_specs())
    if (s.key == key) return s;
  return std::nullopt;
}

std::optional<GpuSpec> find_gpu_spec(int cc_major, int cc_minor, int sm_count, std::string_view name,
                                     int64_t memory_bytes) {
  std::vector<const GpuSpec*> same;
  for (const auto& s : gpu_specs())
    if (s.cc_major == cc_major && s.cc_minor == cc_minor && s.sm_count == sm_count) same.push_back(&s);
  if (same.empty()) return std::nullopt;
  // Parts of one chip (H100, H200) differ in memory. The name decides: a table key in it ("replay:sim:h200-sxm", a
  // sim device's recording), else the model as a word of it ("NVIDIA H200"; "NVIDIA GH200 480GB" is none); else the
  // memory nearest to the device's, else the first of the table.
  for (const GpuSpec* s : same)
    if (name.find(s->key) != std::string_view::npos) return *s;
  const auto names_model = [&](std::string_view model) {
    for (size_t at = name.find(model); at != std::string_view::npos; at = name.find(model, at + 1))
      if (at == 0 || !std::isalnum(static_cast<unsigned char>(name[at - 1]))) return true;
    return false;
  };
  for (const GpuSpec* s : same)
    if (!s->model.empty() && names_model(s->model)) return *s;
  const GpuSpec* best = same.front();
  if (memory_bytes > 0)
    for (const GpuSpec* s : same)
      if (std::abs(s->memory_gb * 1e9 - memory_bytes) < std::abs(best->memory_gb * 1e9 - memory_bytes)) best = s;
  return *best;
}

std::string gpu_spec_keys() {
  std::string out;
  for (const auto& s : gpu_specs()) out += (out.empty() ? "" : ", ") + s.key;
  return out;
}

}  // namespace tuner::costmodel
