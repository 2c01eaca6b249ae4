#include "search/parallel/cluster_spec.h"

#include <charconv>
#include <set>
#include <sstream>

#include "search/parallel/op_graph.h"
#include "search/parallel/spec_json.h"

namespace tuner::parallel {

namespace {

costmodel::GpuSpec gpu_or_throw(const std::string& key, const std::string& where) {
  auto g = costmodel::find_gpu_spec(key);
  if (!g) throw SpecError(where + ": unknown GPU type '" + key + "'; known: " + costmodel::gpu_spec_keys());
  return *g;
}

void check_cluster(const ClusterSpec& c) {
  const std::string where = "cluster '" + c.name + "'";
  if (c.nodes <= 0) throw SpecError(where + ": nodes must be positive, got " + std::to_string(c.nodes));
  if (c.gpus_per_node <= 0)
    throw SpecError(where + ": gpus_per_node must be positive, got " + std::to_string(c.gpus_per_node));
  const int64_t gpus = static_cast<int64_t>(c.nodes) * c.gpus_per_node;
  if (gpus > kMaxClusterGpus)
    throw SpecError(where + ": " + with_commas(c.nodes) + " nodes x " + with_commas(c.gpus_per_node) + " GPUs = " +
                    with_commas(gpus) + " GPUs; allowed: at most " + with_commas(kMaxClusterGpus) +
                    " GPUs in a cluster");
  if (c.memory_per_gpu_bytes <= 0) throw SpecError(where + ": memory per GPU must be positive");
  if (c.intra.bandwidth_gbps <= 0 || c.inter.bandwidth_gbps <= 0)
    throw SpecError(where + ": link bandwidths must be positive");
  if (c.intra.latency_us < 0 || c.inter.latency_us < 0) throw SpecError(where + ": link latencies must be >= 0");
}

LinkSpec link_from_json(const SpecFields& f, const nlohmann::json& j, const std::string& path) {
  f.require_object(j, path, "{\"bandwidth_gbps\": .., \"latency_us\": ..}");
  f.only_keys(j, path, {"bandwidth_gbps", "latency_us"});
  LinkSpec l;
  l.bandwidth_gbps = f.number(j, path, "bandwidth_gbps", 0, true, kMaxBandwidthGbps, std::nullopt);
  l.latency_us = f.number(j, path, "latency_us", 0, false, kMaxLatencyUs, 5);
  return l;
}

}  // namespace

ClusterSpec dgx_cluster(const std::string& kind, int nodes) {
  ClusterSpec c;
  c.name = kind + ":" + std::to_string(nodes);
  c.nodes = nodes;
  c.gpus_per_node = 8;
  if (kind == "dgx-h100" || kind == "dgx-h200") {  // the H200 system: the same NVLink 4 and NDR network
    c.gpu = gpu_or_throw(kind == "dgx-h100" ? "h100-sxm" : "h200-sxm", c.name);
    c.intra = {450, 3};
    c.inter = {50, 8};
  } else if (kind == "dgx-a100") {
    c.gpu = gpu_or_throw("a100-sxm4-80gb", c.name);
    c.intra = {300, 3};
    c.inter = {25, 8};
  } else {
    throw SpecError("unknown cluster preset '" + kind + "'; allowed: dgx-a100:NODES, dgx-h100:NODES, dgx-h200:NODES, or a .json file");
  }
  c.memory_per_gpu_bytes = c.gpu.memory_bytes();
  check_cluster(c);
  return c;
}

ClusterSpec cluster_from_json(const nlohmann::json& doc, const std::string& name) {
  const SpecFields f("cluster '" + name + "'");
  f.require_object(doc, "", "a JSON object");
  f.only_keys(doc, "", {"name", "nodes", "gpus_per_node", "gpu", "memory_gb", "intra_node", "inter_node"});
  ClusterSpec c;
  // The file's own name for the cluster names it in plans, exports and the plan log; else its path does.
  c.name = f.string(doc, "", "name", std::string());
  if (c.name.empty()) c.name = name;
  c.nodes = static_cast<int>(f.integer(doc, "", "nodes", 1, kMaxClusterGpus, std::nullopt));
  c.gpus_per_node = static_cast<int>(f.integer(doc, "", "gpus_per_node", 1, kMaxClusterGpus, std::nullopt));
  const int64_t gpus = static_cast<int64_t>(c.nodes) * c.gpus_per_node;
  if (gpus > kMaxClusterGpus)
    f.fail("gpus_per_node", with_commas(c.nodes) + " nodes x " + with_commas(c.gpus_per_node) + " = " +
                                with_commas(gpus) + " GPUs; allowed: at most " + with_commas(kMaxClusterGpus) +
                                " GPUs in a cluster");
  const std::string gpu_key = f.string(doc, "", "gpu", std::nullopt, "a GPU type: " + costmodel::gpu_spec_keys());
  c.gpu = gpu_or_throw(gpu_key, "cluster '" + name + "': gpu");
  // Bounded by twice the GPU's (below, with why), and above what the planner keeps free by default.
  const double mem_gb = f.number(doc, "", "memory_gb", kMemoryReserveBytes / 1e9, true,
                                 std::min(kMaxMemoryGb, 2 * c.gpu.memory_gb), c.gpu.memory_gb,
                                 "the GB kept free per GPU: CUDA context, workspaces");
  // The GPU type sets the speeds; its memory can differ (H100 NVL 94 GB, GH200 144 GB), not by orders of
  // magnitude: a plan for 1000 GB on an H100 would fit models no H100 can hold.
  c.memory_per_gpu_bytes = static_cast<int64_t>(mem_gb * 1e9);
  // A link nothing crosses may be left out: inside a node of one GPU, between the nodes of a cluster of one. It takes
  // the other link's figures (one GPU alone prices neither, but both must be valid).
  const bool has_intra = doc.contains("intra_node"), has_inter = doc.contains("inter_node");
  if (has_intra) c.intra = link_from_json(f, doc["intra_node"], "intra_node");
  else if (c.gpus_per_node > 1)
    f.fail("intra_node", "missing; nodes of several GPUs need {\"bandwidth_gbps\": .., \"latency_us\": .. (optional, "
                         "default 5)}");
  if (has_inter) c.inter = link_from_json(f, doc["inter_node"], "inter_node");
  else if (c.nodes > 1)
    f.fail("inter_node", "missing; a cluster of several nodes needs {\"bandwidth_gbps\": .., \"latency_us\": .. "
                         "(optional, default 5)}");
  if (!has_intra) c.intra = has_inter ? c.inter : LinkSpec{1, 5};
  if (!has_inter) c.inter = c.intra;
  check_cluster(c);
  return c;
}

ClusterSpec parse_cluster_spec(const std::string& text) {
  if (text.empty()) throw SpecError("empty cluster spec");
  const size_t colon = text.find(':');
  if (colon != std::string::npos && text.rfind(".json") == std::string::npos) {
    const std::string kind = text.substr(0, colon), count = text.substr(colon + 1);
    const int64_t max_nodes = kMaxClusterGpus / 8;
    const std::string allowed = "; allowed: 1.." + with_commas(max_nodes) + " nodes (at most " +
                                with_commas(kMaxClusterGpus) + " GPUs in a cluster, 8 per node)";
    int64_t nodes = 0;
    auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), nodes);
    if (ec == std::errc::result_out_of_range)
      throw SpecError("cluster '" + text + "': node count " + count + " is out of range" + allowed);
    if (count.empty() || ec != std::errc() || end != count.data() + count.size())
      throw SpecError("cluster '" + text + "': node count '" + count + "' is not an integer" + allowed);
    if (nodes <= 0) throw SpecError("cluster '" + text + "': nodes must be positive, got " + count + allowed);
    if (nodes > max_nodes) throw SpecError("cluster '" + text + "': node count " + count + " is out of range" + allowed);
    return dgx_cluster(kind, static_cast<int>(nodes));
  }
  if (text.size() > 5 && text.substr(text.size() - 5) == ".json")
    return cluster_from_json(read_spec_file(text, "cluster"), text);
  throw SpecError("unknown cluster '" + text + "'; allowed: dgx-a100:NODES, dgx-h100:NODES, dgx-h200:NODES, or a .json file");
}

}  // namespace tuner::parallel
