// Rank statistics for judging a cost model against measurements: Spearman's
// rank correlation (ties get the average of the ranks they span) and the
// overlap of two top-k sets. A model that only has to rank configs is judged
// by these, not by how close its times are.
//
// Pure functions on plain vectors; no knowledge of templates, devices or files.
#pragma once

#include <cstddef>
#include <vector>

namespace tuner::costmodel {

/// Ranks 1..n of the values (smallest first); tied values all get the mean of the ranks they span.
std::vector<double> average_ranks(const std::vector<double>& values);

/// Spearman's rank correlation of two equally long series: Pearson's correlation of their average
/// ranks. NaN when they differ in length, have fewer than two values, or one of them is constant.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

/// How many of the k smallest entries of `a` are among the k smallest of `b` (by index; ties broken
/// by index, so the result is deterministic). k is capped at the length.
size_t top_k_overlap(const std::vector<double>& a, const std::vector<double>& b, size_t k);

}  // namespace tuner::costmodel
