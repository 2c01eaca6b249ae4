#include "search/parallel/layer_clustering.h"

#include <algorithm>
#include <cmath>

namespace tuner::parallel {

std::vector<int> cluster_layers(const std::vector<double>& cost, const std::vector<int>& kind, int target) {
  const int L = static_cast<int>(cost.size());
  std::vector<int> starts = {0};
  if (L == 0) return starts;
  if (target <= 0 || L <= target) {
    for (int l = 1; l <= L; ++l) starts.push_back(l);
    return starts;
  }
  double total = 0;
  for (double x : cost) total += std::max(0.0, x);
  const double per_unit = total > 0 ? total / target : 1.0;
  int l = 0;
  while (l < L) {
    // The run of identical layers from l, and its cost.
    int e = l + 1;
    double run = std::max(0.0, cost[l]);
    while (e < L && kind[e] == kind[l]) run += std::max(0.0, cost[e++]);
    const int n = e - l;
    const double want = total > 0 ? run / per_unit : static_cast<double>(n) * target / L;
    const int pieces = std::clamp(static_cast<int>(std::lround(want)), 1, n);
    for (int k = 1; k <= pieces; ++k) starts.push_back(l + static_cast<int>(static_cast<long long>(n) * k / pieces));
    l = e;
  }
  return starts;
}

}  // namespace tuner::parallel
