// Exhaustive solver of the sharding problem (declared in sharding_ilp.h): walks
// every assignment in lexicographic order, keeping the first of the cheapest
// feasible ones. Exponential; meant for the tests that prove the ILP optimal.
#include "search/parallel/sharding_ilp.h"

namespace tuner::parallel {

ShardingSolution solve_sharding_exhaustive(const ShardingRequest& req) {
  ShardingSolution best;
  best.status = "infeasible";
  const size_t n = req.nodes.size();
  for (const auto& node : req.nodes)
    if (node.cost.empty()) return best;
  ShardingSolution cur;
  cur.choice.assign(n, 0);
  while (true) {
    ShardingEvaluation ev = evaluate(req, cur);
    if (ev.violations.empty() && (!best.feasible || ev.total < best.objective)) {
      best.feasible = true;
      best.optimal = true;
      best.status = "optimal";
      best.choice = cur.choice;
      best.objective = ev.total;
    }
    size_t i = 0;
    while (i < n && ++cur.choice[i] == static_cast<int>(req.nodes[i].cost.size())) cur.choice[i++] = 0;
    if (i == n) break;
  }
  return best;
}

}  // namespace tuner::parallel
