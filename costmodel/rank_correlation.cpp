#include "costmodel/rank_correlation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tuner::costmodel {

namespace {

/// Indices of the values, smallest first (stable: ties keep index order).
std::vector<size_t> order(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  return idx;
}

}  // namespace

std::vector<double> average_ranks(const std::vector<double>& values) {
  const std::vector<size_t> idx = order(values);
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && values[idx[j + 1]] == values[idx[i]]) ++j;
    const double rank = 0.5 * static_cast<double>(i + j) + 1.0;  // mean of ranks i+1 .. j+1
    for (size_t k = i; k <= j; ++k) ranks[idx[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (a.size() != b.size() || a.size() < 2) return nan;
  const std::vector<double> ra = average_ranks(a), rb = average_ranks(b);
  const double n = static_cast<double>(a.size());
  const double mean = (n + 1.0) / 2.0;  // both rank series have this mean, ties or not
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (saa == 0 || sbb == 0) return nan;
  return sab / std::sqrt(saa * sbb);
}

size_t top_k_overlap(const std::vector<double>& a, const std::vector<double>& b, size_t k) {
  const size_t n = std::min(a.size(), b.size());
  k = std::min(k, n);
  std::vector<size_t> ia = order(a), ib = order(b);
  ia.resize(k);
  ib.resize(k);
  std::sort(ia.begin(), ia.end());
  std::sort(ib.begin(), ib.end());
  std::vector<size_t> common;
  std::set_intersection(ia.begin(), ia.end(), ib.begin(), ib.end(), std::back_inserter(common));
  return common.size();
}

}  // namespace tuner::costmodel
