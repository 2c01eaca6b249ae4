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

}  // namespace tuner::parallel
