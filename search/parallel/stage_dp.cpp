#include "search/parallel/stage_dp.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tuner::parallel {

namespace {

double extra(const StageDpRequest& r, int stage) {
  return stage < static_cast<int>(r.stage_extra.size()) ? r.stage_extra[stage] : 0.0;
}

bool fits(const StageDpRequest& r, int stage, int begin, int end) { return !r.fits || r.fits(stage, begin, end); }

/// The chain in exact integer units, and what fits, prepared once per solve.
struct Chain {
  int p = 0, L = 0;
  std::vector<int64_t> prefix;   ///< prefix[l]: units of layers [0, l).
  std::vector<int64_t> extra;    ///< Per stage.
  /// lo_fit[s * span + (j - first_end(s))]: the first i >= s such that stage s holding [i, j) fits (j if none).
  std::vector<int> lo_fit;
  int span = 0;                  ///< Ends each stage may take: L - p + 1.
  int first_end(int s) const { return s + 1; }
  int lo_fit_at(int s, int j) const { return lo_fit[static_cast<size_t>(s) * span + (j - first_end(s))]; }
  /// The first i with prefix[j] - prefix[i] + extra[s] <= t (j when none).
  int lo_cost(int s, int j, int64_t t) const {
    const int64_t need = prefix[j] + extra[s] - t;  // prefix[i] >= need
    return static_cast<int>(std::lower_bound(prefix.begin(), prefix.begin() + j, need) - prefix.begin());
  }
};

/// Whether every stage can stay at or under t units; reach[s][i] (when given) marks the ends of the first s stages
/// that can be reached.
bool feasible(const Chain& c, int64_t t, std::vector<std::vector<char>>* reach) {
  std::vector<int> count(c.L + 2, 0);  // count[i + 1]: reachable ends among [0, i] for the stages so far
  std::vector<char> cur(c.L + 1, 0), next(c.L + 1, 0);
  cur[0] = 1;
  if (reach) reach->assign(c.p, {});
  for (int s = 0; s < c.p; ++s) {
    for (int i = 0; i <= c.L; ++i) count[i + 1] = count[i] + cur[i];
    if (reach) (*reach)[s] = cur;
    std::fill(next.begin(), next.end(), 0);
    bool any = false;
    int lo_c = 0;
    const int last_end = c.L - (c.p - 1 - s);
    for (int j = c.first_end(s); j <= last_end; ++j) {
      while (lo_c < j && c.prefix[j] - c.prefix[lo_c] + c.extra[s] > t) ++lo_c;
      const int lo = std::max({lo_c, c.lo_fit_at(s, j), s});
      if (lo <= j - 1 && count[j] - count[lo] > 0) next[j] = 1, any = true;
    }
    if (!any) return false;
    std::swap(cur, next);
  }
  return cur[c.L] != 0;
}

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

namespace {

/// Exact units: every cost rounded to a multiple of a power of two 2^-50 of the total, so sums are exact and
/// identical layers give identical spans wherever they sit. False when a cost is not finite.
bool to_units(const StageDpRequest& req, Chain& c) {
  const int p = req.stages, L = static_cast<int>(req.layer_cost.size());
  double total = 0;
  for (double x : req.layer_cost) total += std::max(0.0, x);
  for (int s = 0; s < p; ++s) total += std::max(0.0, extra(req, s));
  if (!std::isfinite(total)) return false;
  const double unit = total > 0 ? std::ldexp(1.0, std::ilogb(total) - 50) : 1.0;
  auto units = [&](double x) { return static_cast<int64_t>(std::llround(std::max(0.0, x) / unit)); };
  c.p = p;
  c.L = L;
  c.prefix.assign(L + 1, 0);
  for (int l = 0; l < L; ++l) c.prefix[l + 1] = c.prefix[l] + units(req.layer_cost[l]);
  c.extra.clear();
  for (int s = 0; s < p; ++s) c.extra.push_back(units(extra(req, s)));
  return true;
}

/// The furthest end j <= cap of stage s starting at i with cost and memory within bound t (i when none):
/// both limits only move left as the range grows, so two binary searches.
int furthest(const StageDpRequest& req, const Chain& c, int s, int i, int cap, int64_t t) {
  const int64_t room = t - c.extra[s] + c.prefix[i];  // prefix[j] <= room
  int hi = static_cast<int>(std::upper_bound(c.prefix.begin() + i, c.prefix.begin() + cap + 1, room) -
                            c.prefix.begin()) - 1;
  if (hi <= i || fits(req, s, i, hi)) return hi;
  int lo = i;  // [i, lo) fits (empty), [i, hi) does not
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (fits(req, s, i, mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/// Greedy test of bound t: each stage takes as many layers as fit, leaving one per stage still to come.
/// ends[s] (when given) receives the furthest end of the first s + 1 stages.
bool greedy_feasible(const StageDpRequest& req, const Chain& c, int64_t t, std::vector<int>* ends) {
  int i = 0;
  if (ends) ends->assign(c.p, 0);
  for (int s = 0; s < c.p; ++s) {
    const int j = furthest(req, c, s, i, c.L - (c.p - 1 - s), t);
    if (j <= i) return false;
    i = j;
    if (ends) (*ends)[s] = j;
  }
  return i == c.L;
}

/// Among the partitions within bound hi, the one whose stages start nearest an even split of the work.
/// ends[s]: the furthest end of s + 1 stages within hi (greedy), so a start i of stage s needs i <= ends[s - 1].
std::vector<int> even_starts(const StageDpRequest& req, const Chain& c, int64_t hi, const std::vector<int>& ends) {
  const int p = c.p, L = c.L;
  int64_t extra_sum = 0;
  for (int64_t e : c.extra) extra_sum += e;
  std::vector<int> starts(p + 1, 0);
  starts[p] = L;
  const long double work = static_cast<long double>(c.prefix[L]) + extra_sum;
  int64_t extras_before = extra_sum;
  for (int s = p - 1; s >= 1; --s) {
    extras_before -= c.extra[s];
    const int j = starts[s + 1];
    // The first start whose stage fits (fits is monotone: a later start leaves a sub-range).
    int lo = std::max(c.lo_cost(s, j, hi), s), top = std::min(j - 1, ends[s - 1]);
    if (lo > top) return {};
    if (!fits(req, s, top, j)) return {};
    int a = lo - 1, b = top;  // [b, j) fits; find the first
    while (b - a > 1) {
      const int mid = a + (b - a) / 2;
      if (fits(req, s, mid, j)) b = mid;
      else a = mid;
    }
    lo = b;
    const long double target = work * s / p - extras_before;
    // prefix is non-decreasing: the start nearest the target is next to the first prefix >= target.
    int pick = static_cast<int>(std::lower_bound(c.prefix.begin() + lo, c.prefix.begin() + top + 1,
                                                 static_cast<int64_t>(std::ceil(static_cast<double>(target)))) -
                                c.prefix.begin());
    pick = std::min(pick, top);
    if (pick > lo && std::fabs(static_cast<long double>(c.prefix[pick - 1]) - target) <
                         std::fabs(static_cast<long double>(c.prefix[pick]) - target))
      --pick;
    starts[s] = pick;
  }
  return starts;
}

StageDpResult finish(const StageDpRequest& req, std::vector<int> starts, int tried) {
  StageDpResult best;
  best.t_max_tried = tried;
  std::vector<double> costs;
  const double obj = pipeline_objective(req, starts, &costs);
  if (!std::isfinite(obj)) return best;
  best.feasible = true;
  best.objective = obj;
  best.starts = std::move(starts);
  best.stage_cost = std::move(costs);
  return best;
}

/// Exact solve of a short chain: bisection with the reachable-set test, O(p L) per bound.
StageDpResult solve_exact(const StageDpRequest& req, Chain& c) {
  StageDpResult best;
  const int p = c.p, L = c.L;
  int64_t extra_sum = 0, extra_min = INT64_MAX, extra_max = 0;
  for (int64_t e : c.extra) extra_sum += e, extra_min = std::min(extra_min, e), extra_max = std::max(extra_max, e);
  // What fits: sub-ranges of a range that fits fit too, so the first start that fits only moves right with the end.
  c.span = L - p + 1;
  c.lo_fit.resize(static_cast<size_t>(p) * c.span);
  for (int s = 0; s < p; ++s) {
    int i = s;
    for (int j = c.first_end(s); j < c.first_end(s) + c.span; ++j) {
      while (i < j && !fits(req, s, i, j)) ++i;
      c.lo_fit[static_cast<size_t>(s) * c.span + (j - c.first_end(s))] = i;
    }
  }
  int64_t lo = (c.prefix[L] + extra_sum + p - 1) / p;
  for (int l = 0; l < L; ++l) lo = std::max(lo, c.prefix[l + 1] - c.prefix[l] + extra_min);
  --lo;  // infeasible
  int64_t hi = c.prefix[L] + extra_max;
  ++best.t_max_tried;
  if (!feasible(c, hi, nullptr)) return best;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    ++best.t_max_tried;
    if (feasible(c, mid, nullptr)) hi = mid;
    else lo = mid;
  }
  // Walk back from the end and start each stage where an even split of the work would put it, among the starts
  // that keep the stage within the bound and leave a feasible prefix; ties go to the later start.
  std::vector<std::vector<char>> reach;
  feasible(c, hi, &reach);
  std::vector<int> starts(p + 1, 0);
  starts[p] = L;
  const long double work = static_cast<long double>(c.prefix[L]) + extra_sum;
  int64_t extras_before = extra_sum;
  for (int s = p - 1; s >= 0; --s) {
    extras_before -= c.extra[s];
    const int j = starts[s + 1];
    const int first = std::max({c.lo_cost(s, j, hi), c.lo_fit_at(s, j), s});
    const long double target = work * s / p - extras_before;
    int pick = -1;
    long double pick_gap = 0;
    for (int i = j - 1; i >= first; --i) {
      if (!reach[s][i]) continue;
      const long double gap = std::fabs(static_cast<long double>(c.prefix[i]) - target);
      if (pick < 0 || gap < pick_gap) pick = i, pick_gap = gap;
    }
    if (pick < 0) return best;  // cannot happen: j was reached through some start in range
    starts[s] = pick;
  }
  return finish(req, std::move(starts), best.t_max_tried);
}

/// Long chains: bisection with the greedy test, O(p log^2 L) per bound.
StageDpResult solve_greedy(const StageDpRequest& req, Chain& c) {
  const int p = c.p, L = c.L;
  int64_t extra_sum = 0, extra_min = INT64_MAX, extra_max = 0;
  for (int64_t e : c.extra) extra_sum += e, extra_min = std::min(extra_min, e), extra_max = std::max(extra_max, e);
  int64_t lo = (c.prefix[L] + extra_sum + p - 1) / p;
  for (int l = 0; l < L; ++l) lo = std::max(lo, c.prefix[l + 1] - c.prefix[l] + extra_min);
  --lo;
  int64_t hi = c.prefix[L] + extra_max;
  int tried = 1;
  if (!greedy_feasible(req, c, hi, nullptr)) return {};
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    ++tried;
    if (greedy_feasible(req, c, mid, nullptr)) hi = mid;
    else lo = mid;
  }
  std::vector<int> ends;
  greedy_feasible(req, c, hi, &ends);
  std::vector<int> starts = even_starts(req, c, hi, ends);
  if (starts.empty()) {  // the even walk met a hole the greedy bound does not see: take the greedy partition
    starts.assign(p + 1, 0);
    for (int s = 0; s < p; ++s) starts[s + 1] = ends[s];
  }
  StageDpResult r = finish(req, std::move(starts), tried);
  if (!r.feasible) return solve_exact(req, c);
  return r;
}

}  // namespace

StageDpResult solve_stage_dp(const StageDpRequest& req) {
  const int p = req.stages, L = static_cast<int>(req.layer_cost.size());
  if (p <= 0 || p > L) return {};
  Chain c;
  if (!to_units(req, c)) return {};
  // The reachable-set test is exact for any monotone `fits`; the greedy one is exact when a layer that fits some
  // stage alone fits every stage alone, which the planner's memory model gives (see the header).
  if (static_cast<int64_t>(p) * (L - p + 1) <= kExactCells) return solve_exact(req, c);
  return solve_greedy(req, c);
}

StageDpResult solve_stage_dp_exact(const StageDpRequest& req) {
  const int p = req.stages, L = static_cast<int>(req.layer_cost.size());
  if (p <= 0 || p > L) return {};
  Chain c;
  if (!to_units(req, c)) return {};
  return solve_exact(req, c);
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
