// When to stop timing a kernel: the adaptive rule of the measurement protocol.
//
// A config is timed in runs (each after an L2 flush) until the median is known
// well enough, as NVBench does, instead of for a fixed amount of kernel time:
// stop once at least `min_repeats` runs and `min_time_ms` of kernel time are
// measured and the distribution-free 95% confidence interval of the median
// (order statistics n/2 -+ 1.96*sqrt(n)/2) is within +-max_noise of it; stop in
// any case at `max_repeats` runs, `max_time_ms` of kernel time, or
// `max_wall_ms` of wall time (with at least one run). max_noise 0 turns the
// noise test off: then the fixed budget `max_time_ms` decides, as before.
//
// Pure functions, no CUDA: the runner calls them between batches of timed
// runs and the tests check them on synthetic samples.
#pragma once

#include <chrono>
#include <vector>

#include "tuner/measure_protocol.h"

namespace tuner {

/// Half the width of the 95% confidence interval of the median of `times`, relative to the median
/// (infinity with fewer than 6 samples, where the order statistics span the whole sample).
double median_ci_half_width(const std::vector<double>& times);

/// Why timing stops now, or nullptr to go on: "noise", "max_repeats", "max_time", "max_wall".
const char* timing_stop_reason(const std::vector<double>& times, double wall_ms, const MeasureSettings& s);

/// Seconds of wall time from t0 to now (steady clock).
double seconds_since(std::chrono::steady_clock::time_point t0);

/// The median and interquartile range of `times` (linear interpolation between order statistics).
double percentile(std::vector<double> times, double q);

}  // namespace tuner
