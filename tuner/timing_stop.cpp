#include "tuner/timing_stop.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tuner {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double median_ci_half_width(const std::vector<double>& times) {
  const size_t n = times.size();
  if (n < 6) return std::numeric_limits<double>::infinity();
  std::vector<double> v = times;
  std::sort(v.begin(), v.end());
  // Ranks (1-based) of the interval's ends: n/2 -+ 1.96 sqrt(n)/2, rounded outwards.
  const double half = 1.96 * std::sqrt(static_cast<double>(n)) / 2.0;
  const long lo = std::max(1L, static_cast<long>(std::floor(static_cast<double>(n) / 2.0 - half)));
  const long hi = std::min(static_cast<long>(n), static_cast<long>(std::ceil(static_cast<double>(n) / 2.0 + half + 1.0)));
  const double median = percentile(v, 0.5);
  if (!(median > 0)) return std::numeric_limits<double>::infinity();
  return (v[static_cast<size_t>(hi - 1)] - v[static_cast<size_t>(lo - 1)]) / 2.0 / median;
}

const char* timing_stop_reason(const std::vector<double>& times, double wall_ms, const MeasureSettings& s) {
  const int n = static_cast<int>(times.size());
  if (n >= s.max_repeats) return "max_repeats";
  if (n >= 1 && wall_ms >= s.max_wall_ms) return "max_wall";  // a slow config: fewer runs, not a timeout
  const double total = std::accumulate(times.begin(), times.end(), 0.0);
  if (n >= s.min_repeats && total >= s.max_time_ms) return "max_time";
  if (s.max_noise > 0 && n >= s.min_repeats && total >= s.min_time_ms && median_ci_half_width(times) <= s.max_noise)
    return "noise";
  return nullptr;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace tuner
