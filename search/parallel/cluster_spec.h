// The cluster the planner plans for: nodes of identical GPUs (from the GPU spec
// table), the memory each GPU offers, and the two links between them: inside a
// node (NVLink) and across nodes (InfiniBand), each with a bandwidth and a latency.
//
// Presets dgx-a100:NODES, dgx-h100:NODES and dgx-h200:NODES, or a JSON file. This file parses
// and validates; collective costs over these links live in collective_cost.h.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "costmodel/gpu_spec.h"

namespace tuner::parallel {

// What the planner accepts (larger values are refused with a message naming the limit).
inline constexpr int64_t kMaxClusterGpus = 1 << 20;    ///< GPUs in a cluster: nodes x gpus_per_node <= 1,048,576.
inline constexpr double kMaxMemoryGb = 100000;         ///< Memory per GPU in GB (1e9 bytes).
/// Memory per GPU the planner keeps free by default (CUDA context, workspaces, fragmentation): a cluster must have more.
inline constexpr double kMemoryReserveBytes = 2e9;
inline constexpr double kMaxBandwidthGbps = 1000000;   ///< Link bandwidth in GB/s.
inline constexpr double kMaxLatencyUs = 1000000;       ///< Link latency in microseconds.

/// One kind of link between two GPUs: alpha (latency) and per-GPU bandwidth in one direction.
struct LinkSpec {
  double bandwidth_gbps = 0;  ///< GB/s (1e9 bytes) per GPU, one direction.
  double latency_us = 0;      ///< Latency per collective step in microseconds.
};

struct ClusterSpec {
  std::string name;                 ///< Spec as given.
  int nodes = 0;
  int gpus_per_node = 0;
  costmodel::GpuSpec gpu;           ///< From the spec table.
  int64_t memory_per_gpu_bytes = 0; ///< Device memory the planner may fill.
  LinkSpec intra;                   ///< Inside a node (NVLink).
  LinkSpec inter;                   ///< Across nodes (network), per GPU.
  /// nodes x gpus_per_node; the parsers keep it at most kMaxClusterGpus.
  int total_gpus() const { return static_cast<int>(static_cast<int64_t>(nodes) * gpus_per_node); }
};

/// DGX A100 (8 x A100-SXM4-80GB, NVLink 3 600 GB/s per GPU = 300 one way, eight 200 Gb/s
/// HDR adapters per node = 25 GB/s per GPU) or DGX H100 (NVLink 4 900 GB/s = 450 one way,
/// one 400 Gb/s NDR adapter per GPU = 50 GB/s). Latencies: 3 us NVLink, 8 us network.
ClusterSpec dgx_cluster(const std::string& kind, int nodes);
/// "dgx-h100:128", "dgx-a100:4" or a JSON file; throws SpecError.
ClusterSpec parse_cluster_spec(const std::string& text);
/// A cluster from its JSON document (see README "Cluster specs"); throws SpecError.
ClusterSpec cluster_from_json(const nlohmann::json& doc, const std::string& name);

}  // namespace tuner::parallel
