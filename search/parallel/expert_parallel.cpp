#include "search/parallel/expert_parallel.h"

#include <algorithm>
#include <numeric>

namespace tuner::parallel {

int model_experts(const ModelGraph& g) {
  int e = 0;
  for (const auto& layer : g.layers)
    for (const auto& op : layer.ops)
      if (op.type == OpType::kMoeFfn && op.experts > 0) e = std::gcd(e, op.experts);
  return e;
}

int64_t op_expert_params(const Operator& op) {
  if (op.type != OpType::kMoeFfn) return 0;
  return static_cast<int64_t>(op.experts) * (op.gated ? 3 : 2) * op.in_features * op.ffn;
}

int64_t layer_expert_params(const Layer& layer) {
  int64_t n = 0;
  for (const auto& op : layer.ops) n += op_expert_params(op);
  return n;
}

int64_t model_expert_params(const ModelGraph& g) {
  int64_t n = 0;
  for (const auto& layer : g.layers) n += layer_expert_params(layer);
  return n;
}

double least_params_per_device(double params, double expert_params, int split, int ep) {
  const double s = std::max(split, 1);
  return (params - expert_params) / s + expert_params / (s * std::max(ep, 1));
}

std::string expert_parallel_violation(int ep, int experts, int dpc) {
  if (ep < 1) return "ep=" + std::to_string(ep) + " is not positive";
  if (ep == 1) return "";
  if (experts <= 0) return "ep=" + std::to_string(ep) + " needs a mixture-of-experts model (this one has no experts)";
  if (experts % ep != 0)
    return "ep=" + std::to_string(ep) + " does not divide the " + std::to_string(experts) + " experts";
  if (dpc % ep != 0)
    return "ep=" + std::to_string(ep) + " does not divide the data-parallel group dp x cp = " + std::to_string(dpc);
  return "";
}

std::vector<int> expert_parallel_degrees(int experts, int dpc) {
  std::vector<int> out;
  for (int e = 1; e <= std::max(1, std::min(experts, dpc)); ++e)
    if (expert_parallel_violation(e, experts, dpc).empty()) out.push_back(e);
  return out;
}

CommGroup expert_group(const ClusterSpec& c, int tp, int ep) {
  return {ep, std::clamp(c.gpus_per_node / std::max(tp, 1), 1, std::max(ep, 1))};
}

CommGroup expert_data_group(const ClusterSpec& c, int tp, int ep, int dpc) {
  const int n = std::max(1, dpc / std::max(ep, 1));
  return {n, std::clamp(c.gpus_per_node / std::max(tp * ep, 1), 1, n)};
}

}  // namespace tuner::parallel
