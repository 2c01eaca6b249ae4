#include "search/parallel/engine_partition.h"

#include <algorithm>
#include <cmath>

namespace tuner::parallel {

std::vector<int> blocks_per_stage(const ModelGraph& g, const std::vector<int>& starts) {
  std::vector<int> out;
  const int L = static_cast<int>(g.layers.size());
  for (size_t s = 0; s + 1 < starts.size(); ++s) {
    int n = 0;
    for (int i = starts[s]; i < starts[s + 1] && i < L; ++i) n += g.layers[i].kind == LayerKind::kTransformer ? 1 : 0;
    out.push_back(n);
  }
  return out;
}

bool engine_expresses_partition(Engine engine, const ModelGraph& g, const std::vector<int>& starts) {
  if (engine == Engine::kDeepSpeed && starts.size() > 2) {
    const int p = static_cast<int>(starts.size()) - 1;
    return starts == engine_fixed_partition(engine, g, p) || starts == engine_fixed_partition(engine, g, p, true);
  }
  if (engine != Engine::kMegatron || starts.size() <= 2 || g.transformer_layers == 0) return true;
  const std::vector<int> b = blocks_per_stage(g, starts);
  // Every stage builds at least one layer (a first or last stage of the embedding or the head alone is not
  // one Megatron's --decoder-first/last-pipeline-num-layers describe).
  return std::all_of(b.begin(), b.end(), [](int x) { return x > 0; }) &&
         std::all_of(b.begin() + 1, b.end() - 1, [&](int x) { return x == b[1]; });
}

std::vector<int> best_megatron_partition(const StageDpRequest& req, const ModelGraph& g, int window) {
  const int p = req.stages, L = static_cast<int>(g.layers.size());
  if (p < 2 || g.transformer_layers == 0) return {};
  // The run of blocks: the first stage also holds what precedes it (the embedding), the last what follows (the head).
  int first = 0;
  while (first < L && g.layers[first].kind != LayerKind::kTransformer) ++first;
  int end = first;
  while (end < L && g.layers[end].kind == LayerKind::kTransformer) ++end;
  const int n = end - first;
  if (n < p) return {};
  const int share = n / p;
  std::vector<int> best, starts(p + 1);
  double best_obj = kInf;
  // With pp 2 there are no middle stages: one pass over the first stage's size.
  const int m_lo = p == 2 ? 1 : std::max(1, share - window), m_hi = p == 2 ? 1 : share + window;
  for (int m = m_lo; m <= m_hi && (p - 2) * m <= n - 2; ++m)
    for (int f = 1; f + (p - 2) * m <= n - 1; ++f) {
      starts[0] = 0;
      for (int s = 1; s < p; ++s) starts[s] = first + f + (s - 1) * m;
      starts[p] = L;
      const double obj = pipeline_objective(req, starts);
      // Ties: the first found (the smallest m, then the smallest first stage) keeps its place.
      if (obj < best_obj) best_obj = obj, best = starts;
    }
  return std::isfinite(best_obj) ? best : std::vector<int>{};
}

std::vector<int> deepspeed_partition_balanced(const std::vector<double>& weights, int parts) {
  const int n = static_cast<int>(weights.size()), m = parts;
  if (m <= 0) return {};
  if (n <= m) return deepspeed_partition_uniform(n, m);
  // dp_max / dp_min / dp_cost over (items i, parts j), as DeepSpeed's numpy arrays (inf where unreached).
  const size_t w = static_cast<size_t>(m) + 1;
  std::vector<double> dp_max((n + 1) * w, kInf), dp_min((n + 1) * w, kInf), dp_cost((n + 1) * w, kInf);
  std::vector<int> position((n + 1) * w, 0);
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + weights[i];
  dp_max[0] = 0;
  dp_cost[0] = 0;
  for (int i = 1; i <= n; ++i)
    for (int j = 1; j <= std::min(i, m); ++j)
      // k < j - 1 leaves (k, j - 1) unreached (cost inf): DeepSpeed visits those first, and a reached k
      // (j - 1 <= k < i always exists) replaces whatever they left, so starting at j - 1 changes nothing.
      for (int k = j - 1; k < i; ++k) {
        const double seg = prefix[i] - prefix[k];
        const double max_sum = std::max(dp_max[k * w + j - 1], seg);
        const double min_sum = std::min(dp_min[k * w + j - 1], seg);
        const double cost = max_sum - min_sum;  // inf - x = inf where (k, j - 1) was never reached
        if (dp_cost[i * w + j] >= cost) {
          dp_cost[i * w + j] = cost;
          dp_max[i * w + j] = max_sum;
          dp_min[i * w + j] = min_sum;
          position[i * w + j] = k;
        }
      }
  std::vector<int> out = {n};
  for (int j = m; j >= 1; --j) out.push_back(position[out.back() * w + j]);
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<int> deepspeed_partition_uniform(int items, int parts) {
  if (parts <= 0) return {};
  std::vector<int> out(parts + 1);
  if (items <= parts) {
    for (int p = 0; p <= parts; ++p) out[p] = std::min(p, items);
    return out;
  }
  const int chunk = items / parts, residual = items % parts;
  for (int p = 0; p <= parts; ++p) out[p] = p * chunk + std::min(p, residual);
  return out;
}

std::vector<int> engine_fixed_partition(Engine engine, const ModelGraph& g, int stages, bool uniform) {
  if (engine != Engine::kDeepSpeed || stages < 2) return {};
  std::vector<double> weights;
  for (const Layer& l : g.layers) weights.push_back(static_cast<double>(layer_params(l)));
  std::vector<int> starts = uniform ? deepspeed_partition_uniform(static_cast<int>(weights.size()), stages)
                                    : deepspeed_partition_balanced(weights, stages);
  for (size_t s = 0; s + 1 < starts.size(); ++s)
    if (starts[s + 1] <= starts[s]) return {};
  return starts;
}

}  // namespace tuner::parallel
