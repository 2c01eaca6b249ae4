// The GPU spec table: the published figures of each GPU model tuner knows,
// shared by the sim devices (analytic kernel estimates) and the parallel
// planner (compute and communication costs).
//
// Figures are the vendor's datasheet values for the SXM parts at boost clock;
// tensor-core peaks are dense (no sparsity). This file holds data and lookups
// only; the models that use it live in analytic_model.h and search/parallel/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tuner::costmodel {

struct GpuSpec {
  std::string key;                    ///< Table key, e.g. "h100-sxm" (sim device "sim:h100-sxm").
  std::string name;                   ///< Marketing name, e.g. "NVIDIA H100 SXM5 80GB".
  std::string model;                  ///< What a real device's name contains, e.g. "H100" ("NVIDIA H100 80GB HBM3").
  int cc_major = 0, cc_minor = 0;     ///< Compute capability.
  int sm_count = 0;                   ///< Streaming multiprocessors.
  double boost_clock_ghz = 0;         ///< SM boost clock in GHz.
  double peak_fp32_tflops = 0;        ///< Peak FP32 (FMA = 2 FLOP) in TFLOP/s.
  double peak_fp16_tflops = 0;        ///< Peak dense FP16 tensor-core TFLOP/s (fp32 accumulate).
  double peak_bf16_tflops = 0;        ///< Peak dense BF16 tensor-core TFLOP/s.
  double memory_gb = 0;               ///< Device memory in GB (1e9 bytes).
  double dram_bandwidth_gbps = 0;     ///< DRAM bandwidth in GB/s.
  double l2_bandwidth_gbps = 0;       ///< Approximate L2 bandwidth in GB/s (not published; an estimate).
  int64_t l2_bytes = 0;               ///< L2 cache size in bytes.
  int shared_per_sm_bytes = 0;        ///< Shared memory per SM in bytes (configurable carve-out maximum).
  int shared_per_block_bytes = 0;     ///< Largest shared memory per block with opt-in, in bytes.
  /// The shared-memory capacities (KB per SM) the unified L1/shared array can be split into; the driver
  /// picks one per kernel (CUDA tuning guides: the "carveout").
  std::vector<int> shared_carveouts_kb;
  int shared_bank_bytes_per_clk = 128;  ///< Shared-memory bandwidth per SM per clock in bytes.
  int registers_per_sm = 0;           ///< 32-bit registers per SM.
  int max_registers_per_thread = 255;
  int max_threads_per_sm = 0;
  int max_threads_per_block = 1024;
  int max_blocks_per_sm = 0;
  int warp_size = 32;
  int fp32_lanes_per_sm = 128;        ///< FP32 FMA lanes per SM per clock.
  double nvlink_bandwidth_gbps = 0;   ///< Per-GPU NVLink bandwidth (bidirectional total) in GB/s.

  /// "sm_90" etc.: the NVRTC architecture for this GPU.
  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
  int64_t memory_bytes() const { return static_cast<int64_t>(memory_gb * 1e9); }
};

/// Every GPU in the table, in a fixed order.
const std::vector<GpuSpec>& gpu_specs();
/// Looks a GPU up by key ("h100-sxm"); nullopt when unknown.
std::optional<GpuSpec> find_gpu_spec(std::string_view key);
/// Looks a real GPU up by compute capability and SM count (how the tuner matches devices). Parts of one chip (an
/// H100 and an H200: the same CC and SMs) are told apart by the model in the device's name ("NVIDIA H200"), else
/// by the memory nearest to memory_bytes; without either, the first of the table (the H100).
std::optional<GpuSpec> find_gpu_spec(int cc_major, int cc_minor, int sm_count, std::string_view name = {},
                                     int64_t memory_bytes = 0);
/// "h100-sxm, a100-sxm4-80gb, h200-sxm": for error messages.
std::string gpu_spec_keys();

}  // namespace tuner::costmodel
