#include "runtime/kernel_choice.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "templates/launch_check.h"

namespace tuner::runtime {

bool DeviceMatch::names(const std::string& device_name) const {
  return device_name == name || device_name == "replay:" + name;
}

bool DeviceMatch::accepts(const TunedRecord& r) const {
  if (names(r.device_name)) return true;
  return match_identity && !r.device_simulated && r.cc_major == cc_major && r.cc_minor == cc_minor &&
         r.sm_count == sm_count;
}

std::optional<double> shape_distance(const templates::Workload& asked, const templates::Workload& tuned) {
  static const std::vector<std::string> exact_dims = {"R", "S", "stride", "pad", "dilation"};
  if (asked.op != tuned.op || asked.dims.size() != tuned.dims.size()) return std::nullopt;
  double d = 0;
  for (size_t i = 0; i < asked.dims.size(); ++i) {
    const auto& [name, a] = asked.dims[i];
    if (tuned.dims[i].first != name) return std::nullopt;
    const int64_t t = tuned.dims[i].second;
    const bool must_match = asked.op == "conv2d" && std::count(exact_dims.begin(), exact_dims.end(), name) > 0;
    if (must_match && a != t) return std::nullopt;
    // Equal sizes add nothing: pad=0 against pad=0 added |ln(0/0)|, NaN, so a conv without padding never matched
    // its own shape exactly and NaN broke the candidates' order.
    if (a == t) continue;
    if (a <= 0 || t <= 0) return std::nullopt;
    d += std::abs(std::log(static_cast<double>(a) / static_cast<double>(t)));
  }
  return d;
}

namespace {

struct Candidate {
  const TunedRecord* record;
  double distance;
  /// Its time over the product of its shape's dimensions: comparable across shapes (a smaller problem is faster
  /// and says nothing about its config), and within one shape the same order as the time.
  double time_per_size;
};

/// Each template's space at the asked workload, built once per lookup (a database's every config is a candidate).
using Spaces = std::map<const templates::KernelTemplate*, search::ConfigSpace>;

/// The candidate's config instantiated for `w` when it is valid there and writes the wanted output type.
std::optional<Choice> fit(const Candidate& c, const Catalog& catalog, const templates::DeviceLimits& limits,
                          const templates::Workload& w, std::optional<templates::DType> out_dtype, Spaces& spaces,
                          bool explain, std::string* last_reason) {
  const templates::KernelTemplate* tmpl = catalog.find(c.record->template_name);
  if (!tmpl) return std::nullopt;
  if (auto why = tmpl->unsupported(w)) return *last_reason = *why, std::nullopt;
  if (auto why = tmpl->unsupported_on(limits)) return *last_reason = *why, std::nullopt;
  try {
    auto it = spaces.find(tmpl);
    if (it == spaces.end()) it = spaces.emplace(tmpl, tmpl->space(w, limits)).first;
    const search::ConfigSpace& space = it->second;
    const search::Config config = space.from_json(nlohmann::json::parse(c.record->config_json));
    if (auto why = space.violation(config)) {
      // The rule it breaks names no value ("block and grid within the device's limits"); its launch at the asked
      // shape does, where it can be computed ("grid y 100000 > 65535").
      // (Instantiated for the message only: a lookup where nothing fits tries every record.)
      std::string detail = *why;
      try {
        if (explain)
          if (auto launch = templates::launch_problem(tmpl->instantiate(space, config, w).launch, 0, 0, limits))
            detail += " (its launch here: " + *launch + ")";
      } catch (const std::exception&) {
      }
      *last_reason = "config of " + c.record->shape + " is invalid here: " + detail;
      return std::nullopt;
    }
    Choice out{c.record, tmpl, config, tmpl->instantiate(space, config, w), c.distance == 0};
    // A user kernel's buffers have the types its spec gives; a built-in template's output type is a knob.
    if (!out_dtype && catalog.user_op(w.op)) return out;
    for (const auto& b : out.instance.buffers)
      if (b.output && b.dtype != out_dtype.value_or(w.dtype)) {
        *last_reason = "config of " + c.record->shape + " writes " + templates::to_string(b.dtype);
        return std::nullopt;
      }
    return out;
  } catch (const std::exception& e) {
    *last_reason = std::string("config of ") + c.record->shape + " does not apply: " + e.what();
    return std::nullopt;
  }
}

}  // namespace

std::optional<Choice> choose(const std::vector<TunedRecord>& records, const Catalog& catalog,
                             const DeviceMatch& device, const templates::DeviceLimits& limits,
                             const templates::Workload& w,
                             std::optional<templates::DType> output_dtype, bool nearest, std::string* why) {
  const std::string dtype = templates::to_string(w.dtype);
  std::vector<Candidate> candidates;
  int64_t other_geometry = 0;  // records of the op and dtype here whose fixed dimensions differ (conv2d's R, S, ...)
  // Records of one workload share its parse, and so its distance.
  std::unordered_map<const templates::Workload*, std::optional<double>> distances;
  for (const auto& r : records) {
    if (!r.workload || r.op != w.op || r.dtype != dtype || !device.accepts(r)) continue;
    const templates::Workload& tuned = *r.workload;
    auto [at, added] = distances.try_emplace(&tuned);
    if (added) at->second = shape_distance(w, tuned);
    const std::optional<double> d = at->second;
    if (!d) ++other_geometry;
    if (!d || (!nearest && *d != 0)) continue;
    // Dimensions that can be 0 (conv2d's pad) are left out: within one shape the key must order as the time does.
    double size = 1;
    for (const auto& [name, v] : tuned.dims)
      if (v > 0) size *= static_cast<double>(v);
    // The time to 1e-9 ms (query's ROUND(mean, 9)) over the size: within one shape equal means tie exactly.
    // (nearbyint in double: llround of a time past 9.2e9 ms or an infinite one is unspecified, LLONG_MIN here.)
    const double per_size = r.time_ms > 0 && std::isfinite(r.time_ms) ? std::nearbyint(r.time_ms * 1e9) / size
                                                                        : std::numeric_limits<double>::infinity();
    candidates.push_back({&r, *d, per_size});
  }
  // Stable, and one shape's times compared as query --best compares them (to 1e-9 ms): the records come ranked as
  // query ranks them (tuned_records.cpp: the mean, then the count of measurements, then storage order), and a tie
  // must keep that order, or a database and its best-configs export launch different configs.
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.distance, a.time_per_size, a.record->shape, a.record->template_name) <
           std::tie(b.distance, b.time_per_size, b.record->shape, b.record->template_name);
  });
  std::string reason;
  Spaces spaces;
  for (const auto& c : candidates)
    if (auto choice = fit(c, catalog, limits, w, output_dtype, spaces, false, &reason)) return choice;
  if (why) {
    if (!candidates.empty()) (void)fit(candidates.back(), catalog, limits, w, output_dtype, spaces, true, &reason);
    *why = "no tuned config for " + w.to_string() + " on " + device.name;
    const int64_t exact =
        std::count_if(candidates.begin(), candidates.end(), [](const Candidate& c) { return c.distance == 0; });
    const int64_t others = static_cast<int64_t>(candidates.size()) - exact;
    const auto records = [](int64_t n) { return std::to_string(n) + (n == 1 ? " record" : " records"); };
    if (candidates.empty() && nearest && other_geometry > 0)
      *why += " (" + records(other_geometry) +
              " of this op and dtype on this device, none with the asked R, S, stride, pad and dilation, which must be "
              "equal)";
    else if (candidates.empty())
      *why += nearest ? " (no record of this op and dtype on this device)" : " (this exact shape was not tuned)";
    else
      *why += " (" + (exact > 0 ? records(exact) + " of this shape" : "") + (exact > 0 && others > 0 ? " and " : "") +
              (others > 0 ? (exact > 0 ? std::to_string(others) : records(others)) + " of other shapes" : "") +
              ", none usable here; last reason: " + reason + ")";
  }
  return std::nullopt;
}

}  // namespace tuner::runtime
