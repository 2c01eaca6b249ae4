#include "search/parallel/stage_dp.h"

#include <algorithm>
#include <cmath>

namespace tuner::parallel {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double extra(const StageDpRequest& r, int stage) {
  return stage < static_cast<int>(r.stage_extra.size()) ? r.stage_extra[stage] : 0.0;
}

bool fits(const StageDpRequest& r, int stage, int begin, int end) { return !r.fits || r.fits(stage, begin, end); }

}  // namespace

double pipeline_objective(const StageDpRequest& req, const std::vector<int>& starts, std::vector<double>* stage_cost) {
  const int p = req.stages, L = static_cast<int>(req.layer_cost.size());
  if (static_cast<int>(starts.size()) != p + 1 || starts.front() != 0 || starts.back() != L) return kInf;
  double sum = 0, mx = 0;
  if (stage_cost) stage_cost->clear();
  for (int i = 0; i < p; ++i) {
    if (starts[i + 1] <= starts[i] || !fits(req, i, starts[i], starts[i + 1])) return kInf;
    double t = extra(req, i);
    for (int l = starts[i]; l < starts[i + 1]; ++l) t += req.layer_cost[l];
    sum += t;
    mx = std::max(mx, t);
    if (stage_cost) stage_cost->push_back(t);
  }
  return sum + (req.micro_batches - 1) * mx;
}

StageDpResult solve_stage_dp(const StageDpRequest& req) {
  StageDpResult best;
  const int p = req.stages, L = static_cast<int>(req.layer_cost.size());
  if (p <= 0 || p > L) return best;
  std::vector<double> prefix(L + 1, 0);
  for (int l = 0; l < L; ++l) prefix[l + 1] = prefix[l] + req.layer_cost[l];
  auto cost = [&](int stage, int i, int j) { return prefix[j] - prefix[i] + extra(req, stage); };

  // Candidate t_max: every distinct stage cost at or above a lower bound (the largest layer, the mean stage).
  double extra_sum = 0, extra_min = kInf, extra_max = 0;
  for (int s = 0; s < p; ++s) {
    extra_sum += extra(req, s);
    extra_min = std::min(extra_min, extra(req, s));
    extra_max = std::max(extra_max, extra(req, s));
  }
  double lower = (prefix[L] + extra_sum) / p;
  for (double c : req.layer_cost) lower = std::max(lower, c + extra_min);
  std::vector<double> extras;
  for (int s = 0; s < p; ++s) extras.push_back(extra(req, s));
  std::sort(extras.begin(), extras.end());
  extras.erase(std::unique(extras.begin(), extras.end()), extras.end());
  std::vector<double> cand;
  const int max_len = L - p + 1;
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j <= std::min(L, i + max_len); ++j)
      for (double e : extras) {
        const double c = prefix[j] - prefix[i] + e;
        if (c >= lower * (1 - 1e-12)) cand.push_back(c);
      }
  std::sort(cand.begin(), cand.end());
  cand.erase(std::unique(cand.begin(), cand.end()), cand.end());

  std::vector<double> F((p + 1) * (L + 1));
  std::vector<int> from((p + 1) * (L + 1));
  auto at = [&](int k, int j) { return k * (L + 1) + j; };
  // The least sum of stage costs with every stage <= t_max; fills starts when feasible.
  auto run = [&](double t_max, std::vector<int>& starts) {
    ++best.t_max_tried;
    std::fill(F.begin(), F.end(), kInf);
    F[at(0, 0)] = 0;
    for (int k = 1; k <= p; ++k) {
      // Stage k-1 ends at j; earlier stages need k-1 layers, later ones p-k.
      for (int j = k; j <= L - (p - k); ++j) {
        double bestv = kInf;
        int arg = -1;
        for (int i = j - 1; i >= k - 1; --i) {
          const double c = cost(k - 1, i, j);
          if (c > t_max) break;                  // costs only grow as the stage extends left
          if (!fits(req, k - 1, i, j)) break;    // and so does memory
          const double prev = F[at(k - 1, i)];
          if (prev != kInf && prev + c < bestv) bestv = prev + c, arg = i;
        }
        F[at(k, j)] = bestv;
        from[at(k, j)] = arg;
      }
    }
    if (F[at(p, L)] == kInf) return kInf;
    starts.assign(p + 1, 0);
    starts[p] = L;
    for (int k = p; k >= 1; --k) starts[k - 1] = from[at(k, starts[k])];
    return F[at(p, L)];
  };
  if (cand.empty()) return best;
  // Feasibility only grows with t_max: find the smallest feasible candidate by bisection,
  // then walk up from it with Alpa's stopping rule.
  std::vector<int> starts;
  const double sum_floor = run(cand.back(), starts);  // the least sum of all, with no limit on t_max
  if (sum_floor == kInf) return best;
  size_t lo = 0, hi = cand.size() - 1;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (run(cand[mid], starts) == kInf) lo = mid + 1;
    else hi = mid;
  }
  for (size_t c = lo; c < cand.size(); ++c) {
    const double t_max = cand[c];
    // No partition with this t_max can win: Alpa's B t_max bound, tightened by the least sum of all.
    if (std::max(req.micro_batches * t_max, sum_floor + (req.micro_batches - 1) * t_max) >= best.objective) break;
    if (run(t_max, starts) == kInf) continue;
    std::vector<double> costs;
    const double obj = pipeline_objective(req, starts, &costs);
    if (obj < best.objective) {
      best.feasible = true;
      best.objective = obj;
      best.starts = starts;
      best.stage_cost = costs;
    }
  }
  return best;
}

StageDpResult solve_stage_brute_force(const StageDpRequest& req) {
  StageDpResult best;
  const int p = req.stages, L = static_cast<int>(req.layer_cost.size());
  if (p <= 0 || p > L) return best;
  std::vector<int> starts(p + 1, 0);
  starts[p] = L;
  // Recursively place the start of stages 1..p-1.
  std::function<void(int)> place = [&](int k) {
    if (k == p) {
      std::vector<double> costs;
      const double obj = pipeline_objective(req, starts, &costs);
      if (obj < best.objective) {
        best.feasible = true;
        best.objective = obj;
        best.starts = starts;
        best.stage_cost = costs;
      }
      return;
    }
    for (int s = starts[k - 1] + 1; s <= L - (p - k); ++s) {
      starts[k] = s;
      place(k + 1);
    }
  };
  place(1);
  return best;
}

}  // namespace tuner::parallel
