#include "search/parallel/sharding_ilp.h"

namespace tuner::parallel {

ShardingEvaluation evaluate(const ShardingRequest& req, const ShardingSolution& sol) {
  ShardingEvaluation ev;
  if (sol.choice.size() != req.nodes.size()) {
    ev.violations.push_back("solution has " + std::to_string(sol.choice.size()) + " choices for " +
                            std::to_string(req.nodes.size()) + " nodes");
    return ev;
  }
  bool in_range = true;
  for (size_t v = 0; v < req.nodes.size(); ++v) {
    const auto& n = req.nodes[v];
    const int c = sol.choice[v];
    if (c < 0 || c >= static_cast<int>(n.cost.size())) {
      ev.violations.push_back("node " + n.name + ": choice " + std::to_string(c) + " out of range");
      in_range = false;
      continue;
    }
    ev.node_cost += n.cost[c];
    if (c < static_cast<int>(n.memory.size())) ev.memory += n.memory[c];
  }
  if (!in_range) return ev;
  for (const auto& e : req.edges) {
    const size_t ns = req.nodes[e.src].cost.size(), nd = req.nodes[e.dst].cost.size();
    if (e.resharding.size() != ns * nd) {
      ev.violations.push_back("edge " + req.nodes[e.src].name + "->" + req.nodes[e.dst].name +
                              ": matrix size " + std::to_string(e.resharding.size()) + " != " +
                              std::to_string(ns * nd));
      continue;
    }
    ev.resharding_cost += e.resharding[sol.choice[e.src] * nd + sol.choice[e.dst]];
  }
  ev.total = ev.node_cost + ev.resharding_cost;
  if (ev.memory > req.memory_budget * (1 + 1e-9))
    ev.violations.push_back("memory " + std::to_string(ev.memory) + " exceeds budget " +
                            std::to_string(req.memory_budget));
  return ev;
}

}  // namespace tuner::parallel
