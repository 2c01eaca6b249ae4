#include "search/parallel/submesh.h"

#include <algorithm>
#include <cmath>

namespace tuner::parallel {

namespace {

/// Everything the DP reads, tabulated once per solve.
struct Tables {
  int p = 0, K = 0, V = 0;
  std::vector<double> cost;        ///< [(v * K + a) * (K + 1) + b]: units [a, b) under v.
  std::vector<int> first_fit;      ///< [(s * V + v) * (K + 1) + b]: the first a whose [a, b) fits (b if none).
  std::vector<double> extra;       ///< [s * V + v].
  std::vector<double> boundary;    ///< [(from * V + to) * K + a]: entering unit a.
  std::vector<int> weight;         ///< Per variant (all 0 without a budget).
  int W = 1;                       ///< Weight values tracked: budget + 1 (1 without a budget).
  int min_w = 0, max_w = 0;        ///< Over the variants.
  double c(int v, int a, int b) const { return cost[(static_cast<size_t>(v) * K + a) * (K + 1) + b]; }
  int fit(int s, int v, int b) const { return first_fit[(static_cast<size_t>(s) * V + v) * (K + 1) + b]; }
};

Tables tabulate(const VariantDpRequest& r) {
  Tables t;
  t.p = r.stages, t.K = static_cast<int>(r.units.size()) - 1, t.V = r.variants;
  const int K = t.K, V = t.V;
  t.cost.assign(static_cast<size_t>(V) * K * (K + 1), 0.0);
  for (int v = 0; v < V; ++v)
    for (int a = 0; a < K; ++a)
      for (int b = a + 1; b <= K; ++b)
        t.cost[(static_cast<size_t>(v) * K + a) * (K + 1) + b] = r.cost(v, r.units[a], r.units[b]);
  t.first_fit.assign(static_cast<size_t>(t.p) * V * (K + 1), 0);
  for (int s = 0; s < t.p; ++s)
    for (int v = 0; v < V; ++v) {
      int a = 0;
      for (int b = 1; b <= K; ++b) {
        while (a < b && r.fits && !r.fits(s, v, r.units[a], r.units[b])) ++a;  // sub-ranges fit: a only moves right
        t.first_fit[(static_cast<size_t>(s) * V + v) * (K + 1) + b] = a;
      }
    }
  t.extra.assign(static_cast<size_t>(t.p) * V, 0.0);
  if (r.extra)
    for (int s = 0; s < t.p; ++s)
      for (int v = 0; v < V; ++v) t.extra[static_cast<size_t>(s) * V + v] = r.extra(s, v);
  t.boundary.assign(static_cast<size_t>(V) * V * K, 0.0);
  if (r.boundary)
    for (int u = 0; u < V; ++u)
      for (int v = 0; v < V; ++v)
        for (int a = 1; a < K; ++a) t.boundary[(static_cast<size_t>(u) * V + v) * K + a] = r.boundary(u, v, r.units[a]);
  t.weight.assign(V, 0);
  if (!r.weight.empty()) {
    t.weight = r.weight;
    t.W = r.budget + 1;
    t.min_w = *std::min_element(t.weight.begin(), t.weight.end());
    t.max_w = *std::max_element(t.weight.begin(), t.weight.end());
  }
  return t;
}

/// One DP pass under bound T: the smallest sum of stage times with every stage <= T, and the assignment.
struct Pass {
  double sum = kInf, t_max = 0;
  std::vector<int> starts, variant;  // in units
  std::vector<double> stage_cost;
};

Pass dp_pass(const Tables& t, double T, int64_t& cells) {
  const int p = t.p, K = t.K, V = t.V, W = t.W;
  const int budget = W - 1;
  auto at = [&](int s, int b, int v, int w) { return ((static_cast<size_t>(s) * (K + 1) + b) * V + v) * W + w; };
  // Weight used by the first s + 1 stages that still leaves the p - 1 - s others a way to end at the budget.
  auto w_ok = [&](int s, int w) {
    const int rest = p - 1 - s;
    return W == 1 || (w + rest * t.min_w <= budget && w + rest * t.max_w >= budget);
  };
  std::vector<double> F(static_cast<size_t>(p) * (K + 1) * V * W, kInf);
  std::vector<int> from_a(F.size(), -1), from_v(F.size(), -1);
  for (int b = 1; b <= K - (p - 1); ++b)
    for (int v = 0; v < V; ++v) {
      const double x = t.c(v, 0, b) + t.extra[v];
      if (t.fit(0, v, b) == 0 && x <= T && t.weight[v] < W && w_ok(0, t.weight[v])) F[at(0, b, v, t.weight[v])] = x;
    }
  for (int s = 1; s < p; ++s)
    for (int b = s + 1; b <= K - (p - 1 - s); ++b)
      for (int v = 0; v < V; ++v) {
        const int lo = std::max(t.fit(s, v, b), s), wv = t.weight[v];
        // Weights after this stage that leave the other stages a way to the budget (w_ok).
        const int rest = p - 1 - s;
        const int w_lo = W == 1 ? 0 : std::max(wv, budget - rest * t.max_w);
        const int w_hi = W == 1 ? 0 : std::min(budget, budget - rest * t.min_w);
        if (w_lo > w_hi) continue;
        for (int a = b - 1; a >= lo; --a) {
          const double base = t.c(v, a, b) + t.extra[static_cast<size_t>(s) * V + v];
          if (base > T) break;  // costs only grow as the stage starts earlier
          for (int u = 0; u < V; ++u) {
            cells += w_hi - w_lo + 1;
            const double x = base + t.boundary[(static_cast<size_t>(u) * V + v) * K + a];
            if (x > T) continue;
            for (int w = w_lo; w <= w_hi; ++w) {
              const double prev = F[at(s - 1, a, u, w - wv)];
              if (!std::isfinite(prev)) continue;
              const size_t here = at(s, b, v, w);
              if (prev + x >= F[here]) continue;
              F[here] = prev + x, from_a[here] = a, from_v[here] = u;
            }
          }
        }
      }
  Pass out;
  int v = -1;
  const int w_end = W - 1;  // the budget exactly (0 without one)
  for (int u = 0; u < V; ++u)
    if (F[at(p - 1, K, u, w_end)] < out.sum) out.sum = F[at(p - 1, K, u, w_end)], v = u;
  if (v < 0) return out;
  out.starts.assign(p + 1, 0), out.variant.assign(p, 0), out.stage_cost.assign(p, 0);
  out.starts[p] = K;
  for (int s = p - 1, b = K, w = w_end; s >= 0; --s) {
    const size_t here = at(s, b, v, w);
    const int a = s == 0 ? 0 : from_a[here], u = s == 0 ? -1 : from_v[here];
    const int pw = w - t.weight[v];
    out.starts[s] = a, out.variant[s] = v;
    out.stage_cost[s] = F[here] - (s == 0 ? 0 : F[at(s - 1, a, u, pw)]);
    out.t_max = std::max(out.t_max, out.stage_cost[s]);
    b = a, v = u, w = pw;
  }
  return out;
}

VariantDpResult to_result(const VariantDpRequest& r, const Pass& best, int64_t cells) {
  VariantDpResult res;
  res.cells = cells;
  if (!std::isfinite(best.sum)) return res;
  res.feasible = true;
  for (int u : best.starts) res.starts.push_back(r.units[u]);
  res.variant = best.variant;
  res.objective = variant_objective(r, res.starts, res.variant, &res.stage_cost);
  if (!std::isfinite(res.objective)) res.feasible = false;  // cannot happen: the pass checked every stage
  return res;
}

}  // namespace

double variant_objective(const VariantDpRequest& r, const std::vector<int>& starts, const std::vector<int>& variant,
                         std::vector<double>* stage_cost) {
  const int p = r.stages;
  if (static_cast<int>(starts.size()) != p + 1 || static_cast<int>(variant.size()) != p) return kInf;
  if (!r.weight.empty()) {  // the stages' GPUs must cover the budget exactly
    int64_t w = 0;
    for (int v : variant) w += v >= 0 && v < static_cast<int>(r.weight.size()) ? r.weight[v] : 0;
    if (w != r.budget) return kInf;
  }
  double sum = 0, mx = 0;
  if (stage_cost) stage_cost->clear();
  for (int s = 0; s < p; ++s) {
    const int v = variant[s];
    if (starts[s + 1] <= starts[s] || v < 0 || v >= r.variants) return kInf;
    if (r.fits && !r.fits(s, v, starts[s], starts[s + 1])) return kInf;
    double t = r.cost(v, starts[s], starts[s + 1]) + (r.extra ? r.extra(s, v) : 0.0);
    if (s > 0 && r.boundary) t += r.boundary(variant[s - 1], v, starts[s]);
    sum += t, mx = std::max(mx, t);
    if (stage_cost) stage_cost->push_back(t);
  }
  return sum + (r.micro_batches - 1) * mx;
}

VariantDpResult solve_variant_dp(const VariantDpRequest& r) {
  const int p = r.stages, K = static_cast<int>(r.units.size()) - 1;
  if (p <= 0 || K < p || r.variants <= 0 || !r.cost) return {};
  if (!r.weight.empty()) {
    if (static_cast<int>(r.weight.size()) != r.variants || r.budget < 0) return {};
    for (int w : r.weight)
      if (w <= 0) return {};
  }
  const Tables t = tabulate(r);
  int64_t cells = 0;
  // The loosest bound: is anything feasible at all?
  Pass best = dp_pass(t, kInf, cells);
  if (!std::isfinite(best.sum)) return to_result(r, best, cells);
  // Smallest feasible bound by bisection (relative precision 1e-9).
  double hi = best.t_max, lo = 0;
  for (int u = 0; u < K; ++u) {
    double cheapest = kInf;
    for (int v = 0; v < t.V; ++v) cheapest = std::min(cheapest, t.c(v, u, u + 1));
    lo += cheapest / p;  // the largest stage is at least the average of the cheapest units
  }
  lo = std::min(lo, hi) * (1 - 1e-12);
  Pass at_hi = best;
  while (hi - lo > 1e-9 * hi) {
    const double mid = lo + (hi - lo) / 2;
    Pass x = dp_pass(t, mid, cells);
    if (std::isfinite(x.sum)) hi = x.t_max, at_hi = std::move(x);
    else lo = mid;
  }
  const double B1 = r.micro_batches - 1;
  auto objective = [&](const Pass& x) { return x.sum + B1 * x.t_max; };
  best = objective(at_hi) <= objective(best) ? at_hi : best;
  // Larger bounds can only pay by a smaller sum; stop when (B - 1)(T - t*) exceeds what the sum could save.
  const double t_star = at_hi.t_max;
  for (int k = 0; k + 1 < r.max_rounds; ++k) {
    const double T = t_star * (1 + 1e-3 * std::ldexp(1.0, k));
    if (B1 * (T - t_star) >= at_hi.sum) break;
    Pass x = dp_pass(t, T, cells);
    if (std::isfinite(x.sum) && objective(x) < objective(best)) best = std::move(x);
  }
  return to_result(r, best, cells);
}

VariantDpResult solve_variant_brute_force(const VariantDpRequest& r) {
  VariantDpResult best;
  const int p = r.stages, K = static_cast<int>(r.units.size()) - 1;
  if (p <= 0 || K < p) return best;
  std::vector<int> cut(p + 1, 0), variant(p, 0);
  cut[p] = K;
  std::function<void(int)> place = [&](int k) {
    if (k < p) {
      for (int u = cut[k - 1] + 1; u <= K - (p - k); ++u) cut[k] = u, place(k + 1);
      return;
    }
    std::vector<int> starts;
    for (int u : cut) starts.push_back(r.units[u]);
    // Every variant assignment: V^p.
    std::fill(variant.begin(), variant.end(), 0);
    while (true) {
      std::vector<double> costs;
      const double obj = variant_objective(r, starts, variant, &costs);
      if (obj < best.objective)
        best.feasible = true, best.objective = obj, best.starts = starts, best.variant = variant,
        best.stage_cost = costs;
      int s = 0;
      while (s < p && ++variant[s] == r.variants) variant[s++] = 0;
      if (s == p) break;
    }
  };
  if (p == 1) {
    cut[0] = 0;
    place(1);
  } else {
    place(1);
  }
  return best;
}

}  // namespace tuner::parallel
