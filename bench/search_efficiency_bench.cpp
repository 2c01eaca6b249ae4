// Benchmark of search efficiency (not a test): how many trials each strategy
// needs to reach 95% of the optimum of a GEMM config space.
//
// For each workload (square, tall-skinny, small-K and odd sizes) on
// sim:h100-sxm and sim:a100-sxm4-80gb, every valid config of the fp32 GEMM
// template is scored once by the sim device's analytic model, with registers
// estimated from the register tile (compiling ~33,000 configs per space would
// take hours on a 2-core machine), which gives the optimum. Then xgb, bo, ga
// and random search run against that oracle under several seeds, batches of
// 64, and the trials until a measured config is within 95% of the optimum's
// speed are counted (capped at --max-trials; a capped run counts as the cap).
// "xgb" is xgb without a prior (first batch 16, growing): what a session on a
// sim device runs; "xgb-prior" ranks its first batch (of 8) by the analytic
// model with estimated registers; "xgb-compiled" re-ranks that model's best 64
// with their registers and spills compiled here by NVRTC (what a session on a
// GPU or a replay device runs: --prior auto), "xgb-recorded" with the
// recording's. Prior variants are reported on replay oracles only (on a sim
// oracle the prior would be the oracle), with the prior's compile time.
//
// The transfer experiment, leave one out: each workload B on the A100 starts
// once cold, and once with records of the other workloads on the H100 (random
// samples of each, scored by the same oracle) fed to the model as transfer rows.
//
// Real oracles: every replay recording under --replay-dir (default
// data/replay; whole spaces measured on a GPU) answers each trial with its
// recorded time, and the strategies (xgb with and without its analytic
// prior, bo, ga, random) count trials to 95% of the
// recording's best over --replay-seeds seeds (default 20) with batches of 64
// (the tuner's default: a quarter of a 252-config space is then drawn before
// any model acts) and of 8; next to it the same space with the sim device's
// estimates (from the recorded resources) as the oracle, and the trials it
// takes to measure configs in the sim's order.
//
//   build/bin/search_efficiency_bench [--seeds 5] [--max-trials 4096] [--history 256] [--out FILE]
//                                     [--replay-dir data/replay] [--replay-seeds 20] [--replay-batches 64,8]
//                                     [--replay-only 1] [--compile-cache DIR] [--heldout SEEDS]
//                                     [--replay-transfer 1 [--replay-history N]] [--stop-check 0.5,1,2]
//                                     [--heldout-replay 1]
//
// --compile-cache: where the prior's NVRTC compiles are cached (default: a new folder under the temp
// directory, so the reported compile time is that of cold compiles).
//
// --heldout SEEDS runs only the held-out check (of --variant, default xgb; xgb5 for the ensemble): workloads
// outside the development set above (other
// GEMM shapes, batched GEMM, conv2d, softmax and layernorm, on both sim GPUs); for N = 64 and 192, per
// workload and seed, whether xgb's best after N trials is at least as fast as random's after 3N.
// --heldout-workloads "op|shape|dtype;..." replaces that set (e.g. "gemm|M=1536,N=1536,K=512|f32").
//
// --replay-transfer 1 runs only the transfer experiment on real data: for every pair of recordings of the
// same template at another shape or GPU (tuner/replay_transfer.h), the strategies of --strategies (default
// xgb,xgb-recorded) search the target cold, and warm with --replay-history records of the source (default
// 0: all of them; a random draw per seed) fed to the model first; it reports the median trials to 95% of
// the target's real best, cold and warm.
//
// --heldout-replay 1 runs only the held-out check on real spaces: every recording under --replay-dir searched by
// --strategies (default xgb,xgb-compiled) with N = 64 and 192 trials against random with 3N, over --replay-seeds
// seeds, batches of the first --replay-batches; point --replay-dir at recordings of workloads the search was
// not developed on.
//
// --survey 1|2|3 prints facts of the sim spaces and exits: 1 their sizes and configs within 95% of the best, 2 also
// each knob value's share of them, 3 where the second GPU's first good config comes when its configs are measured
// in the order of another space's times (the same workload on the other GPU: what a perfect model of that GPU's
// records would propose), and each GPU's best config.
//
// --stop-check PCTS runs only the stop check: every replay recording searched by --strategies (default
// xgb-compiled,bo) as a session with --min-improvement PCT runs, batches of the first --replay-batches;
// the trials when it stopped and the best found then, as a share of the recording's best.
//
// Prints tables and writes results/search_efficiency.json.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/analytic_model.h"
#include "costmodel/features.h"
#include "search/model_guided_strategy.h"
#include "templates/registry.h"
#include "tuner/device_registry.h"
#include "tuner/compile_cache.h"
#include "tuner/compile_pool.h"
#include "tuner/compiled_resources.h"
#include "tuner/nvrtc_builder.h"
#include "tuner/replay_oracle.h"
#include "tuner/replay_transfer.h"
#include "tuner/strategy_factory.h"

using namespace tuner;

namespace {

/// One space enumerated once: the estimated time of every valid config (infinity: not launchable).
struct Oracle {
  const templates::KernelTemplate* tmpl = nullptr;
  templates::Workload workload;
  DeviceTarget device;
  search::ConfigSpace space;
  std::vector<double> time_ms;
  double best_ms = std::numeric_limits<double>::infinity();
  int64_t within_95 = 0;  ///< Configs at >= 95% of the optimum's speed.

  search::TrialOutcome measure(const search::Config& c) const {
    const double t = time_ms[*space.index_of(c)];
    return {std::isfinite(t), std::isfinite(t) ? t : 0.0};
  }
  bool good_enough(double t) const { return t > 0 && best_ms / t >= 0.95; }
};

Oracle enumerate(const std::string& op, const std::string& shape, const std::string& dtype, const std::string& device) {
  Oracle o{nullptr, templates::parse_workload(op, shape, dtype), resolve_device(device), {}, {}, 0, 0};
  const templates::KernelTemplate& tmpl = templates::find_template(op, o.workload.dtype, &o.device.limits);
  o.tmpl = &tmpl;
  o.best_ms = std::numeric_limits<double>::infinity();
  o.space = tmpl.space(o.workload, o.device.limits);
  o.time_ms.resize(o.space.size());
  for (uint64_t i = 0; i < o.space.size(); ++i) {
    const auto c = o.space.at(i);
    const auto p = tmpl.profile(o.space, c, o.workload);
    const auto e = costmodel::estimate(p, {costmodel::estimated_registers(p), 0, 0}, o.device.gpu);
    o.time_ms[i] = e.launchable ? e.time_ms : std::numeric_limits<double>::infinity();
    o.best_ms = std::min(o.best_ms, o.time_ms[i]);
  }
  for (double t : o.time_ms) o.within_95 += o.good_enough(t) ? 1 : 0;
  return o;
}

/// A recorded space as the oracle: the recorded (or the sim's) time of every config; a config the
/// recording lacks, or one that failed on the GPU, is a failed trial.
struct ReplayOracle {
  const RecordedSpace* recorded = nullptr;
  std::string kind;           ///< "real" (recorded times) or "sim" (the sim device's estimates).
  std::vector<double> time_ms;  ///< By space index; infinity: failed or not recorded.
  double best_ms = std::numeric_limits<double>::infinity();
  int64_t within_95 = 0;

  const search::ConfigSpace& space() const { return recorded->space; }
  search::TrialOutcome measure(const search::Config& c) const {
    const double t = time_ms[*space().index_of(c)];
    return {std::isfinite(t), std::isfinite(t) ? t : 0.0};
  }
  bool good_enough(double t) const { return t > 0 && best_ms / t >= 0.95; }
};

ReplayOracle replay_oracle(const RecordedSpace& s, bool sim) {
  ReplayOracle o{&s, sim ? "sim" : "real", {}, std::numeric_limits<double>::infinity(), 0};
  o.time_ms.assign(s.space.size(), std::numeric_limits<double>::infinity());
  const std::vector<double> est = sim ? sim_estimates(s) : std::vector<double>{};
  for (size_t i = 0; i < s.configs.size(); ++i) o.time_ms[s.configs[i].index] = sim ? est[i] : s.configs[i].time_ms;
  for (double t : o.time_ms) o.best_ms = std::min(o.best_ms, t);
  for (double t : o.time_ms) o.within_95 += o.good_enough(t) ? 1 : 0;
  return o;
}

/// Trials until a config within 95% of the optimum was measured (the cap if never).
template <class OracleT>
int64_t trials_to_95(search::SearchStrategy& s, const OracleT& o, int64_t cap, size_t batch) {
  int64_t trials = 0;
  while (trials < cap) {
    auto configs = s.propose(std::min<size_t>(batch, static_cast<size_t>(cap - trials)));
    if (configs.empty()) break;
    std::vector<search::TrialOutcome> outcomes;
    for (const auto& c : configs) {
      outcomes.push_back(o.measure(c));
      ++trials;
      if (outcomes.back().ok && o.good_enough(outcomes.back().time_ms)) return trials;
    }
    s.observe(configs, outcomes);
  }
  return cap;
}

/// Feeds `per_workload` random records of each oracle in `sources` to the strategy as transfer rows.
void add_transfer(search::TransferLearner& s, const std::vector<const Oracle*>& sources, int per_workload,
                  uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (const Oracle* o : sources) {
    std::vector<int64_t> dims;
    for (const auto& [n, v] : o->workload.dims) dims.push_back(v);
    std::uniform_int_distribution<uint64_t> pick(0, o->space.size() - 1);
    std::vector<std::pair<search::Config, double>> rows;
    double best_speed = 0;
    for (int i = 0; i < per_workload; ++i) {
      auto c = o->space.at(pick(rng));
      const auto out = o->measure(c);
      const double speed = out.ok ? 1.0 / out.time_ms : 0.0;
      best_speed = std::max(best_speed, speed);
      rows.emplace_back(std::move(c), speed);
    }
    for (const auto& [c, speed] : rows) {
      s.add_transfer(costmodel::kernel_features(c, o->tmpl->profile(o->space, c, o->workload), dims,
                                                templates::dtype_bytes(o->workload.dtype), o->device.gpu),
                     best_speed > 0 ? static_cast<float>(speed / best_speed) : 0.0f);
    }
  }
}

/// Where a replay row's strategies get compiled resources: NVRTC here (what a session does), or the recording.
struct ResourceSources {
  ResourcesOf compiled;
  ResourcesOf recorded;
};

/// A strategy by its bench name: "xgb-prior" (xgb with the analytic prior ranking its first batch),
/// "xgb-compiled" (the prior's best re-ranked with their registers and spills compiled here by NVRTC),
/// "xgb-recorded" (the same with the resources the recording stores), "xgb1"
/// (a lone boosted model with a 5% random share), "xgb5" (an ensemble of 5 and its confidence bound), or any
/// strategy name the factory knows ("xgb": the tuner's default, without the prior).
std::unique_ptr<search::SearchStrategy> make_variant(const std::string& name, const search::ConfigSpace& space,
                                                     uint64_t seed, const templates::KernelTemplate& tmpl,
                                                     const templates::Workload& w, const costmodel::GpuSpec& gpu,
                                                     const ResourceSources& sources = {}) {
  StrategyOptions options;
  options.analytic_prior = name == "xgb-prior" || name == "xgb-compiled" || name == "xgb-recorded";
  if (name == "xgb-compiled") options.resources = sources.compiled;
  if (name == "xgb-recorded") options.resources = sources.recorded;
  if (name == "xgb1") options.xgb_members = 1;  // a lone model and 5% random picks (the default)
  if (name == "xgb5") options.xgb_members = 5;  // the bootstrap ensemble of 5 and its confidence bound
  bool xgb = name == "xgb-prior" || name == "xgb-compiled" || name == "xgb-recorded" || name == "xgb1" || name == "xgb5";
  // "xgb:key=value/key=value": xgb with some settings changed, for experiments (members, kappa, first,
  // epsilon, objective, pairs, prior).
  if (name.rfind("xgb:", 0) == 0) {
    xgb = true;
    for (size_t start = 4; start < name.size();) {
      const size_t end = std::min(name.find('/', start), name.size());
      const std::string kv = name.substr(start, end - start);
      const size_t eq = kv.find('=');
      const std::string key = kv.substr(0, eq), value = eq == std::string::npos ? "" : kv.substr(eq + 1);
      if (key == "members") options.xgb_members = std::atoi(value.c_str());
      else if (key == "kappa") options.annealing.ucb_kappa = std::atof(value.c_str());
      else if (key == "first") options.annealing.first_batch = static_cast<size_t>(std::atoi(value.c_str()));
      else if (key == "epsilon") options.annealing.epsilon = std::atof(value.c_str());
      else if (key == "objective") options.xgb_objective = value;
      else if (key == "pairs") options.xgb_pairs_per_row = std::atoi(value.c_str());
      else if (key == "prior") {  // 1: estimated registers; compiled / recorded: re-ranked with those resources
        options.analytic_prior = value != "0";
        if (value == "compiled") options.resources = sources.compiled;
        if (value == "recorded") options.resources = sources.recorded;
      }
      else if (key == "refine") options.annealing.prior_refine = static_cast<size_t>(std::atoi(value.c_str()));
      else if (key == "pfirst") options.annealing.prior_first_batch = static_cast<size_t>(std::atoi(value.c_str()));
      else if (key == "half_life") options.annealing.transfer_half_life = std::atof(value.c_str());
      else if (key == "hedge") options.annealing.transfer_only_epsilon = std::atof(value.c_str());
      else if (key == "ppool") options.annealing.prior_diversity_pool = static_cast<size_t>(std::atoi(value.c_str()));
      else if (key == "dpool") options.annealing.diversity_pool = static_cast<size_t>(std::atoi(value.c_str()));
      else if (key == "div") options.annealing.diversity = std::atof(value.c_str());
      else if (key == "local") options.annealing.local_share = std::atof(value.c_str());
      else if (key == "lseeds") options.annealing.local_seeds = static_cast<size_t>(std::atoi(value.c_str()));
      else if (key == "growth") options.annealing.batch_growth = std::atof(value.c_str());
      else if (key == "hseeds") options.annealing.local_hop_seeds = static_cast<size_t>(std::atoi(value.c_str()));
      else if (key == "ldpool") options.annealing.local_diversity_pool = static_cast<size_t>(std::atoi(value.c_str()));
      else if (key == "hops") options.annealing.local_hops = static_cast<size_t>(std::atoi(value.c_str()));
      else throw std::invalid_argument("unknown xgb variant key '" + key + "'");
      start = end + 1;
    }
  }
  return build_strategy(xgb ? "xgb" : name, space, seed, tmpl, w, gpu, options);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Trials until a config within 95% of the real best is measured when configs are measured in the order
/// of the sim's estimates (the sim as a zero-shot ranking).
int64_t sim_order_trials(const RecordedSpace& rec, const ReplayOracle& real) {
  const std::vector<double> est = sim_estimates(rec);
  std::vector<size_t> order(rec.configs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return est[a] < est[b]; });
  for (size_t k = 0; k < order.size(); ++k)
    if (real.good_enough(rec.configs[order[k]].time_ms)) return static_cast<int64_t>(k + 1);
  return static_cast<int64_t>(order.size());
}

/// True for the bench names that rank by the analytic model (circular on a sim oracle).
bool uses_prior(const std::string& name) {
  return name == "xgb-prior" || name == "xgb-compiled" || name == "xgb-recorded" ||
         (name.rfind("xgb:", 0) == 0 && name.find("prior=") != std::string::npos && name.find("prior=0") == std::string::npos);
}

/// A new, empty compile-cache folder under the temp dir (so compile times are cold).
std::string fresh_cache_dir() {
  const auto base = std::filesystem::temp_directory_path() / "search_efficiency_bench_cache";
  for (int i = 0;; ++i) {
    const auto dir = base / std::to_string(i);
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) return dir.string();
  }
}

/// One line on what the prior's compiles cost, and how many registers agree with the recording's.
void report_compiles(const CompiledResources& compiled, const RecordedSpace& rec) {
  const auto& st = compiled.stats();
  if (st.compiled + st.from_cache + st.failed == 0) return;
  std::printf("%-58s prior compiles: %lld by NVRTC, %lld from cache, %lld failed; %.1f s waited, %.1f s NVRTC time\n",
              "", static_cast<long long>(st.compiled), static_cast<long long>(st.from_cache),
              static_cast<long long>(st.failed), st.wall_s, st.compile_cpu_s);
  int same = 0, differ = 0;
  for (const auto& rc : rec.configs) {
    const auto it = compiled.known().find(rc.index);
    if (it == compiled.known().end() || !it->second) continue;
    const bool eq = it->second->registers == rc.resources.registers && it->second->local_bytes == rc.resources.local_bytes;
    ++(eq ? same : differ);
  }
  std::printf("%-58s of them recorded: %d with the recording's registers and local bytes, %d different%s\n", "", same,
              differ, rec.version_matches ? "" : " (the recording's template version is not today's)");
}

/// The resources a recording stores, as the prior's source (what a session on a replay device uses).
ResourcesOf recorded_resources_of(const RecordedSpace& rec) {
  return [&rec](const std::vector<search::Config>& cs) {
    std::vector<std::optional<costmodel::KernelResources>> out;
    for (const auto& c : cs) {
      const uint64_t idx = *rec.space.index_of(c);
      const auto it = std::find_if(rec.configs.begin(), rec.configs.end(),
                                   [idx](const RecordedConfig& r) { return r.index == idx; });
      out.push_back(it == rec.configs.end() ? std::nullopt
                                            : std::optional<costmodel::KernelResources>(it->resources));
    }
    return out;
  };
}

/// Loads a recording; false (and a "skipped" line naming why) when it cannot be read.
bool load_or_skip(const std::string& file, RecordedSpace& rec) {
  try {
    rec = load_recorded_space(file);
    return true;
  } catch (const std::exception& e) {
    std::printf("  skipped: %s\n", e.what());
    return false;
  }
}

/// Compiled resources for a recording's prior: NVRTC in this process, through an on-disk cache (a fresh one
/// unless --compile-cache names one), shared by every seed; and the recording's own.
struct RecordingResources {
  CompileCache cache;
  NvrtcBuilder builder;
  CompilePool pool;
  CompiledResources compiled;
  ResourceSources sources;
  RecordingResources(const RecordedSpace& rec, const std::string& compile_cache)
      : cache(compile_cache.empty() ? fresh_cache_dir() : compile_cache),
        builder(&cache),
        pool(builder, 0),
        compiled(*rec.tmpl, rec.space, rec.workload, limits_of(rec.gpu), pool) {
    sources.compiled = [this](const std::vector<search::Config>& cs) { return compiled.resources(cs); };
    sources.recorded = recorded_resources_of(rec);
  }
};

/// Calls fn(file, recording, real-time oracle, prior resources) for every loadable recording in dir.
template <class Fn>
void for_each_recording(const std::string& dir, const std::string& compile_cache, Fn&& fn) {
  for (const auto& f : replay_files(dir)) {
    RecordedSpace rec;
    if (!load_or_skip(f, rec)) continue;
    const ReplayOracle real = replay_oracle(rec, false);
    RecordingResources res(rec, compile_cache);
    fn(f, rec, real, res.sources);
  }
}

/// Transfer on real data: for every ordered pair of recordings where one can feed the other (same op,
/// dtype and template, another shape or GPU: tuner/replay_transfer.h), each variant searches the target
/// cold, and warm with `history` records of the source (0: all of them, drawn anew per seed) fed to its
/// model first, as a session's transfer stage feeds the database's records. Prints a table, returns its JSON.
nlohmann::json run_replay_transfer(const std::string& dir, int seeds, const std::vector<size_t>& batches,
                                   int64_t max_trials, const std::vector<std::string>& variants, size_t history) {
  nlohmann::json out = nlohmann::json::array();
  std::vector<RecordedSpace> recs;
  for (const auto& f : replay_files(dir)) {
    try {
      recs.push_back(load_recorded_space(f));
    } catch (const std::exception& e) {
      std::printf("  skipped: %s\n", e.what());
    }
  }
  std::printf("\nTransfer between replay recordings in %s: trials to 95%% of the target's real best, cold and "
              "warm\n(with %s records of the source fed to the model first; median over %d seeds)\n",
              dir.c_str(), history == 0 ? "all" : std::to_string(history).c_str(), seeds);
  std::printf("%-44s %-44s %5s %-14s %7s %7s %6s\n", "target", "source", "batch", "variant", "cold", "warm", "cut");
  const auto t0 = std::chrono::steady_clock::now();
  for (const RecordedSpace& to : recs)
    for (const RecordedSpace& from : recs) {
      if (&to == &from || !transferable(from, to)) continue;
      const ReplayOracle real = replay_oracle(to, false);
      ResourceSources sources;
      sources.recorded = recorded_resources_of(to);
      const int64_t cap = std::min<int64_t>(max_trials, static_cast<int64_t>(to.space.size()));
      for (size_t batch : batches)
        for (const auto& name : variants) {
          std::vector<double> cold, warm;
          for (int seed = 1; seed <= seeds; ++seed) {
            auto c = make_variant(name, to.space, static_cast<uint64_t>(seed), *to.tmpl, to.workload, to.gpu, sources);
            cold.push_back(static_cast<double>(trials_to_95(*c, real, cap, batch)));
            auto w = make_variant(name, to.space, static_cast<uint64_t>(seed), *to.tmpl, to.workload, to.gpu, sources);
            if (!w->transfer_learner()) throw std::invalid_argument("variant '" + name + "' learns nothing from transfer");
            feed_transfer(*w->transfer_learner(), transfer_rows(from, history, static_cast<uint64_t>(seed)));
            w->observe({}, {});
            warm.push_back(static_cast<double>(trials_to_95(*w, real, cap, batch)));
          }
          const double cut = 1.0 - median(warm) / median(cold);
          const auto brief = [](const RecordedSpace& r) {
            // The device's own name (an H200 recording maps to the h100-sxm spec key), shortened.
            std::string dev = r.data.device.name;
            for (const char* cut : {"NVIDIA ", " 80GB HBM3"})
              if (auto at = dev.find(cut); at != std::string::npos) dev.erase(at, std::string(cut).size());
            return r.workload.shape_string() + " " + dev + " " + r.tmpl->name();
          };
          std::printf("%-44s %-44s %5zu %-14s %7.1f %7.1f %5.0f%%\n", brief(to).c_str(), brief(from).c_str(), batch,
                      name.c_str(), median(cold), median(warm), 100 * cut);
          std::fflush(stdout);
          out.push_back({{"target", to.label()}, {"source", from.label()}, {"batch", batch}, {"variant", name},
                         {"history", history}, {"cold", cold}, {"warm", warm}, {"median_cold", median(cold)},
                         {"median_warm", median(warm)}, {"cut", cut}});
        }
    }
  std::printf("  (%.1f s)\n", seconds_since(t0));
  return out;
}

/// The replay section: every recording in `dir` as an oracle (real times, and the sim's estimates of the
/// same configs), each strategy over `seeds` seeds and each batch size. Prints a table, returns its JSON.
nlohmann::json run_replay(const std::string& dir, int seeds, const std::vector<size_t>& batches, int64_t max_trials,
                          const std::vector<std::string>& strategies, const std::string& compile_cache) {
  nlohmann::json out = nlohmann::json::array();
  const auto files = replay_files(dir);
  std::printf("\nReplay recordings in %s as oracles: trials to reach 95%% of the oracle's best "
              "(median over %d seeds)\n",
              dir.c_str(), seeds);
  if (files.empty()) {
    std::printf("  (no replay files)\n");
    return out;
  }
  std::printf("%-58s %6s %5s %6s %5s", "recording", "oracle", "batch", "space", "good");
  for (const auto& name : strategies) std::printf(" %11s", name.c_str());
  std::printf(" %10s %10s\n", "rand/xgb", "rand/comp");
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& f : files) {
    RecordedSpace rec;
    if (!load_or_skip(f, rec)) continue;
    const ReplayOracle real = replay_oracle(rec, false), sim = replay_oracle(rec, true);
    RecordingResources res(rec, compile_cache);
    const ResourceSources& sources = res.sources;
    const CompiledResources& compiled = res.compiled;
    bool first = true;
    for (size_t batch : batches)
      for (const ReplayOracle* o : {&real, &sim}) {
        const int64_t cap = std::min<int64_t>(max_trials, static_cast<int64_t>(o->space().size()));
        nlohmann::json row{{"file", std::filesystem::path(f).filename().string()},
                           {"recording", rec.label()},
                           {"oracle", o->kind},
                           {"batch", batch},
                           {"space_size", o->space().size()},
                           {"recorded", rec.configs.size()},
                           {"configs_within_95", o->within_95},
                           {"best_ms", o->best_ms}};
        std::printf("%-58s %6s %5zu %6llu %5lld", first ? rec.label().c_str() : "", o->kind.c_str(), batch,
                    static_cast<unsigned long long>(o->space().size()), static_cast<long long>(o->within_95));
        std::map<std::string, double> med;
        for (const auto& name : strategies) {
          // The analytic prior judged by the analytic model would be circular: not on the sim oracle.
          if (o->kind == "sim" && uses_prior(name)) {
            std::printf(" %11s", "-");
            continue;
          }
          std::vector<double> trials;
          for (int seed = 1; seed <= seeds; ++seed) {
            auto st = make_variant(name, o->space(), static_cast<uint64_t>(seed), *rec.tmpl, rec.workload, rec.gpu,
                                   sources);
            trials.push_back(static_cast<double>(trials_to_95(*st, *o, cap, batch)));
          }
          row[name] = trials;
          row["median_" + name] = med[name] = median(trials);
          std::printf(" %11.1f", med[name]);
          std::fflush(stdout);
        }
        // rand/comp: against xgb with the compiled prior, what a session on a GPU runs (--prior auto).
        const double xgb = med["xgb"];
        row["random_over_xgb"] = med["random"] / xgb;
        std::printf(" %10.2f", med["random"] / xgb);
        if (med.count("xgb-compiled")) {
          row["random_over_xgb_compiled"] = med["random"] / med["xgb-compiled"];
          std::printf(" %10.2f\n", med["random"] / med["xgb-compiled"]);
        } else {
          std::printf(" %10s\n", "-");
        }
        std::fflush(stdout);
        first = false;
        out.push_back(row);
      }
    report_compiles(compiled, rec);
    const int64_t by_sim = sim_order_trials(rec, real);
    std::printf("%-58s measuring in the sim's order reaches 95%% of the real best at trial %lld\n", "",
                static_cast<long long>(by_sim));
    out.push_back({{"file", std::filesystem::path(f).filename().string()},
                   {"recording", rec.label()},
                   {"oracle", "real"},
                   {"sim_order_trials", by_sim}});
  }
  std::printf("  (%.1f s)\n", seconds_since(t0));
  return out;
}

/// The stop check (--stop-check): each replay recording (real times) searched as a session with
/// --min-improvement does: propose, stop when the strategy expects less than the threshold from the
/// proposal, else measure. Reports, per strategy and threshold, the trials measured when it stopped and
/// how close to the recording's best the best found then was.
nlohmann::json run_stop_check(const std::string& dir, int seeds, size_t batch, const std::vector<double>& thresholds_pct,
                              const std::vector<std::string>& strategies, const std::string& compile_cache) {
  nlohmann::json out = nlohmann::json::array();
  std::printf("\nStopping on expected improvement (--min-improvement), replay recordings as oracles, batch %zu, "
              "%d seeds: median trials when it stopped, and the best found then as a share of the recording's "
              "best speed (median, worst); runs that never stopped end at the space's size\n",
              batch, seeds);
  std::printf("%-58s %-13s %6s %6s %8s %8s %8s %9s\n", "recording", "strategy", "min %", "space", "trials",
              "best", "worst", "stopped");
  const auto t0 = std::chrono::steady_clock::now();
  for_each_recording(dir, compile_cache, [&](const std::string& f, const RecordedSpace& rec,
                                              const ReplayOracle& real, const ResourceSources& sources) {
    const auto cap = static_cast<int64_t>(real.space().size());
    bool first = true;
    for (const auto& name : strategies)
      for (double pct : thresholds_pct) {
        std::vector<double> trials, share;
        int stopped = 0;
        for (int seed = 1; seed <= seeds; ++seed) {
          auto st = make_variant(name, real.space(), static_cast<uint64_t>(seed), *rec.tmpl, rec.workload, rec.gpu,
                                 sources);
          int64_t n = 0;
          double best = std::numeric_limits<double>::infinity();
          while (n < cap) {
            auto configs = st->propose(std::min<size_t>(batch, static_cast<size_t>(cap - n)));
            if (configs.empty()) break;
            const double ei = st->expected_improvement();
            if (ei >= 0 && ei < pct / 100) {
              ++stopped;
              break;
            }
            std::vector<search::TrialOutcome> outcomes;
            for (const auto& c : configs) {
              outcomes.push_back(real.measure(c));
              if (outcomes.back().ok) best = std::min(best, outcomes.back().time_ms);
            }
            n += static_cast<int64_t>(configs.size());
            st->observe(configs, outcomes);
          }
          trials.push_back(static_cast<double>(n));
          share.push_back(std::isfinite(best) ? real.best_ms / best : 0.0);
        }
        const double worst = *std::min_element(share.begin(), share.end());
        std::printf("%-58s %-13s %6.2g %6lld %8.1f %8.3f %8.3f %6d/%-2d\n", first ? rec.label().c_str() : "",
                    name.c_str(), pct, static_cast<long long>(cap), median(trials), median(share), worst, stopped,
                    seeds);
        std::fflush(stdout);
        first = false;
        out.push_back({{"file", std::filesystem::path(f).filename().string()},
                       {"recording", rec.label()},
                       {"strategy", name},
                       {"min_improvement_pct", pct},
                       {"space_size", cap},
                       {"trials", trials},
                       {"best_share", share},
                       {"median_trials", median(trials)},
                       {"median_best_share", median(share)},
                       {"worst_best_share", worst},
                       {"stopped", stopped}});
      }
  });
  std::printf("  (%.1f s)\n", seconds_since(t0));
  return out;
}

/// Best time (ms) measured within the first n trials (infinity when none succeeded).
template <class OracleT>
double best_within(search::SearchStrategy& s, const OracleT& o, int64_t n, size_t batch) {
  double best = std::numeric_limits<double>::infinity();
  int64_t trials = 0;
  while (trials < n) {
    auto configs = s.propose(std::min<size_t>(batch, static_cast<size_t>(n - trials)));
    if (configs.empty()) break;
    std::vector<search::TrialOutcome> outcomes;
    for (const auto& c : configs) {
      outcomes.push_back(o.measure(c));
      if (outcomes.back().ok) best = std::min(best, outcomes.back().time_ms);
    }
    trials += static_cast<int64_t>(configs.size());
    s.observe(configs, outcomes);
  }
  return best;
}

/// The held-out check: workloads outside the development set (other GEMM shapes, other ops and dtypes,
/// both sim GPUs). Per workload, seed and N: is the best config xgb finds in N trials at least as fast as
/// the best random search finds in 3N? Prints a table, returns its JSON.
nlohmann::json run_heldout(int seeds, const std::vector<int64_t>& ns, size_t batch, const std::string& variant,
                           const std::string& workloads) {
  struct Held {
    std::string op, shape, dtype;
  };
  std::vector<Held> held = {
      {"gemm", "M=2048,N=2048,K=2048", "f32"},  {"gemm", "M=4096,N=512,K=1024", "f32"},
      {"gemm", "M=768,N=3072,K=768", "f32"},    {"gemm", "M=333,N=4000,K=1200", "f32"},
      {"batched_gemm", "B=16,M=256,N=256,K=256", "f32"},
      {"conv2d", "N=8,H=28,W=28,C=128,K=128,R=3,S=3,stride=1,pad=1", "f32"},
      {"softmax", "rows=8192,cols=2048", "f16"}, {"layernorm", "rows=4096,cols=1024", "f32"},
  };
  if (!workloads.empty()) {  // --heldout-workloads "op|shape|dtype;op|shape|dtype"
    held.clear();
    for (size_t start = 0; start < workloads.size();) {
      const size_t end = std::min(workloads.find(';', start), workloads.size());
      const std::string w = workloads.substr(start, end - start);
      const size_t a = w.find('|'), b = w.rfind('|');
      if (a == std::string::npos || a == b) throw std::invalid_argument("held-out workload '" + w + "' is not op|shape|dtype");
      held.push_back({w.substr(0, a), w.substr(a + 1, b - a - 1), w.substr(b + 1)});
      start = end + 1;
    }
  }
  const std::vector<std::string> devices = {"sim:h100-sxm", "sim:a100-sxm4-80gb"};
  std::printf("\nHeld-out workloads (not in the development set): %s with N trials against random with 3N, "
              "%d seeds, batch %zu.\n'pass' counts the seeds where xgb's best is at least as fast as random's; "
              "ratio = random's best time / xgb's (>= 1: xgb at least as good), min and median over seeds\n",
              variant.c_str(), seeds, batch);
  std::printf("%-10s %-44s %-20s %7s %5s %6s %7s %7s\n", "op", "shape", "device", "space", "N", "pass", "min",
              "median");
  nlohmann::json out = nlohmann::json::array();
  int passed = 0, cases = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& h : held)
    for (const auto& d : devices) {
      Oracle o;
      try {
        o = enumerate(h.op, h.shape, h.dtype, d);
      } catch (const std::exception& e) {
        std::printf("%-10s %-44s %-20s skipped: %s\n", h.op.c_str(), h.shape.c_str(), d.c_str(), e.what());
        continue;
      }
      for (int64_t n : ns) {
        std::vector<double> ratios;
        int pass = 0;
        for (int seed = 1; seed <= seeds; ++seed) {
          auto x = make_variant(variant, o.space, static_cast<uint64_t>(seed), *o.tmpl, o.workload, o.device.gpu);
          auto r = make_variant("random", o.space, static_cast<uint64_t>(seed), *o.tmpl, o.workload, o.device.gpu);
          const double xb = best_within(*x, o, n, batch), rb = best_within(*r, o, 3 * n, batch);
          const double ratio = std::isfinite(xb) ? rb / xb : 0.0;
          ratios.push_back(ratio);
          pass += xb <= rb * (1 + 1e-12) ? 1 : 0;
        }
        passed += pass;
        cases += seeds;
        std::sort(ratios.begin(), ratios.end());
        std::printf("%-10s %-44s %-20s %7llu %5lld %3d/%-2d %7.3f %7.3f\n", h.op.c_str(), h.shape.c_str(), d.c_str(),
                    static_cast<unsigned long long>(o.space.size()), static_cast<long long>(n), pass, seeds,
                    ratios.front(), median(ratios));
        std::fflush(stdout);
        out.push_back({{"op", h.op}, {"shape", h.shape}, {"dtype", h.dtype}, {"device", d},
                       {"space_size", o.space.size()}, {"n", n}, {"pass", pass}, {"seeds", seeds},
                       {"ratios", ratios}});
      }
    }
  std::printf("  held-out: xgb(N) >= random(3N) in %d of %d cases (%.1f s)\n", passed, cases, seconds_since(t0));
  return out;
}

/// The held-out check on real spaces (--heldout-replay 1, the recordings of --replay-dir): per recording in DIR, strategy and N, the seeds
/// where the strategy's best after N trials is at least as fast as random's after 3N (the recorded times as
/// the oracle). Recordings of workloads no strategy was developed on make it a held-out check.
nlohmann::json run_heldout_replay(const std::string& dir, int seeds, const std::vector<int64_t>& ns, size_t batch,
                                  const std::vector<std::string>& strategies, const std::string& compile_cache) {
  std::printf("\nHeld-out check on real spaces in %s: each strategy with N trials against random with 3N, %d seeds, "
              "batch %zu.\n'pass' counts the seeds where its best is at least as fast as random's; ratio = random's "
              "best time / its best (>= 1: at least as good), min and median over seeds\n",
              dir.c_str(), seeds, batch);
  std::printf("%-58s %-13s %6s %5s %6s %7s %7s\n", "recording", "strategy", "space", "N", "pass", "min", "median");
  nlohmann::json out = nlohmann::json::array();
  int passed = 0, cases = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for_each_recording(dir, compile_cache, [&](const std::string& f, const RecordedSpace& rec,
                                              const ReplayOracle& real, const ResourceSources& sources) {
    bool first = true;
    for (const auto& name : strategies)
      for (int64_t n : ns) {
        std::vector<double> ratios;
        int pass = 0;
        for (int seed = 1; seed <= seeds; ++seed) {
          auto x = make_variant(name, real.space(), static_cast<uint64_t>(seed), *rec.tmpl, rec.workload, rec.gpu,
                                sources);
          auto r = make_variant("random", real.space(), static_cast<uint64_t>(seed), *rec.tmpl, rec.workload, rec.gpu);
          const double xb = best_within(*x, real, n, batch), rb = best_within(*r, real, 3 * n, batch);
          ratios.push_back(std::isfinite(xb) ? rb / xb : 0.0);
          pass += std::isfinite(xb) && xb <= rb * (1 + 1e-12) ? 1 : 0;  // finding nothing is never a pass
        }
        passed += pass;
        cases += seeds;
        if (ratios.empty()) continue;
        std::sort(ratios.begin(), ratios.end());
        std::printf("%-58s %-13s %6zu %5lld %3d/%-2d %7.3f %7.3f\n", first ? rec.label().c_str() : "", name.c_str(),
                    real.space().size(), static_cast<long long>(n), pass, seeds, ratios.front(), median(ratios));
        std::fflush(stdout);
        first = false;
        out.push_back({{"file", std::filesystem::path(f).filename().string()}, {"recording", rec.label()},
                       {"strategy", name}, {"space_size", real.space().size()}, {"n", n}, {"pass", pass},
                       {"seeds", seeds}, {"ratios", ratios}});
      }
  });
  std::printf("  held-out on real spaces: strategy(N) >= random(3N) in %d of %d cases (%.1f s)\n", passed, cases,
              seconds_since(t0));
  return out;
}

void write_results(const nlohmann::json& result, const std::string& out_path) {
  std::filesystem::path path(out_path);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << result.dump(2) << "\n";
  std::printf("results written to %s\n", out_path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 5;
  int64_t max_trials = 4096;
  int history = 256;
  std::string out_path = "results/search_efficiency.json";
  std::string shape_list;
  // 1: space sizes and good counts; 2: also each knob value's share among good configs; 3: how far the two GPUs
  // agree (the second GPU's configs in the order of each other space's times, and each GPU's best config)
  int survey_level = 0;
  std::string replay_dir = "data/replay";
  std::string compile_cache;  // --compile-cache: the prior's compile cache (default: a fresh temp folder)
  int replay_seeds = 20;
  std::vector<size_t> replay_batches = {64, 8};
  bool replay_only = false;
  bool replay_transfer = false;  // --replay-transfer 1: only the transfer experiment between replay recordings
  size_t replay_history = 0;     // --replay-history: the source's records fed per seed (0: all)
  int heldout_seeds = 0;
  std::string heldout_workloads;  // --heldout-workloads: "op|shape|dtype;..." instead of the built-in set
  std::string strategy_list;  // replay strategies, comma separated; default xgb,xgb-prior,bo,ga,random
  std::string sim_strategy_list;  // sim-table strategies; default xgb,xgb5,bo,ga,random (xgb and random needed)
  std::string device_list;    // sim devices, comma separated; default sim:h100-sxm,sim:a100-sxm4-80gb
  bool no_transfer = false;
  std::string transfer_variant = "xgb";  // --variant: the xgb variant of the transfer and held-out runs
  bool transfer_only = false;            // skip the sim table (transfer and replay only)
  std::string stop_check;                // --stop-check: thresholds in %, comma separated
  bool heldout_replay = false;           // --heldout-replay 1: only the N-against-3N check on --replay-dir
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--seeds") seeds = std::atoi(argv[i + 1]);
    else if (a == "--max-trials") max_trials = std::atoll(argv[i + 1]);
    else if (a == "--history") history = std::atoi(argv[i + 1]);
    else if (a == "--out") out_path = argv[i + 1];
    else if (a == "--shapes") shape_list = argv[i + 1];
    else if (a == "--survey") survey_level = std::atoi(argv[i + 1]);
    else if (a == "--replay-dir") replay_dir = argv[i + 1];
    else if (a == "--compile-cache") compile_cache = argv[i + 1];
    else if (a == "--replay-seeds") replay_seeds = std::atoi(argv[i + 1]);
    else if (a == "--replay-only") replay_only = std::string(argv[i + 1]) == "1";
    else if (a == "--replay-transfer") replay_transfer = std::string(argv[i + 1]) == "1";
    else if (a == "--replay-history") replay_history = static_cast<size_t>(std::atoll(argv[i + 1]));
    else if (a == "--heldout") heldout_seeds = std::atoi(argv[i + 1]);
    else if (a == "--heldout-workloads") heldout_workloads = argv[i + 1];
    else if (a == "--strategies") strategy_list = argv[i + 1];
    else if (a == "--devices") device_list = argv[i + 1];
    else if (a == "--transfer-variant" || a == "--variant") transfer_variant = argv[i + 1];
    else if (a == "--transfer-only") transfer_only = std::string(argv[i + 1]) == "1";
    else if (a == "--sim-strategies") sim_strategy_list = argv[i + 1];
    else if (a == "--no-transfer") no_transfer = std::string(argv[i + 1]) == "1";
    else if (a == "--stop-check") stop_check = argv[i + 1];
    else if (a == "--heldout-replay") heldout_replay = std::string(argv[i + 1]) == "1";
    else if (a == "--replay-batches") {
      replay_batches.clear();
      for (size_t start = 0; start < std::strlen(argv[i + 1]);) {
        replay_batches.push_back(static_cast<size_t>(std::max(1, std::atoi(argv[i + 1] + start))));
        const char* comma = std::strchr(argv[i + 1] + start, ',');
        if (!comma) break;
        start = static_cast<size_t>(comma - argv[i + 1]) + 1;
      }
    }
    else {
      std::fprintf(stderr,
                   "unknown option '%s' (allowed: --seeds, --max-trials, --history, --shapes, --survey, --out, "
                   "--replay-dir, --replay-seeds, --replay-batches, --replay-only, --replay-transfer, --replay-history, --compile-cache, --heldout, --heldout-workloads, --strategies, --sim-strategies, --devices, --no-transfer, --variant, --transfer-only, --stop-check, --heldout-replay)\n",
                   argv[i]);
      return 2;
    }
  }
  constexpr size_t kBatch = 64;
  std::vector<std::string> shapes = {
      "M=1024,N=1024,K=1024",   // square
      "M=1000,N=1000,K=1000",   // odd square
      "M=8192,N=128,K=4096",    // tall-skinny
      "M=1024,N=1024,K=256",    // small K
      "M=1023,N=769,K=515",     // odd, non-power-of-two
      "M=512,N=512,K=16384",    // long K (split over few blocks)
  };
  if (!shape_list.empty()) {
    shapes.clear();
    for (size_t start = 0; start <= shape_list.size();) {
      const size_t end = std::min(shape_list.find(';', start), shape_list.size());
      if (end > start) shapes.push_back(shape_list.substr(start, end - start));
      start = end + 1;
    }
  }
  auto split = [](const std::string& list) {
    std::vector<std::string> out;
    for (size_t start = 0; start <= list.size();) {
      const size_t end = std::min(list.find(',', start), list.size());
      if (end > start) out.push_back(list.substr(start, end - start));
      start = end + 1;
    }
    return out;
  };
  const std::vector<std::string> devices =
      device_list.empty() ? std::vector<std::string>{"sim:h100-sxm", "sim:a100-sxm4-80gb"} : split(device_list);
  // On sim oracles xgb runs without its analytic prior (the prior would be the oracle itself).
  const std::vector<std::string> strategies =
      sim_strategy_list.empty() ? std::vector<std::string>{"xgb", "xgb5", "bo", "ga", "random"} : split(sim_strategy_list);
  const std::vector<std::string> replay_strategies =
      strategy_list.empty() ? std::vector<std::string>{"xgb", "xgb5", "xgb-prior", "xgb-compiled", "xgb-recorded", "bo", "ga", "random"}
                            : split(strategy_list);

  if (heldout_seeds > 0) {
    write_results({{"batch", kBatch}, {"heldout_seeds", heldout_seeds},
                   {"heldout_variant", transfer_variant},
                   {"heldout", run_heldout(heldout_seeds, {64, 192}, kBatch, transfer_variant, heldout_workloads)}},
                  out_path);
    return 0;
  }
  if (!stop_check.empty()) {
    std::vector<double> pcts;
    for (const auto& t : split(stop_check)) pcts.push_back(std::atof(t.c_str()));
    const std::vector<std::string> variants =
        strategy_list.empty() ? std::vector<std::string>{"xgb-compiled", "bo"} : split(strategy_list);
    write_results({{"replay_seeds", replay_seeds},
                   {"batch", replay_batches.front()},
                   {"stop_check", run_stop_check(replay_dir, replay_seeds, replay_batches.front(), pcts, variants,
                                                 compile_cache)}},
                  out_path);
    return 0;
  }
  if (heldout_replay) {
    const std::vector<std::string> variants =
        strategy_list.empty() ? std::vector<std::string>{"xgb", "xgb-compiled"} : split(strategy_list);
    write_results({{"replay_seeds", replay_seeds},
                   {"batch", replay_batches.front()},
                   {"heldout_replay", run_heldout_replay(replay_dir, replay_seeds, {64, 192}, replay_batches.front(),
                                                         variants, compile_cache)}},
                  out_path);
    return 0;
  }
  if (replay_transfer) {
    const std::vector<std::string> variants =
        strategy_list.empty() ? std::vector<std::string>{"xgb", "xgb-recorded"} : split(strategy_list);
    write_results({{"replay_seeds", replay_seeds},
                   {"replay_history", replay_history},
                   {"replay_transfer", run_replay_transfer(replay_dir, replay_seeds, replay_batches, max_trials,
                                                           variants, replay_history)}},
                  out_path);
    return 0;
  }
  if (replay_only) {
    nlohmann::json result{{"batch", kBatch},
                          {"replay_seeds", replay_seeds},
                          {"replay", run_replay(replay_dir, replay_seeds, replay_batches, max_trials, replay_strategies, compile_cache)}};
    write_results(result, out_path);
    return 0;
  }

  const auto t_enum = std::chrono::steady_clock::now();
  std::vector<Oracle> oracles;
  for (const auto& d : devices)
    for (const auto& s : shapes) oracles.push_back(enumerate("gemm", s, "f32", d));
  std::printf("Enumerated %zu spaces in %.1f s (analytic model, registers estimated)\n\n", oracles.size(),
              seconds_since(t_enum));
  if (survey_level == 3) {
    // How far the two sim GPUs agree on one workload: the A100's configs measured in the order of the same
    // workload's H100 times (the best a perfect model of H100 records could do for the A100), and in the A100's
    // own order of another workload (what same-GPU transfer can at best draw on).
    const size_t half = oracles.size() / 2;
    for (size_t b = half; b < oracles.size(); ++b) {
      const Oracle& a = oracles[b];
      auto first_good = [&](const std::vector<double>& key) {
        std::vector<uint64_t> order(a.space.size());
        for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](uint64_t x, uint64_t y) { return key[x] < key[y]; });
        for (size_t k = 0; k < order.size(); ++k)
          if (a.good_enough(a.time_ms[order[k]])) return static_cast<long long>(k + 1);
        return static_cast<long long>(order.size());
      };
      std::printf("%-24s good %5lld:", a.workload.shape_string().c_str(), static_cast<long long>(a.within_95));
      for (size_t src = 0; src < oracles.size(); ++src) {
        if (src == b) continue;
        const Oracle& h = oracles[src];
        std::vector<double> key(a.space.size(), std::numeric_limits<double>::infinity());
        for (uint64_t i = 0; i < a.space.size(); ++i)
          if (const auto j = h.space.index_of(a.space.at(i))) key[i] = h.time_ms[*j] / h.best_ms;
        std::printf(" %s/%s %lld", src < half ? "H" : "A", h.workload.shape_string().substr(0, 14).c_str(),
                    first_good(key));
      }
      std::printf("\n");
      const Oracle& h = oracles[b - half];  // the same workload on the first GPU
      auto best_of = [](const Oracle& o) {
        uint64_t bi = 0;
        for (uint64_t i = 0; i < o.space.size(); ++i)
          if (o.time_ms[i] < o.time_ms[bi]) bi = i;
        return o.space.to_json(o.space.at(bi)).dump();
      };
      std::printf("    best on %s: %s\n    best on %s: %s\n", h.device.spec.c_str(), best_of(h).c_str(),
                  a.device.spec.c_str(), best_of(a).c_str());
    }
    return 0;
  }
  if (survey_level > 0) {
    for (const Oracle& o : oracles) {
      std::printf("%-20s %-24s space %6llu  within 95%%: %5lld (%.3f%%)\n", o.device.spec.c_str(),
                  o.workload.shape_string().c_str(), static_cast<unsigned long long>(o.space.size()),
                  static_cast<long long>(o.within_95), 100.0 * o.within_95 / o.space.size());
      if (survey_level < 2) continue;
      // Per knob value: its share of the space and of the good configs.
      for (size_t k = 0; k < o.space.knobs().size(); ++k) {
        std::map<int64_t, std::pair<int64_t, int64_t>> count;  // value -> (all, good)
        for (uint64_t i = 0; i < o.space.size(); ++i) {
          auto& c = count[o.space.at(i)[k]];
          ++c.first;
          c.second += o.good_enough(o.time_ms[i]) ? 1 : 0;
        }
        std::printf("    %-8s", o.space.knobs()[k].name.c_str());
        for (const auto& [v, c] : count)
          std::printf(" %lld:%.0f%%/%.0f%%", static_cast<long long>(v), 100.0 * c.first / o.space.size(),
                      o.within_95 ? 100.0 * c.second / o.within_95 : 0.0);
        std::printf("\n");
      }
    }
    return 0;
  }

  std::printf("Trials to reach 95%% of the optimum (median over %d seeds; batch %zu; cap %lld)\n", seeds, kBatch,
              static_cast<long long>(max_trials));
  for (size_t i = 0; i < strategies.size(); ++i) std::printf("  s%zu = %s\n", i, strategies[i].c_str());
  std::printf("%-20s %-22s %8s %8s", "device", "shape", "space", "good");
  for (size_t i = 0; i < strategies.size(); ++i) std::printf(" %8s", ("s" + std::to_string(i)).c_str());
  std::printf(" %10s\n", "rand/xgb");
  nlohmann::json rows = nlohmann::json::array();
  std::vector<double> ratios;
  std::map<std::string, std::vector<double>> all;
  for (const Oracle& o : oracles) {
    if (transfer_only) break;
    nlohmann::json row{{"device", o.device.spec}, {"shape", o.workload.shape_string()},
                       {"space_size", o.space.size()}, {"configs_within_95", o.within_95}, {"best_ms", o.best_ms}};
    std::printf("%-20s %-22s %8llu %8lld", o.device.spec.c_str(), o.workload.shape_string().c_str(),
                static_cast<unsigned long long>(o.space.size()), static_cast<long long>(o.within_95));
    std::map<std::string, double> med;
    for (const auto& name : strategies) {
      std::vector<double> trials;
      for (int seed = 1; seed <= seeds; ++seed) {
        auto s = make_variant(name, o.space, static_cast<uint64_t>(seed), *o.tmpl, o.workload, o.device.gpu);
        trials.push_back(static_cast<double>(trials_to_95(*s, o, max_trials, kBatch)));
      }
      row[name] = trials;
      row["median_" + name] = med[name] = median(trials);
      all[name].insert(all[name].end(), trials.begin(), trials.end());
      std::printf(" %8.1f", med[name]);
      std::fflush(stdout);
    }
    const double ratio = med["random"] / med["xgb"];
    ratios.push_back(ratio);
    row["random_over_xgb"] = ratio;
    rows.push_back(row);
    std::printf(" %10.2f\n", ratio);
    std::fflush(stdout);
  }
  const double overall_xgb = median(all["xgb"]), overall_random = median(all["random"]);
  std::printf("\nMedian over workloads and seeds:");
  for (const auto& name : strategies) std::printf(" %s %.1f", name.c_str(), median(all[name]));
  std::printf("; random/xgb %.2f (median of per-workload ratios %.2f)\n", overall_random / overall_xgb,
              median(ratios));

  // Transfer: workload B on the A100, cold or with the other workloads' records on the H100.
  // Transfer, leave one out: each workload B on the second GPU, cold, or with the records of the other
  // workloads on the first GPU (the experiment the issue asks for), and on the same GPU.
  const size_t half = oracles.size() / 2;
  nlohmann::json transfer_json = nlohmann::json::object();
  double cut = 0;
  for (int same_gpu = 0; same_gpu <= 1 && devices.size() == 2 && !no_transfer; ++same_gpu) {
    const size_t src0 = same_gpu ? half : 0;
    std::printf("\nTransfer: workload B on %s with %d random records of each other workload on %s "
                "(median trials to 95%% over %d seeds)\n",
                devices[1].c_str(), history, devices[same_gpu ? 1 : 0].c_str(), seeds);
    std::printf("%-22s %8s %8s %8s\n", "B", "cold", "warm", "cut");
    nlohmann::json transfer_rows = nlohmann::json::array();
    std::vector<double> cold_all, warm_all;
    for (size_t b = half; b < oracles.size(); ++b) {
      const Oracle& o = oracles[b];
      std::vector<const Oracle*> sources;
      for (size_t i = src0; i < src0 + half; ++i)
        if (oracles[i].workload.shape_string() != o.workload.shape_string()) sources.push_back(&oracles[i]);
      std::vector<double> cold, warm;
      for (int seed = 1; seed <= seeds; ++seed) {
        auto c = make_variant(transfer_variant, o.space, static_cast<uint64_t>(seed), *o.tmpl, o.workload, o.device.gpu);
        cold.push_back(static_cast<double>(trials_to_95(*c, o, max_trials, kBatch)));
        auto w = make_variant(transfer_variant, o.space, static_cast<uint64_t>(seed), *o.tmpl, o.workload, o.device.gpu);
        add_transfer(*w->transfer_learner(), sources, history, static_cast<uint64_t>(seed));
        w->observe({}, {});
        warm.push_back(static_cast<double>(trials_to_95(*w, o, max_trials, kBatch)));
      }
      cold_all.insert(cold_all.end(), cold.begin(), cold.end());
      warm_all.insert(warm_all.end(), warm.begin(), warm.end());
      const double cut_b = 1.0 - median(warm) / median(cold);
      std::printf("%-22s %8.0f %8.0f %7.0f%%\n", o.workload.shape_string().c_str(), median(cold), median(warm),
                  100 * cut_b);
      std::fflush(stdout);
      transfer_rows.push_back(
          {{"workload", o.workload.shape_string()}, {"cold", cold}, {"warm", warm}, {"cut", cut_b}});
    }
    const double c = 1.0 - median(warm_all) / median(cold_all);
    if (!same_gpu) cut = c;
    std::printf("  over workloads and seeds: cold median %.0f, warm median %.0f trials, cut %.0f%%\n",
                median(cold_all), median(warm_all), 100 * c);
    transfer_json[same_gpu ? "same_gpu" : "cross_gpu"] = {{"device", devices[1]},
                                                          {"history_device", devices[same_gpu ? 1 : 0]},
                                                          {"history_per_workload", history},
                                                          {"workloads", transfer_rows},
                                                          {"median_cold", median(cold_all)},
                                                          {"median_warm", median(warm_all)},
                                                          {"cut", c}};
  }

  nlohmann::json result{{"batch", kBatch},
                        {"seeds", seeds},
                        {"max_trials", max_trials},
                        {"workloads", rows},
                        {"median_xgb", overall_xgb},
                        {"median_xgb5", median(all["xgb5"])},
                        {"median_ga", median(all["ga"])},
                        {"median_bo", median(all["bo"])},
                        {"median_random", overall_random},
                        {"random_over_xgb", overall_random / overall_xgb},
                        {"median_of_ratios", median(ratios)},
                        {"transfer", transfer_json},
                        {"transfer_cut_cross_gpu", cut},
                        {"replay_seeds", replay_seeds},
                        {"replay", run_replay(replay_dir, replay_seeds, replay_batches, max_trials, replay_strategies, compile_cache)}};
  write_results(result, out_path);
  return 0;
}
