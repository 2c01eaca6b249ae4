#include "search/parallel/cluster_spec.h"

#include <charconv>
#include <fstream>
#include <set>

#include "search/parallel/op_graph.h"

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
  if (c.memory_per_gpu_bytes <= 0) throw SpecError(where + ": memory per GPU must be positive");
  if (c.intra.bandwidth_gbps <= 0 || c.inter.bandwidth_gbps <= 0)
    throw SpecError(where + ": link bandwidths must be positive");
  if (c.intra.latency_us < 0 || c.inter.latency_us < 0) throw SpecError(where + ": link latencies must be >= 0");
}

double get_number(const nlohmann::json& j, const char* key, const std::string& where, bool required, double dflt) {
  if (!j.contains(key)) {
    if (required) throw SpecError(where + ": missing \"" + key + "\"");
    return dflt;
  }
  if (!j[key].is_number()) throw SpecError(where + ": \"" + key + "\" must be a number");
  return j[key].get<double>();
}

LinkSpec link_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw SpecError(where + ": expected {\"bandwidth_gbps\": .., \"latency_us\": ..}");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "bandwidth_gbps" && it.key() != "latency_us")
      throw SpecError(where + ": unknown key \"" + it.key() + "\"; allowed: bandwidth_gbps, latency_us");
  LinkSpec l;
  l.bandwidth_gbps = get_number(j, "bandwidth_gbps", where, true, 0);
  l.latency_us = get_number(j, "latency_us", where, false, 5);
  return l;
}

}  // namespace

ClusterSpec dgx_cluster(const std::string& kind, int nodes) {
  ClusterSpec c;
  c.name = kind + ":" + std::to_string(nodes);
  c.nodes = nodes;
  c.gpus_per_node = 8;
  if (kind == "dgx-h100") {
    c.gpu = gpu_or_throw("h100-sxm", c.name);
    c.intra = {450, 3};
    c.inter = {50, 8};
  } else if (kind == "dgx-a100") {
    c.gpu = gpu_or_throw("a100-sxm4-80gb", c.name);
    c.intra = {300, 3};
    c.inter = {25, 8};
  } else {
    throw SpecError("unknown cluster preset '" + kind + "'; allowed: dgx-a100:NODES, dgx-h100:NODES, or a .json file");
  }
  c.memory_per_gpu_bytes = c.gpu.memory_bytes();
  check_cluster(c);
  return c;
}

ClusterSpec cluster_from_json(const nlohmann::json& doc, const std::string& name) {
  const std::string where = "cluster '" + name + "'";
  if (!doc.is_object()) throw SpecError(where + ": expected a JSON object");
  static const std::set<std::string> allowed = {"name", "nodes", "gpus_per_node", "gpu", "memory_gb", "intra_node",
                                                "inter_node"};
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (!allowed.count(it.key())) throw SpecError(where + ": unknown key \"" + it.key() + "\"");
  ClusterSpec c;
  c.name = name;
  const double nodes = get_number(doc, "nodes", where, true, 0);
  const double gpn = get_number(doc, "gpus_per_node", where, true, 0);
  if (nodes != static_cast<int>(nodes) || gpn != static_cast<int>(gpn))
    throw SpecError(where + ": nodes and gpus_per_node must be integers");
  c.nodes = static_cast<int>(nodes);
  c.gpus_per_node = static_cast<int>(gpn);
  if (!doc.contains("gpu") || !doc["gpu"].is_string()) throw SpecError(where + ": missing \"gpu\" (a GPU type name)");
  c.gpu = gpu_or_throw(doc["gpu"].get<std::string>(), where);
  const double mem_gb = get_number(doc, "memory_gb", where, false, c.gpu.memory_gb);
  c.memory_per_gpu_bytes = static_cast<int64_t>(mem_gb * 1e9);
  if (!doc.contains("intra_node")) throw SpecError(where + ": missing \"intra_node\"");
  c.intra = link_from_json(doc["intra_node"], where + " intra_node");
  if (doc.contains("inter_node")) {
    c.inter = link_from_json(doc["inter_node"], where + " inter_node");
  } else if (c.nodes > 1) {
    throw SpecError(where + ": missing \"inter_node\" for a cluster of several nodes");
  } else {
    c.inter = c.intra;
  }
  check_cluster(c);
  return c;
}

ClusterSpec parse_cluster_spec(const std::string& text) {
  if (text.empty()) throw SpecError("empty cluster spec");
  const size_t colon = text.find(':');
  if (colon != std::string::npos && text.rfind(".json") == std::string::npos) {
    const std::string kind = text.substr(0, colon), count = text.substr(colon + 1);
    int nodes = 0;
    auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), nodes);
    if (count.empty() || ec != std::errc() || end != count.data() + count.size())
      throw SpecError("cluster '" + text + "': node count '" + count + "' is not an integer");
    if (nodes <= 0) throw SpecError("cluster '" + text + "': nodes must be positive, got " + count);
    return dgx_cluster(kind, nodes);
  }
  if (text.size() > 5 && text.substr(text.size() - 5) == ".json") {
    std::ifstream f(text);
    if (!f) throw SpecError("cannot read cluster file '" + text + "'");
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(f);
    } catch (const nlohmann::json::parse_error& e) {
      throw SpecError("cluster file '" + text + "' is not valid JSON: " + e.what());
    }
    return cluster_from_json(doc, text);
  }
  throw SpecError("unknown cluster '" + text + "'; allowed: dgx-a100:NODES, dgx-h100:NODES, or a .json file");
}

}  // namespace tuner::parallel
