// Benchmark of the sim device against real GPUs (not a test): for every
// whole-space recording under data/replay/ (replay files, format
// tuner-replay/1), the sim device's analytic model estimates each recorded
// config from the template's profile and the recorded registers, shared
// memory and spills, and its ranking is compared with the measured times:
// Spearman rank correlation, the real time of the config the sim ranks first
// over the real best, and how many of the sim's top 10 are in the real top 10.
// The "generic" columns are the analytic model without its row-op and
// ring-GEMM paths (what the sim was before it was calibrated on these
// recordings).
//
// For row-op recordings it also checks the calibration for overfitting: for
// each of --splits random halves, the row-op model's parameters are fitted on
// one half (coordinate search from textbook starting values, minimising the
// squared log error of the times) and the Spearman is judged on the other;
// the shipped parameters are judged on both halves. Ring-GEMM recordings
// (gemm_tc_wgmma) get the same table for the ring model's parameters
// (ring_gemm_model.h), and a second one: the parameters fitted on all of one
// recording, judged on another recording of the same template (4096^3 ->
// 8192^3 and back), against the shipped and the textbook values.
//
//   build/bin/sim_vs_replay_bench [--replay-dir data/replay] [--splits 10] [--out results/sim_vs_replay.json]
//                                 [--dump FILE.csv] [--joint 1]
//
// Prints tables and writes the results JSON; --dump writes every recorded config with its real time
// and the sim's estimate and terms (CSV), to study where the model is wrong.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/features.h"
#include "costmodel/rank_correlation.h"
#include "costmodel/ring_gemm_model.h"
#include "costmodel/row_op_model.h"
#include "tuner/replay_oracle.h"

using namespace tuner;

namespace {

using Params = costmodel::RowModelParams;
using RingParams = costmodel::RingGemmParams;

/// Textbook starting values for the fit (not the shipped ones): a ~300 ns loaded DRAM round trip, a 4x
/// unrolled scalar loop, two
/// 20-cycle exps per merge, 30-cycle shuffles, 100-cycle barriers, all of L2, 85% of DRAM bandwidth.
Params textbook_params() {
  Params p;
  p.memory_latency_cycles = 600;
  p.scalar_loads_per_trip = 4;
  p.merge_cycles = 50;
  p.shuffle_cycles = 30;
  p.barrier_cycles = 100;
  p.l2_share = 1.0;
  p.dram_efficiency = 0.85;
  return p;
}

/// Textbook starting values of the ring-GEMM fit (not the shipped ones): the spec table's L2 bandwidth
/// shared by the SMs, the whole tensor peak, the generic model's 600-cycle global latency for the ring
/// and as much again for a DRAM miss, a stage released halfway through the next k-tile's MMAs, a near-max
/// blend, a 600-cycle epilogue round trip with a sector per cycle, all of L2, 85% of DRAM bandwidth, and a
/// cluster's sync and launch a 600-cycle round trip each, and pingpong at the full MMA rate.
RingParams textbook_ring_params(const costmodel::GpuSpec& gpu) {
  RingParams p;
  p.l2_bytes_per_clk_per_sm = gpu.l2_bandwidth_gbps / gpu.boost_clock_ghz / gpu.sm_count;
  p.mma_efficiency = 1.0;
  p.ring_latency_cycles = 600;
  p.dram_latency_cycles = 600;
  p.release_share = 0.5;
  p.blend_exponent = 8;
  p.epilogue_latency_cycles = 600;
  p.epilogue_sector_cycles = 1;
  p.l2_share = 1.0;
  p.dram_efficiency = 0.85;
  p.cluster_sync_cycles = 600;  // another round trip, to the cluster's other CTA
  p.cluster_launch_cycles = 600;
  p.pingpong_mma_share = 1.0;  // a pingpong CTA's consumer issues at the full rate
  return p;
}

/// The position, in the compiled prior's order with these row-op parameters, of the first config within
/// 95% of the real best: the recorded configs ranked by the estimate with estimated registers, the best
/// `refine` of them re-ranked with their recorded (compiled) resources, as xgb's first proposal ranks them
/// (tuner/strategy_factory.h; the proposal then picks for diversity, so only position 1 is exactly its).
size_t prior_first_hit(const RecordedSpace& s, const Params& p, size_t refine) {
  const auto time = [&](const costmodel::KernelProfile& prof, const costmodel::KernelResources& r) {
    const auto e = costmodel::estimate_row_op(prof, r, s.gpu, p);
    return e.launchable ? e.time_ms : std::numeric_limits<double>::infinity();
  };
  std::vector<double> value;
  for (const auto& c : s.configs) value.push_back(time(c.profile, {costmodel::estimated_registers(c.profile), 0, 0}));
  std::vector<size_t> order(value.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const auto by_value = [&](size_t a, size_t b) { return value[a] < value[b]; };
  std::stable_sort(order.begin(), order.end(), by_value);
  for (size_t k = 0; k < refine && k < order.size(); ++k)
    value[order[k]] = time(s.configs[order[k]].profile, s.configs[order[k]].resources);
  std::stable_sort(order.begin(), order.end(), by_value);
  for (size_t k = 0; k < order.size(); ++k)
    if (s.best_ms / s.configs[order[k]].time_ms >= 0.95) return k + 1;
  return order.size();
}

template <class P>
struct ParamRef {
  const char* name;
  double P::*field;
  double lo, hi;  ///< Physical bounds the fit keeps to.
};

const std::vector<ParamRef<Params>>& param_refs(const Params&) {
  static const std::vector<ParamRef<Params>> refs = {
      {"memory_latency_cycles", &Params::memory_latency_cycles, 200, 2000},
      {"scalar_loads_per_trip", &Params::scalar_loads_per_trip, 1, 16},
      {"merge_cycles", &Params::merge_cycles, 10, 500},
      {"shuffle_cycles", &Params::shuffle_cycles, 5, 200},
      {"barrier_cycles", &Params::barrier_cycles, 20, 1000},
      {"l2_share", &Params::l2_share, 0.1, 1.0},
      {"dram_efficiency", &Params::dram_efficiency, 0.3, 0.95},
  };
  return refs;
}

const std::vector<ParamRef<RingParams>>& param_refs(const RingParams&) {
  static const std::vector<ParamRef<RingParams>> refs = {
      {"l2_bytes_per_clk_per_sm", &RingParams::l2_bytes_per_clk_per_sm, 8, 128},
      {"mma_efficiency", &RingParams::mma_efficiency, 0.3, 1.0},
      {"ring_latency_cycles", &RingParams::ring_latency_cycles, 200, 4000},
      {"dram_latency_cycles", &RingParams::dram_latency_cycles, 50, 4000},
      {"release_share", &RingParams::release_share, 0.05, 1.0},
      {"blend_exponent", &RingParams::blend_exponent, 1.5, 16},
      {"epilogue_latency_cycles", &RingParams::epilogue_latency_cycles, 100, 8000},
      {"epilogue_sector_cycles", &RingParams::epilogue_sector_cycles, 0.1, 16},
      {"l2_share", &RingParams::l2_share, 0.1, 1.0},
      {"dram_efficiency", &RingParams::dram_efficiency, 0.3, 0.95},
      {"cluster_sync_cycles", &RingParams::cluster_sync_cycles, 50, 4000},
      {"cluster_launch_cycles", &RingParams::cluster_launch_cycles, 100, 16000},
      {"pingpong_mma_share", &RingParams::pingpong_mma_share, 0.3, 1.0},
  };
  return refs;
}

template <class P>
nlohmann::json params_json(const P& p) {
  nlohmann::json j;
  for (const auto& r : param_refs(p)) j[r.name] = p.*r.field;
  return j;
}

template <class P>
std::string params_line(const P& p) {
  std::string line;
  char buf[32];
  for (const auto& r : param_refs(p)) {
    std::snprintf(buf, sizeof buf, "%s%.3g", line.empty() ? "" : ", ", p.*r.field);
    line += buf;
  }
  return line;
}

costmodel::SimEstimate estimate_with(const RecordedConfig& c, const costmodel::GpuSpec& gpu, const Params& p) {
  return costmodel::estimate_row_op(c.profile, c.resources, gpu, p);
}
costmodel::SimEstimate estimate_with(const RecordedConfig& c, const costmodel::GpuSpec& gpu, const RingParams& p) {
  return costmodel::estimate_ring_gemm(c.profile, c.resources, gpu, p);
}

template <class P>
std::vector<double> estimates_with(const RecordedSpace& s, const P& params) {
  std::vector<double> est;
  for (const auto& c : s.configs) {
    const auto e = estimate_with(c, s.gpu, params);
    est.push_back(e.launchable ? e.time_ms : std::numeric_limits<double>::infinity());
  }
  return est;
}

/// The analytic model without its row-op and ring-GEMM paths: the sim as it was before the calibration.
std::vector<double> generic_estimates(const RecordedSpace& s) {
  std::vector<double> est;
  for (const auto& c : s.configs) {
    auto p = c.profile;
    p.row = {};
    p.gemm = {};
    const auto e = costmodel::estimate(p, c.resources, s.gpu);
    est.push_back(e.launchable ? e.time_ms : std::numeric_limits<double>::infinity());
  }
  return est;
}

template <class P>
RankAgreement agreement_on(const RecordedSpace& s, const P& p, const std::vector<size_t>& subset) {
  return rank_agreement(s, estimates_with(s, p), subset);
}

template <class P>
double spearman_on(const RecordedSpace& s, const P& p, const std::vector<size_t>& subset) {
  return agreement_on(s, p, subset).spearman;
}

/// Mean squared error of log(estimate / real time) over `subset`: what the fit minimises. Unlike the
/// Spearman it is judged by, it pins the absolute scale of the latency terms against the bandwidth terms.
template <class P>
double log_error(const RecordedSpace& s, const P& p, const std::vector<size_t>& subset) {
  const auto est = estimates_with(s, p);
  double sum = 0;
  size_t n = 0;
  const auto add = [&](size_t i) {
    const double d = std::log(est[i] / s.configs[i].time_ms);
    sum += std::isfinite(d) ? d * d : 100.0;
    ++n;
  };
  if (subset.empty())
    for (size_t i = 0; i < s.configs.size(); ++i) add(i);
  else
    for (size_t i : subset) add(i);
  return sum / static_cast<double>(std::max<size_t>(n, 1));
}

/// Coordinate search: each parameter in turn scaled by 0.5, 0.8, 1.25, 2 (within its bounds) while
/// `error` falls; at most 12 sweeps.
template <class P, class Error>
P coordinate_search(P p, const Error& error) {
  double best = error(p);
  for (int sweep = 0; sweep < 12; ++sweep) {
    bool improved = false;
    for (const auto& r : param_refs(p))
      for (double f : {0.5, 0.8, 1.25, 2.0}) {
        P q = p;
        q.*r.field = std::clamp(p.*r.field * f, r.lo, r.hi);
        const double e = error(q);
        if (e < best - 1e-12) {
          best = e;
          p = q;
          improved = true;
        }
      }
    if (!improved) break;
  }
  return p;
}

/// The parameters that minimise the log error on `subset` (empty: all configs).
template <class P>
P fit(const RecordedSpace& s, P p, const std::vector<size_t>& subset) {
  return coordinate_search(p, [&](const P& q) { return log_error(s, q, subset); });
}

/// fit() on the mean of several recordings' log errors (each weighs the same).
template <class P>
P fit_joint(const std::vector<const RecordedSpace*>& recs, P p) {
  return coordinate_search(p, [&recs](const P& q) {
    double sum = 0;
    for (const RecordedSpace* r : recs) sum += log_error(*r, q, {});
    return sum / static_cast<double>(std::max<size_t>(recs.size(), 1));
  });
}

/// The seed-th random half split of a recording's configs: (train, held-out).
std::pair<std::vector<size_t>, std::vector<size_t>> random_halves(size_t n, int seed) {
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  std::shuffle(idx.begin(), idx.end(), rng);
  return {std::vector<size_t>(idx.begin(), idx.begin() + idx.size() / 2),
          std::vector<size_t>(idx.begin() + idx.size() / 2, idx.end())};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "data/replay";
  std::string out_path = "results/sim_vs_replay.json";
  int splits = 10;
  std::string dump_path;
  bool joint = false;  // --joint 1: also fit the ring parameters on every ring recording at once
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--replay-dir") dir = argv[i + 1];
    else if (a == "--out") out_path = argv[i + 1];
    else if (a == "--splits") splits = std::atoi(argv[i + 1]);
    else if (a == "--dump") dump_path = argv[i + 1];
    else if (a == "--joint") joint = std::string(argv[i + 1]) == "1";
    else {
      std::fprintf(stderr, "unknown option '%s' (allowed: --replay-dir, --splits, --out, --dump, --joint)\n", argv[i]);
      return 2;
    }
  }
  if ((argc - 1) % 2 != 0) {
    std::fprintf(stderr, "option '%s' needs a value\n", argv[argc - 1]);
    return 2;
  }
  const auto files = replay_files(dir);
  if (files.empty()) {
    std::fprintf(stderr, "no replay files (*.json) in '%s'\n", dir.c_str());
    return 2;
  }

  std::printf("Sim device against whole-space recordings in %s (estimates from the recorded registers, "
              "shared memory and spills)\n\n",
              dir.c_str());
  std::printf("%-60s %7s | %8s %9s %6s | %8s %9s %6s\n", "recording", "configs", "generic", "pick/best", "top10",
              "sim", "pick/best", "top10");
  std::printf("%-60s %7s | %8s %9s %6s | %8s %9s %6s\n", "", "", "Spearman", "", "", "Spearman", "", "");
  nlohmann::json rows = nlohmann::json::array();
  std::vector<RecordedSpace> spaces;
  std::ofstream dump;
  if (!dump_path.empty()) {
    dump.open(dump_path);
    dump << "file,config,real_ms,sim_ms,generic_ms,dram_ms,l2_ms,latency_ms,blocks_per_sm,limiter,waves\n";
  }
  for (const auto& f : files) {
    RecordedSpace s;
    try {
      s = load_recorded_space(f);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "skipped: %s\n", e.what());
      continue;
    }
    const auto generic = rank_agreement(s, generic_estimates(s));
    const auto sim = rank_agreement(s, sim_estimates(s));
    std::printf("%-60s %7zu | %8.3f %8.2fx %4zu/10 | %8.3f %8.2fx %4zu/10\n", s.label().c_str(), sim.configs,
                generic.spearman, generic.pick_over_best, generic.top10_overlap, sim.spearman, sim.pick_over_best,
                sim.top10_overlap);
    if (!s.version_matches) std::printf("  (recorded with an older version of %s)\n", s.tmpl->name().c_str());
    rows.push_back({{"file", std::filesystem::path(f).filename().string()},
                    {"recording", s.label()},
                    {"configs", sim.configs},
                    {"best_ms", s.best_ms},
                    {"template_version_matches", s.version_matches},
                    {"generic", {{"spearman", generic.spearman}, {"pick_over_best", generic.pick_over_best},
                                 {"top10_overlap", generic.top10_overlap}}},
                    {"sim", {{"spearman", sim.spearman}, {"pick_over_best", sim.pick_over_best},
                             {"top10_overlap", sim.top10_overlap}}}});
    if (dump.is_open())
      for (const auto& c : s.configs) {
        const auto e = costmodel::estimate(c.profile, c.resources, s.gpu);
        auto generic_profile = c.profile;
        generic_profile.row = {};
        generic_profile.gemm = {};
        const auto g = costmodel::estimate(generic_profile, c.resources, s.gpu);
        std::string config = s.space.to_json_string(c.config);
        std::replace(config.begin(), config.end(), ',', ';');
        dump << std::filesystem::path(f).filename().string() << "," << config << "," << c.time_ms << ","
             << e.time_ms << "," << g.time_ms << "," << e.dram_ms << "," << e.l2_ms << "," << e.latency_ms << ","
             << e.occupancy.blocks_per_sm << "," << e.occupancy.limiter << "," << e.waves << "\n";
      }
    spaces.push_back(std::move(s));
  }

  // Held-out check of the row-op calibration.
  nlohmann::json heldout = nlohmann::json::array();
  for (size_t si = 0; si < spaces.size(); ++si) {
    const RecordedSpace& s = spaces[si];
    if (!costmodel::is_row_op(s.configs.front().profile) || splits <= 0) continue;
    std::printf("\nRow-op parameters fitted on a random half of %s, judged on the other half\n", s.label().c_str());
    std::printf("%5s | %8s %8s | %8s %8s | %s\n", "split", "fit:train", "held-out", "shipped", "shipped",
                "fitted parameters (latency, scalar loads/trip, merge, shuffle, barrier, L2 share, DRAM eff.)");
    std::printf("%5s | %8s %8s | %8s %8s |\n", "", "", "", "train", "held-out");
    std::vector<double> fit_test, shipped_test;
    nlohmann::json split_rows = nlohmann::json::array();
    for (int seed = 1; seed <= splits; ++seed) {
      std::vector<size_t> idx(s.configs.size());
      std::iota(idx.begin(), idx.end(), size_t{0});
      std::mt19937_64 rng(static_cast<uint64_t>(seed));
      std::shuffle(idx.begin(), idx.end(), rng);
      const std::vector<size_t> train(idx.begin(), idx.begin() + idx.size() / 2);
      const std::vector<size_t> test(idx.begin() + idx.size() / 2, idx.end());
      const Params fitted = fit(s, textbook_params(), train);
      const double train_sp = spearman_on(s, fitted, train);
      const double test_sp = spearman_on(s, fitted, test);
      const double shipped_train = spearman_on(s, Params{}, train), shipped_test_sp = spearman_on(s, Params{}, test);
      fit_test.push_back(test_sp);
      shipped_test.push_back(shipped_test_sp);
      std::printf("%5d | %8.3f %8.3f | %8.3f %8.3f | %.0f, %.1f, %.0f, %.0f, %.0f, %.2f, %.2f\n", seed, train_sp, test_sp,
                  shipped_train, shipped_test_sp, fitted.memory_latency_cycles, fitted.scalar_loads_per_trip,
                  fitted.merge_cycles,
                  fitted.shuffle_cycles, fitted.barrier_cycles, fitted.l2_share, fitted.dram_efficiency);
      split_rows.push_back({{"seed", seed},
                            {"fit_train_spearman", train_sp},
                            {"fit_heldout_spearman", test_sp},
                            {"shipped_train_spearman", shipped_train},
                            {"shipped_heldout_spearman", shipped_test_sp},
                            {"fitted", params_json(fitted)}});
    }
    std::printf("  held-out Spearman: fitted median %.3f (min %.3f); shipped median %.3f (min %.3f)\n",
                median(fit_test), *std::min_element(fit_test.begin(), fit_test.end()), median(shipped_test),
                *std::min_element(shipped_test.begin(), shipped_test.end()));
    std::printf("  textbook starting values on all configs: %.3f\n", spearman_on(s, textbook_params(), {}));
    // The compiled prior (xgb's first batch) without the parameters fitted to this recording: fitted on
    // the configs outside 95% of the best only (the model never sees a good one), and textbook values.
    std::vector<size_t> not_good;
    for (size_t i = 0; i < s.configs.size(); ++i)
      if (s.best_ms / s.configs[i].time_ms < 0.95) not_good.push_back(i);
    const Params blind = fit(s, textbook_params(), not_good);
    nlohmann::json prior_hits;
    std::printf("  compiled prior (64 compiled), position of the first config within 95%% of the best:");
    for (const auto& [name, params] : std::vector<std::pair<std::string, Params>>{
             {"shipped", Params{}}, {"fitted without the good configs", blind}, {"textbook", textbook_params()}}) {
      const size_t hit = prior_first_hit(s, params, 64), cheap = prior_first_hit(s, params, 0);
      std::printf(" %s %zu (estimated registers: %zu);", name.c_str(), hit, cheap);
      prior_hits[name] = {{"compiled_64", hit}, {"estimated", cheap}};
    }
    std::printf("\n");
    heldout.push_back({{"recording", s.label()},
                       {"splits", split_rows},
                       {"median_fit_heldout_spearman", median(fit_test)},
                       {"median_shipped_heldout_spearman", median(shipped_test)},
                       {"textbook_spearman", spearman_on(s, textbook_params(), {})},
                       {"prior_first_hit", prior_hits}});
  }

  // Held-out checks of the ring-GEMM parameters: fitted on a random half of a recording and judged on the
  // other half; fitted on one whole recording and judged on another of the same template (another size).
  nlohmann::json ring_heldout = nlohmann::json::array();
  std::vector<size_t> ring_spaces;
  for (size_t si = 0; si < spaces.size(); ++si)
    if (costmodel::is_ring_gemm(spaces[si].configs.front().profile)) ring_spaces.push_back(si);
  for (size_t si : ring_spaces) {
    const RecordedSpace& s = spaces[si];
    if (splits <= 0) break;
    const RingParams textbook = textbook_ring_params(s.gpu);
    std::printf("\nRing-GEMM parameters fitted on a random half of %s, judged on the other half\n", s.label().c_str());
    std::printf("%5s | %8s %8s | %8s %8s | %s\n", "split", "fit:train", "held-out", "shipped", "shipped",
                "fitted parameters (L2 B/clk/SM, MMA eff., ring latency, DRAM latency, release, blend, "
                "epilogue latency, cycles/sector, L2 share, DRAM eff., cluster sync, cluster launch, pingpong MMA share)");
    std::printf("%5s | %8s %8s | %8s %8s |\n", "", "", "", "train", "held-out");
    std::vector<double> fit_test, shipped_test;
    nlohmann::json split_rows = nlohmann::json::array();
    for (int seed = 1; seed <= splits; ++seed) {
      const auto [train, test] = random_halves(s.configs.size(), seed);
      const RingParams fitted = fit(s, textbook, train);
      const double train_sp = spearman_on(s, fitted, train), test_sp = spearman_on(s, fitted, test);
      const double shipped_train = spearman_on(s, RingParams{}, train);
      const double shipped_test_sp = spearman_on(s, RingParams{}, test);
      fit_test.push_back(test_sp);
      shipped_test.push_back(shipped_test_sp);
      std::printf("%5d | %8.3f %8.3f | %8.3f %8.3f | %s\n", seed, train_sp, test_sp, shipped_train, shipped_test_sp,
                  params_line(fitted).c_str());
      split_rows.push_back({{"seed", seed},
                            {"fit_train_spearman", train_sp},
                            {"fit_heldout_spearman", test_sp},
                            {"shipped_train_spearman", shipped_train},
                            {"shipped_heldout_spearman", shipped_test_sp},
                            {"fitted", params_json(fitted)}});
    }
    std::printf("  held-out Spearman: fitted median %.3f (min %.3f); shipped median %.3f (min %.3f)\n",
                median(fit_test), *std::min_element(fit_test.begin(), fit_test.end()), median(shipped_test),
                *std::min_element(shipped_test.begin(), shipped_test.end()));
    const auto tb = agreement_on(s, textbook, {});
    std::printf("  textbook starting values on all configs: Spearman %.3f, pick/best %.2fx\n", tb.spearman,
                tb.pick_over_best);
    // The search's cheap prior ranks configs before compiling them, with registers estimated from the
    // profile (costmodel/features.h) rather than read from the cubin.
    std::vector<double> cheap, cheap_generic;
    for (const auto& c : s.configs) {
      const costmodel::KernelResources est{costmodel::estimated_registers(c.profile), 0, 0};
      const auto e = costmodel::estimate(c.profile, est, s.gpu);
      cheap.push_back(e.launchable ? e.time_ms : std::numeric_limits<double>::infinity());
      auto g = c.profile;
      g.gemm = {};
      const auto ge = costmodel::estimate(g, est, s.gpu);
      cheap_generic.push_back(ge.launchable ? ge.time_ms : std::numeric_limits<double>::infinity());
    }
    const auto pa = rank_agreement(s, cheap), pg = rank_agreement(s, cheap_generic);
    std::printf("  with estimated registers (the uncompiled prior): Spearman %.3f, pick/best %.2fx (generic model: "
                "%.3f, %.2fx)\n", pa.spearman, pa.pick_over_best, pg.spearman, pg.pick_over_best);
    ring_heldout.push_back({{"recording", s.label()},
                            {"splits", split_rows},
                            {"median_fit_heldout_spearman", median(fit_test)},
                            {"median_shipped_heldout_spearman", median(shipped_test)},
                            {"textbook_spearman", tb.spearman}});
  }
  nlohmann::json ring_across = nlohmann::json::array();
  bool across_header = false;
  for (size_t from : ring_spaces)
    for (size_t to : ring_spaces) {
      const RecordedSpace &a = spaces[from], &b = spaces[to];
      if (from == to || splits <= 0 || a.tmpl->name() != b.tmpl->name()) continue;
      if (!across_header) {
        std::printf("\nRing-GEMM parameters fitted on all of one recording, judged on another (Spearman, pick/best)\n");
        std::printf("%-30s %-30s | %15s | %15s | %15s\n", "fitted on", "judged on", "fitted", "shipped", "textbook");
        across_header = true;
      }
      const RingParams fitted = fit(a, textbook_ring_params(a.gpu), {});
      const auto f = agreement_on(b, fitted, {}), sh = agreement_on(b, RingParams{}, {});
      const auto tb = agreement_on(b, textbook_ring_params(b.gpu), {});
      const auto shape = [](const RecordedSpace& r) { return r.data.shape + " " + r.tmpl->name(); };
      std::printf("%-30s %-30s | %7.3f %6.2fx | %7.3f %6.2fx | %7.3f %6.2fx\n", shape(a).c_str(), shape(b).c_str(),
                  f.spearman, f.pick_over_best, sh.spearman, sh.pick_over_best, tb.spearman, tb.pick_over_best);
      std::printf("  fitted: %s\n", params_line(fitted).c_str());
      ring_across.push_back({{"fitted_on", a.label()},
                             {"judged_on", b.label()},
                             {"fitted", params_json(fitted)},
                             {"fitted_spearman", f.spearman},
                             {"fitted_pick_over_best", f.pick_over_best},
                             {"shipped_spearman", sh.spearman},
                             {"shipped_pick_over_best", sh.pick_over_best},
                             {"textbook_spearman", tb.spearman},
                             {"textbook_pick_over_best", tb.pick_over_best}});
    }

  // One parameter set for every ring-GEMM recording at once (shapes, GPUs, template versions): fitted
  // from the shipped values and from the textbook ones, each judged on every recording.
  nlohmann::json ring_joint = nlohmann::json::object();
  if (joint && ring_spaces.size() >= 2) {
    std::vector<const RecordedSpace*> recs;
    for (size_t i : ring_spaces) recs.push_back(&spaces[i]);
    const RingParams from_shipped = fit_joint(recs, RingParams{});
    const RingParams from_textbook = fit_joint(recs, textbook_ring_params(spaces[ring_spaces[0]].gpu));
    std::printf("\nRing-GEMM parameters fitted jointly on every ring recording (Spearman, pick/best)\n");
    std::printf("%-44s | %15s | %15s | %15s\n", "recording", "shipped", "joint (shipped)", "joint (textbook)");
    nlohmann::json per = nlohmann::json::array();
    for (const RecordedSpace* r : recs) {
      const auto sh = agreement_on(*r, RingParams{}, {}), a = agreement_on(*r, from_shipped, {}),
                 b = agreement_on(*r, from_textbook, {});
      std::printf("%-44s | %7.3f %6.2fx | %7.3f %6.2fx | %7.3f %6.2fx\n",
                  (r->data.shape + " " + r->data.device.name).c_str(), sh.spearman, sh.pick_over_best, a.spearman,
                  a.pick_over_best, b.spearman, b.pick_over_best);
      per.push_back({{"recording", r->label()}, {"shipped", sh.spearman}, {"joint_from_shipped", a.spearman},
                     {"joint_from_textbook", b.spearman}});
    }
    std::printf("  joint (shipped):  %s\n  joint (textbook): %s\n", params_line(from_shipped).c_str(),
                params_line(from_textbook).c_str());
    // Leave one out: fitted (from the shipped values) on the other recordings, judged on this one.
    std::printf("  left out (fitted on the others from the shipped values):");
    for (size_t i = 0; i < recs.size(); ++i) {
      std::vector<const RecordedSpace*> others;
      for (size_t j = 0; j < recs.size(); ++j)
        if (j != i) others.push_back(recs[j]);
      const auto lo = agreement_on(*recs[i], fit_joint(others, RingParams{}), {});
      std::printf(" %s %.3f %.2fx;", recs[i]->data.shape.c_str(), lo.spearman, lo.pick_over_best);
      per[i]["left_out_spearman"] = lo.spearman;
      per[i]["left_out_pick_over_best"] = lo.pick_over_best;
    }
    std::printf("\n");
    ring_joint = {{"from_shipped", params_json(from_shipped)}, {"from_textbook", params_json(from_textbook)},
                  {"recordings", per}};
  }

  nlohmann::json result{{"replay_dir", dir},
                        {"ring_joint", ring_joint},
                        {"recordings", rows},
                        {"shipped_row_params", params_json(Params{})},
                        {"textbook_row_params", params_json(textbook_params())},
                        {"heldout", heldout},
                        {"shipped_ring_params", params_json(RingParams{})},
                        {"ring_heldout", ring_heldout},
                        {"ring_across_recordings", ring_across}};
  std::filesystem::path path(out_path);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << result.dump(2) << "\n";
  std::printf("\nresults written to %s\n", out_path.c_str());
  return 0;
}
